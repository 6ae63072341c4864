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


def test_failures_are_listed_per_node_after_the_blocks() -> None:
    results = [
        _ok("n1", "up\n"),
        NodeResult("n2", "failed", "up\n", "", 3, 0.1, "exit code 3"),
        NodeResult("n3", "unreachable", "", "ssh: refused\n", None, 0.1, "ssh: refused"),
        NodeResult("n4", "timeout", "", "", None, 2.0, "no answer within 2 s"),
        NodeResult("n5", "unreachable", "", "", None, 0.1, "ssh: refused"),
    ]
    lines = format_grouped(results).splitlines()
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
