"""Which nodes undrain selects and which it must leave alone, on recorded Slurm node records."""

from __future__ import annotations

import pytest
from fixtures_path import VERSIONS, read

from slurmkit.errors import UsageError
from slurmkit.slurm.parse_records import parse_scontrol_nodes
from slurmkit.slurm.records import Job, Node
from slurmkit.undrain import select as sel


def _nodes(version: str, scenario: str) -> list[Node]:
    return parse_scontrol_nodes(read(version, scenario, "scontrol_show_node_oneliner.txt"))


def _node(name: str, state: str, reason: str | None = "Kill task failed") -> Node:
    from slurmkit.slurm.records import node_state

    base, fl = node_state([state])
    return Node(name=name, state=base, flags=fl, reason=reason)


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_kill_task_failed_node_is_selected_and_free(version: str) -> None:
    """02: node-2 IDLE+DRAIN "Kill task failed", node-4 drained for ECC, node-3 down."""
    pattern = sel.compile_reason(sel.DEFAULT_REASON)
    selected = sel.select(_nodes(version, "02_nodes_degraded"), pattern)
    assert [(s.name, s.skip) for s in selected] == [("node-2", None)]


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_draining_node_is_not_touched(version: str) -> None:
    """04: node-2 is MIXED+DRAIN: its jobs still run."""
    selected = sel.select(_nodes(version, "04_jobs_nodes_degraded"), sel.compile_reason("Kill"))
    assert [s.name for s in selected] == ["node-2"]
    assert selected[0].skip and "jobs still running" in selected[0].skip


@pytest.mark.parametrize("version", VERSIONS)
def test_reason_regex_is_matched_on_the_full_text(version: str) -> None:
    nodes = _nodes(version, "02_nodes_degraded")
    assert [n.name for n in sel.matching(nodes, sel.compile_reason("ECC"))] == ["node-4"]
    # the down node matches too, and is then ruled out by its state
    down = sel.select(nodes, sel.compile_reason("^Not responding$"))
    assert [(s.name, s.skip is not None) for s in down] == [("node-3", True)]
    assert "DOWN" in (down[0].skip or "")
    # names are never matched: "node" is in every node name, in no reason
    assert sel.matching(nodes, sel.compile_reason("node")) == []


def test_default_reason_is_anchored() -> None:
    pattern = sel.compile_reason(sel.DEFAULT_REASON)
    nodes = [
        _node("a", "IDLE+DRAIN", "Kill task failed"),
        _node("b", "IDLE+DRAIN", "Kill task failed; GPU fell off the bus"),
        _node("c", "IDLE+DRAIN", "not Kill task failed"),
        # Slurm 25.05+ names the step (seen live on the 25.11 sandbox)
        _node("d", "IDLE+DRAIN", "Kill task failed (JobId=3 StepId=batch)"),
        _node("e", "IDLE+DRAIN", "Kill task failed (JobId=7 StepId=0)"),
        _node("f", "IDLE+DRAIN", "Kill task failed (JobId=7 StepId=0); bad DIMM"),
        _node("g", "IDLE+DRAIN", "Kill task failed Comment=see ticket"),
    ]
    assert [n.name for n in sel.matching(nodes, pattern)] == ["a", "d", "e"]


@pytest.mark.parametrize(
    ("state", "why"),
    [
        ("IDLE+DRAIN", None),
        ("DOWN+DRAIN", "DOWN"),
        ("IDLE+DRAIN+NOT_RESPONDING", "NOT_RESPONDING"),
        ("MIXED+DRAIN", "jobs still running"),
        ("ALLOCATED+DRAIN", "jobs still running"),
        ("IDLE+DRAIN+COMPLETING", "a job is still completing"),
        ("MIXED+DRAIN+COMPLETING", "jobs still running"),
        ("IDLE+DRAIN+REBOOT_REQUESTED", "REBOOT_REQUESTED"),
        ("IDLE+DRAIN+POWERED_DOWN", "POWERED_DOWN"),
        ("IDLE+DRAIN+FAIL", "FAIL"),
    ],
)
def test_state_rules(state: str, why: str | None) -> None:
    skip = sel.state_skip(_node("n1", state))
    assert (skip is None) if why is None else (skip is not None and why in skip)


def test_a_job_on_the_node_rules_it_out() -> None:
    selected = sel.select(
        [_node(f"n{i}", "IDLE+DRAIN") for i in (1, 2, 3)], sel.compile_reason("Kill")
    )
    jobs = [
        Job(job_id="7", state="RUNNING", nodelist="n[2-4]"),
        Job(job_id="8", state="PENDING", nodelist=""),
        Job(job_id="9", state="COMPLETING", nodelist="n3"),
    ]
    after = {s.name: s.skip for s in sel.apply_jobs(selected, jobs)}
    assert after["n1"] is None
    assert after["n2"] == "job 7 on the node"
    assert after["n3"] == "job 7, 9 on the node"


def test_bad_regex_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not a valid regular expression"):
        sel.compile_reason("Kill (task")
    with pytest.raises(UsageError, match="empty"):
        sel.compile_reason("")
