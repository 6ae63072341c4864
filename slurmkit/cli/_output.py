"""How commands show results: tables for people, JSON for scripts.

tabulate is imported inside the functions so that commands which print plain
lines (``nodes expand``) do not pay for it at start-up.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import click


def _default(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=_default, sort_keys=False))


def print_table(rows: Iterable[Sequence[Any]], headers: Sequence[str]) -> None:
    from tabulate import tabulate

    click.echo(tabulate(list(rows), headers=list(headers), tablefmt="simple"))


def progress(message: str) -> None:
    """Progress for slow work goes to stderr, and only when a person is watching."""
    if sys.stderr.isatty():
        click.echo(message, err=True)
