"""How commands show results: tables for people, JSON for scripts.

tabulate is imported inside the functions so that commands which print plain
lines (``nodes expand``) do not pay for it at start-up.
"""

from __future__ import annotations

import dataclasses
import json
import re
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
    rows = list(rows)
    text = simple_table(rows, headers)
    if text is None:
        from tabulate import tabulate

        text = tabulate(rows, headers=list(headers), tablefmt="simple")
    click.echo(text)


# Printable ASCII, no blank at either end: a cell tabulate shows exactly as it is.
_PLAIN = re.compile(r"[!-~](?:[ -~]*[!-~])?")


def _text_cell(cell: str) -> bool:
    """A cell tabulate takes for text (left-aligned, unchanged), not a number or a bool."""
    if not _PLAIN.fullmatch(cell) or cell in ("True", "False"):
        return False
    try:
        float(cell.replace(",", ""))  # "12", "1e5", "inf", "1,000": tabulate's numbers
    except ValueError:
        return True
    return False


def simple_table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str | None:
    """tabulate's ``simple`` table, for tables of plain text and ints, without tabulate.

    Importing tabulate loads ``importlib.metadata`` (20 ms): a fifth of ``nodes
    drained`` at 10,000 nodes. Node tables hold ints and plain text, which this lays
    out exactly as tabulate would (text left, ints right, each column as wide as its
    header plus 2 or its widest cell; ``tests/unit/test_simple_table.py`` compares
    both on random tables); for anything else (floats, numbers written as text,
    non-ASCII or multi-line text, None) it returns None and tabulate is used.
    """
    if not rows or not all(isinstance(h, str) and _PLAIN.fullmatch(h) for h in headers):
        return None
    width = len(headers)
    ints, texts = [False] * width, [False] * width
    table: list[list[str]] = []
    for row in rows:
        if len(row) != width:
            return None
        cells = []
        for column, cell in enumerate(row):
            if type(cell) is int:
                ints[column] = True
                cells.append(str(cell))
            elif type(cell) is str and (cell == "" or _text_cell(cell)):
                texts[column] = texts[column] or cell != ""
                cells.append(cell)
            else:
                return None
        table.append(cells)
    right = [i and not t for i, t in zip(ints, texts, strict=True)]
    widths = [max(len(h) + 2, *(len(r[c]) for r in table)) for c, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(w) if r else cell.ljust(w)
            for cell, w, r in zip(cells, widths, right, strict=True)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in table)])


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
