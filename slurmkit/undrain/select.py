"""Which drained nodes undrain may touch, decided on Slurm's records alone.

Nodes are chosen by the full text of their drain reason (a regex), never by
name patterns: a name says nothing about why a node was taken out. A chosen
node is still left alone when it runs anything (Slurm's own state says so,
or squeue lists a job on it) or when Slurm does not hear from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from slurmkit.errors import UsageError
from slurmkit.nodechange.leftovers import jobs_by_node
from slurmkit.slurm.records import Job, Node

# Slurm 25.05 added the step to the reason: "Kill task failed (JobId=3 StepId=batch)" (its
# CHANGELOG; seen on the 25.11 sandbox). Earlier versions say "Kill task failed" alone.
DEFAULT_REASON = r"^Kill task failed( \(JobId=\S+ StepId=\S+\))?$"

# Flags under which returning a node is someone else's business: it is being
# powered, rebooted or has failed.
_HANDS_OFF_FLAGS = frozenset(
    {
        "FAIL",
        "POWERED_DOWN",
        "POWERING_DOWN",
        "POWERING_UP",
        "POWER_DOWN",
        "REBOOT_ISSUED",
        "REBOOT_REQUESTED",
    }
)
_BUSY_STATES = frozenset({"ALLOCATED", "MIXED"})


@dataclass(frozen=True)
class MatchedNode:
    """A node whose drain reason matched; ``skip`` says why it must not be touched."""

    node: Node
    skip: str | None = None

    @property
    def name(self) -> str:
        return self.node.name


def compile_reason(text: str) -> re.Pattern[str]:
    """The ``--reason`` regex; a bad one is a usage error naming the fault."""
    if not text:
        raise UsageError("--reason must not be empty")
    try:
        return re.compile(text)
    except re.error as exc:
        raise UsageError(f"--reason {text!r} is not a valid regular expression: {exc}") from exc


def matching(nodes: Iterable[Node], pattern: re.Pattern[str]) -> list[Node]:
    """Drained or down nodes whose full reason text matches ``pattern``."""
    return [
        n
        for n in nodes
        if n.reason is not None and ("DRAIN" in n.flags or n.is_down) and pattern.search(n.reason)
    ]


def state_skip(node: Node) -> str | None:
    """Why Slurm's state alone rules the node out, or None."""
    if node.is_down:
        return "DOWN: slurmctld does not consider it usable"
    if node.is_not_responding:
        return "NOT_RESPONDING: slurmd does not answer"
    if "COMPLETING" in node.flags and node.state not in _BUSY_STATES:
        # Right after "Kill task failed": Slurm still waits for the job's processes.
        return f"{node.state_text}: a job is still completing (its processes have not all exited)"
    if node.is_draining or node.state in _BUSY_STATES:
        return f"{node.state_text}: jobs still running"
    if "DRAIN" not in node.flags:
        return f"{node.state_text}: not drained"
    hands_off = sorted(node.flags & _HANDS_OFF_FLAGS)
    if hands_off:
        return f"{'+'.join(hands_off)}: left to Slurm"
    if node.state != "IDLE":
        return f"{node.state_text}: unexpected base state"
    return None


def select(nodes: Iterable[Node], pattern: re.Pattern[str]) -> list[MatchedNode]:
    """Matching nodes with their state verdict (before asking squeue)."""
    return [MatchedNode(n, state_skip(n)) for n in matching(nodes, pattern)]


def apply_jobs(selected: Sequence[MatchedNode], jobs: Iterable[Job]) -> list[MatchedNode]:
    """Rule out nodes squeue lists jobs on (a job can start between two Slurm calls)."""
    busy = jobs_by_node(jobs, [s.name for s in selected if s.skip is None])
    return [
        MatchedNode(s.node, f"job {', '.join(busy[s.name])} on the node")
        if s.skip is None and s.name in busy
        else s
        for s in selected
    ]
