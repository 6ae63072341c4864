"""The dshbak -c style report of ``slurmkit run``."""

from __future__ import annotations

from slurmkit.remote.grouping import format_grouped, group
from slurmkit.remote.result import NodeResult


def _ok(node: str, out: str) -> NodeResult:
    return NodeResult(node, "ok", out, "", 0, 0.1)


def test_identical_output_is_shown_once_under_a_folded_list() -> None:
    results = [_ok(f"n{i}", "same\n") for i in (3, 1, 2, 10)] + [_ok("n4", "odd\n")]
    text = format_grouped(results)
    assert text.splitlines() == [
        "-" * 16,
        "n[1-3,10]",
        "-" * 16,
        "same",
        "-" * 16,
        "n4",
        "-" * 16,
        "odd",
    ]


def _failures() -> list[NodeResult]:
    return [
        _ok("n1", "up\n"),
        NodeResult("n2", "failed", "up\n", "", 3, 0.1, "exit code 3"),
        NodeResult("n3", "unreachable", "", "ssh: refused\n", None, 0.1, "ssh: refused"),
        NodeResult("n4", "timeout", "", "", None, 2.0, "no answer within 2 s"),
        NodeResult("n5", "unreachable", "", "", None, 0.1, "ssh: refused"),
    ]


def test_failures_are_listed_per_node_after_the_blocks_with_per_node() -> None:
    results = _failures()
    lines = format_grouped(results, per_node=True).splitlines()
    assert "n2 (exit 3)" in lines  # same output, different outcome: its own block
    assert lines[-3:] == [
        "n3: unreachable: ssh: refused",
        "n4: timeout: no answer within 2 s",
        "n5: unreachable: ssh: refused",
    ]
    assert "n2: failed: exit code 3" in lines
    assert "ssh: refused" not in lines  # unreachable nodes' stderr is not an output block


def test_stderr_is_kept_apart_and_silent_nodes_print_nothing() -> None:
    results = [NodeResult("n1", "ok", "", "warn\n", 0, 0.1), _ok("n2", "")]
    assert [g.nodes for g in group(results)] == [("n1",)]
    assert format_grouped(results).splitlines()[3:] == ["[stderr]", "warn"]
    assert format_grouped([_ok("n2", "")]) == ""


def test_nodes_that_failed_the_same_way_share_one_line() -> None:
    results = _failures()
    lines = format_grouped(results).splitlines()
    assert lines[-3:] == [
        "n2: failed: exit code 3",  # a group of one keeps its per-node line
        "n[3,5] (2 nodes): unreachable: ssh: refused",
        "n4: timeout: no answer within 2 s",
    ]


def test_the_node_s_own_name_in_an_error_does_not_split_its_group() -> None:
    def refused(node: str) -> NodeResult:
        error = f"ssh: connect to host {node} port 22: Connection refused"
        return NodeResult(node, "unreachable", "", "", None, 0.1, error)

    results = [refused(f"node-{i}") for i in range(1, 5001)]
    results.append(NodeResult("n1", "unreachable", "", "", None, 0.1, "no route to n10"))
    lines = format_grouped(results).splitlines()
    assert lines == [
        "node-[1-5000] (5000 nodes): unreachable: ssh: connect to host <node> port 22: "
        "Connection refused",
        "n1: unreachable: no route to n10",  # n1 inside n10 is not its name
    ]
    assert len(format_grouped(results, per_node=True).splitlines()) == 5001
