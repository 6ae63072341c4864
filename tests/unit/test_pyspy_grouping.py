"""Identical stacks grouped; the smallest groups of ranks marked as outliers."""

from __future__ import annotations

from test_pyspy_samples import DUMP, NATIVE_DUMP

from slurmkit.pyspy.grouping import group_stacks
from slurmkit.pyspy.records import ProcessStack
from slurmkit.pyspy.stack import parse_dump


def _stack(node: str, pid: int, *functions: str, role: str = "rank", line: int = 1) -> ProcessStack:
    frames = "".join(f"    {f} (train.py:{line + i})\n" for i, f in enumerate(functions))
    text = f'Process {pid}: python train.py\n\nThread {pid} (idle): "MainThread"\n{frames}'
    return ProcessStack(node, pid, role, "ok", text=text, dump=parse_dump(text))


def _summary(groups) -> list[tuple[str, int, str, bool]]:
    return [(g.role, g.count, g.folded_nodes, g.outlier) for g in groups]


def test_the_rank_stuck_elsewhere_is_the_outlier() -> None:
    procs = [
        _stack("node-1", 10, "allreduce", "train"),
        _stack("node-2", 20, "wait_for_peer", "train"),
        _stack("node-3", 30, "allreduce", "train"),
    ]
    groups = group_stacks(procs)
    assert _summary(groups) == [("rank", 2, "node-[1,3]", False), ("rank", 1, "node-2", True)]
    assert groups[1].frames[0].function == "wait_for_peer"
    assert [m.pid for m in groups[0].members] == [10, 30]


def test_every_smallest_group_is_marked_and_only_those() -> None:
    procs = [_stack(f"n{i}", i, "allreduce") for i in range(5)]
    procs += [_stack("n5", 5, "barrier"), _stack("n6", 6, "barrier")]
    procs += [_stack("n7", 7, "save"), _stack("n8", 8, "load")]
    groups = group_stacks(procs)
    assert [(g.count, g.outlier) for g in groups] == [(5, False), (2, False), (1, True), (1, True)]


def test_groups_of_equal_size_have_no_outlier() -> None:
    procs = [_stack("n1", 1, "a"), _stack("n2", 2, "a"), _stack("n3", 3, "b"), _stack("n4", 4, "b")]
    assert [g.outlier for g in group_stacks(procs)] == [False, False]
    assert [g.outlier for g in group_stacks(procs[:1])] == [False]


def test_the_line_number_counts() -> None:
    groups = group_stacks([_stack("n1", 1, "loop", line=5), _stack("n2", 2, "loop", line=6)])
    assert len(groups) == 2


def test_native_addresses_do_not_split_groups() -> None:
    other = NATIVE_DUMP.replace("0x7f2d3ce4524a", "0x7f9f4424524a").replace("14340", "5555")
    procs = [
        ProcessStack("n1", 14340, "rank", "ok", text=NATIVE_DUMP, dump=parse_dump(NATIVE_DUMP)),
        ProcessStack("n2", 5555, "rank", "ok", text=other, dump=parse_dump(other)),
    ]
    (group,) = group_stacks(procs)
    assert group.count == 2


def test_helper_threads_do_not_split_groups() -> None:
    """Only the main thread's stack is compared: a spinner at another line changes nothing."""
    other = DUMP.replace("busy (prog.py:10)", "busy (prog.py:9)")
    procs = [
        ProcessStack("n1", 1, "rank", "ok", text=DUMP, dump=parse_dump(DUMP)),
        ProcessStack("n2", 2, "rank", "ok", text=other, dump=parse_dump(other)),
    ]
    assert [g.count for g in group_stacks(procs)] == [2]


def test_launchers_and_children_are_never_outliers() -> None:
    procs = [_stack(f"node-{n}", n * 10 + r, "allreduce") for n in (1, 2) for r in range(4)]
    procs += [_stack(f"node-{n}", n * 100, "_monitor_workers", role="launcher") for n in (1, 2)]
    procs += [_stack("node-1", 999, "_worker_loop", role="child")]
    groups = group_stacks(procs)
    assert _summary(groups) == [
        ("rank", 8, "node-[1-2]", False),
        ("child", 1, "node-1", False),
        ("launcher", 2, "node-[1-2]", False),
    ]


def test_failed_processes_are_not_grouped() -> None:
    failed = ProcessStack("n1", 1, "rank", "ptrace_denied", error="Permission Denied")
    assert group_stacks([failed]) == []
