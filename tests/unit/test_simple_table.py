"""The table printer's own layout is tabulate's ``simple`` one, cell for cell.

``slurmkit.cli._output.simple_table`` lays out tables of plain text and ints without
importing tabulate (20 ms of imports); on anything else it declines (None) and tabulate
prints. Random tables with numbers written as text, bools, empty cells, blanks at the
ends, non-ASCII text and several lines must come out identical or be declined.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tabulate import tabulate

from slurmkit.cli._output import simple_table

_SAMPLES = ["", "node-1", "vnode-[1-5000]", "DOWN+DRAIN", "would return", "-", "12", "1e5"]
_SAMPLES += ["inf", "True", "1,000", " x", "x ", "é", "a\nb", "2026-11-26T01:14", "0x1f", "1_0"]
_TEXT = st.one_of(st.sampled_from(_SAMPLES), st.text(alphabet="ab -1.,e", max_size=6))
_HEADERS = st.sampled_from(["node", "count", "state", "a b", "NODES", " x", ""])
_CELL = st.one_of(_TEXT, st.integers(-(10**6), 10**9), st.none(), st.floats(0, 10), st.booleans())


@settings(max_examples=600, deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(_HEADERS, min_size=n, max_size=n),
    st.lists(st.lists(_CELL, min_size=n, max_size=n), max_size=6),
)))  # fmt: skip
def test_same_as_tabulate_or_declined(table: tuple[list[str], list[list[object]]]) -> None:
    headers, rows = table
    ours = simple_table(rows, headers)
    if ours is not None:
        assert ours == tabulate(rows, headers=headers, tablefmt="simple")


def test_node_tables_take_the_fast_path_and_match() -> None:
    headers = ["nodes", "count", "old state (reason)", "found", "action", "new state"]
    rows = [
        ["vnode-[1-5000]", 5000, "DOWN+DRAIN (Kill task failed)", "-", "skipped: DOWN", "DOWN"],
        ["node-3", 1, "IDLE+DRAIN (Kill task failed)", "clean", "would return", ""],
    ]
    ours = simple_table(rows, headers)
    assert ours is not None and ours == tabulate(rows, headers=headers, tablefmt="simple")
    drained = [["node-[2,7-9]", 4, "Kill task failed", "root", "", "drained"]]
    heads = ["nodes", "count", "reason", "user", "time", "state"]
    assert simple_table(drained, heads) == tabulate(drained, headers=heads, tablefmt="simple")


def test_numbers_written_as_text_are_left_to_tabulate() -> None:
    assert simple_table([["n1", "12"]], ["node", "jobs"]) is None
    assert simple_table([["n1", 1.5]], ["node", "load"]) is None
    assert simple_table([], ["node"]) is None  # tabulate's empty table
