"""Drained, draining and down nodes with their reasons: the ``sinfo -R`` view, parsed.

One Slurm call (``sinfo -R``), which already groups nodes per reason, user,
time and state; ``--reason`` filters on the full reason text.
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmkit.hostlist import count
from slurmkit.slurm import query
from slurmkit.slurm.records import DrainReason


@dataclass(frozen=True)
class ReasonGroup:
    """One row of the report: nodes sharing reason, author, time and state."""

    reason: str
    user: str | None
    time: str | None
    state: str
    nodes: str
    count: int


def drained(reason: str | None = None) -> list[ReasonGroup]:
    """Every reason row, or those whose reason matches the regex ``reason``."""
    from slurmkit.undrain.select import compile_reason

    pattern = compile_reason(reason) if reason is not None else None
    rows = query.drain_reasons()
    return [_group(r) for r in rows if pattern is None or pattern.search(r.reason)]


def _group(row: DrainReason) -> ReasonGroup:
    return ReasonGroup(
        reason=row.reason,
        user=row.user,
        time=row.time.isoformat(timespec="seconds") if row.time else None,
        state=row.state,
        nodes=row.nodelist,
        count=count(row.nodelist) if row.nodelist else 0,
    )
