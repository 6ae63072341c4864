"""The one-pass reader of ``scontrol show node`` records gives what the line-by-line one gives.

The fast path exists for 10,000-node clusters (issue 20); it must never read a record
differently: on every recorded block, and on random blocks mixing fields, reasons
with key words, deeper and bare lines, it returns the same fields in the same order,
or declines (None) and the line-by-line reader answers.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from slurmkit.slurm.parse_records import (
    _merge_node_lines,
    _merge_node_lines_by_line,
    _merge_plain_node_lines,
    _node_blocks,
)

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _recorded_blocks() -> list[list[str]]:
    blocks = []
    for path in sorted(FIXTURES.glob("slurm-*/*/scontrol_show_node*.txt")):
        if "json" not in path.name and "stderr" not in path.name:
            blocks += list(_node_blocks(path.read_text()))
    return blocks


def test_recorded_blocks_read_the_same_and_mostly_in_one_pass() -> None:
    blocks = _recorded_blocks()
    assert len(blocks) >= 20
    fast = [_merge_plain_node_lines(b) for b in blocks]
    for block, got in zip(blocks, fast, strict=True):
        slow = _merge_node_lines_by_line(block)
        assert got is None or list(got.items()) == list(slow.items()), block
    multi_line = [f for b, f in zip(blocks, fast, strict=True) if len(b) > 1]
    assert multi_line and all(f is not None for f in multi_line)  # scontrol's own shape


def test_a_reason_with_key_words_and_later_lines_is_read_whole() -> None:
    block = [
        "NodeName=n1 Arch=x86_64 CoresPerSocket=2 ",
        "   State=IDLE+DRAIN ThreadsPerCore=2",
        "   Reason=Kill task failed Comment=see ticket [root@2026-11-21T00:03:40]",
        "          second line Extra=x",
        "   Comment=real ExtSensorsJoules=n/s",
    ]
    got = _merge_plain_node_lines(block)
    assert got is not None and got == _merge_node_lines_by_line(block)
    assert got["Reason"] == (
        "Kill task failed Comment=see ticket [root@2026-11-21T00:03:40]\nsecond line Extra=x"
    )
    assert got["Comment"] == "real"


def test_unusual_shapes_are_left_to_the_line_reader() -> None:
    oneliner = ["NodeName=n1 State=DOWN Reason=broken Comment=x [root@2026-11-21T00:03:40]"]
    bare = ["NodeName=n1 Arch=x86_64", "   OS=Linux 6.1", "   #1 SMP", "   State=IDLE"]
    for block in (oneliner, bare):
        assert _merge_plain_node_lines(block) is None
        assert _merge_node_lines(block) == _merge_node_lines_by_line(block)


_WORDS = st.sampled_from(
    ["Reason=", "Comment=", "Extra=", "State=", "A=", "b=c", "x", "#1", "=", "[r@t]", "", "  "]
)
_LINE = st.builds(
    lambda indent, words: " " * indent + " ".join(words),
    st.sampled_from([0, 3, 3, 3, 4, 10]),
    st.lists(_WORDS, max_size=5),
)


@settings(max_examples=400, deadline=None)
@given(st.builds(lambda first, rest: [f"NodeName=n1 {first}", *rest], _WORDS, st.lists(_LINE)))
def test_random_blocks_read_the_same(block: list[str]) -> None:
    got = _merge_plain_node_lines(block)
    if got is not None:
        assert list(got.items()) == list(_merge_node_lines_by_line(block).items())
