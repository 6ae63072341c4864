"""How commands show results: tables for people, JSON for scripts.

tabulate is imported inside the functions so that commands which print plain
lines (``nodes expand``) do not pay for it at start-up.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

import click

from slurmkit import stderr


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
    stderr.progress(message)


_PER_NODE = "slurmkit.per_node"


def print_nodes_table(
    rows: Iterable[Sequence[Any]],
    headers: Sequence[str],
    *,
    per_node: bool | None = None,
    node_column: int = 0,
) -> None:
    """A report that lists nodes: one line per group of alike nodes, or per node with ``-v``.

    The default folds rows that agree on everything but the node into one (a
    hostlist and a count, :func:`slurmkit.grouping.grouped_table`), so 5,000 nodes
    skipped for one cause are one line; ``per_node`` prints a row per node (a row
    whose node cell is a hostlist becomes one row for each of its nodes). None
    means what the command's ``-v`` (:func:`per_node_option`) said.
    """
    from slurmkit.grouping import grouped_table, per_node_table

    if per_node is None:
        per_node = per_node_wanted()
    if per_node:
        print_table(per_node_table(rows, node_column), headers)
        return
    print_table(*grouped_table(rows, headers, node_column))


def per_node_wanted() -> bool:
    """Whether the running command was given ``-v`` (:func:`per_node_option`)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.meta.get(_PER_NODE))


def _remember_per_node(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta[_PER_NODE] = True
    return value


def per_node_option(command: Any) -> Any:
    """``-v/--verbose``: the per-node table instead of the grouped one (JSON is per node always).

    Not passed to the command: :func:`print_nodes_table` reads it from the click
    context, so adding it changes no command's signature.
    """
    return click.option(
        "-v",
        "--verbose",
        is_flag=True,
        expose_value=False,
        callback=_remember_per_node,
        help="One line per node (the default folds alike nodes into one line with a count).",
    )(command)
