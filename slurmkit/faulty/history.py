"""Which nodes keep failing jobs: FAILED and NODE_FAIL jobs per node, from one sacct call.

A job counts for every node it ran on (sacct cannot say which node failed it), so a
big failing job adds one to each of its nodes; repeat offenders still stand out, and
NODE_FAIL (the node itself died) weighs first. The share of failed jobs among all the
jobs a node ran tells a busy node from a bad one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from slurmkit.errors import HostlistParseError, UsageError
from slurmkit.grammar.duration import parse_duration
from slurmkit.hostlist import expand, fold
from slurmkit.slurm import query
from slurmkit.slurm.records import Job

SCAN_JOB_PREFIX = "slurmkit-faulty-"
FAILED = "FAILED"
NODE_FAIL = "NODE_FAIL"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?)?")


@dataclass
class NodeHistory:
    node: str
    node_fail: int = 0
    failed: int = 0
    jobs: int = 0
    last_failure: datetime | None = None
    failed_jobs: list[str] = field(default_factory=list)

    @property
    def failures(self) -> int:
        return self.node_fail + self.failed

    @property
    def rate(self) -> float:
        return self.failures / self.jobs if self.jobs else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "node_fail": self.node_fail,
            "failed": self.failed,
            "jobs": self.jobs,
            "failure_rate": round(self.rate, 4),
            "last_failure": self.last_failure.isoformat() if self.last_failure else None,
            "failed_jobs": self.failed_jobs,
        }


@dataclass(frozen=True)
class HistoryReport:
    start: datetime
    jobs: int
    nodes: list[NodeHistory]

    def to_json(self) -> dict[str, object]:
        return {
            "since": self.start.isoformat(timespec="seconds"),
            "jobs": self.jobs,
            "nodes": [n.to_json() for n in self.nodes],
        }


def since(text: str, now: datetime | None = None) -> datetime:
    """``7d``, ``12h``, ``90m``, ``2w`` ago, or a date/time ``2026-11-01[THH:MM[:SS]]``."""
    now = now or datetime.now().astimezone()
    text = text.strip()
    if _DATE.fullmatch(text):
        moment = datetime.fromisoformat(text)
        return moment if moment.tzinfo else moment.astimezone()
    if text.isdigit():  # a bare number: the grammar's one message, as for every duration option
        parse_duration(text, "--since")
    try:
        seconds = min(parse_duration(text, "--since"), 100 * 365 * 86400)  # timedelta bound
    except UsageError:
        raise UsageError(
            f"--since {text!r}: expected a duration (7d, 12h, 30m) or a date (2026-11-01)"
        ) from None
    return now - timedelta(seconds=seconds)


def rank(jobs: Iterable[Job], top: int | None = None) -> list[NodeHistory]:
    """Nodes with at least one FAILED or NODE_FAIL job, worst first.

    slurmkit's own scan jobs are left out: a scan that found one bad node ends FAILED
    and would otherwise count against every node it checked.
    """
    nodes: dict[str, NodeHistory] = {}
    for job in jobs:
        if job.name.startswith(SCAN_JOB_PREFIX):
            continue
        for name in _nodes_of(job):
            entry = nodes.setdefault(name, NodeHistory(name))
            entry.jobs += 1
            if job.state not in (FAILED, NODE_FAIL):
                continue
            if job.state == NODE_FAIL:
                entry.node_fail += 1
            else:
                entry.failed += 1
            entry.failed_jobs.append(job.display_id)
            when = job.end_time or job.start_time
            if when and (entry.last_failure is None or when > entry.last_failure):
                entry.last_failure = when
    failing = [n for n in nodes.values() if n.failures]
    order = {name: i for i, name in enumerate(expand(fold([n.node for n in failing])))}
    ranked = sorted(failing, key=lambda n: (-n.failures, -n.node_fail, -n.rate, order[n.node]))
    return ranked[:top] if top else ranked


def history(start: datetime, top: int | None) -> HistoryReport:
    jobs = query.sacct_jobs(start=start)
    return HistoryReport(start=start, jobs=len(jobs), nodes=rank(jobs, top))


def _nodes_of(job: Job) -> list[str]:
    text = job.nodelist.strip()
    if not text or text.lower() in ("none assigned", "(null)", "none"):
        return []
    try:
        return expand(text)
    except HostlistParseError:
        return []
