"""One verdict for a whole array: tasks grouped by state and cause, never a line per task.

An array of 10,000 tasks is read with the one sacct of the array id; each task's current
attempt is classified (state, and the exit code or signal for a failure), tasks alike are
counted together with their ids folded into ranges, and the memory and CPU shares are
given as the spread over the tasks that ran.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from slurmkit import hostlist
from slurmkit.why import efficiency
from slurmkit.why.ended import BAD_STATES, Attempt, exit_text, failing_step
from slurmkit.why.model import Evidence, Verdict

SHOWN_IDS = 200  # characters of folded task ids per group before "..."


def fold_ids(ids: Sequence[str]) -> str:
    """``1,2,3,5`` -> ``1-3,5``; non-numeric ids are listed as they are.

    The numbers are folded by the one hostlist engine (a bare number is a name without a
    prefix), its brackets dropped.
    """
    numbers = {str(int(i)) for i in ids if i.isdigit()}
    folded = hostlist.fold(numbers, limit=None).strip("[]") if numbers else ""
    text = ",".join([p for p in [folded] if p] + sorted(i for i in ids if not i.isdigit()))
    return text if len(text) <= SHOWN_IDS else text[:SHOWN_IDS].rsplit(",", 1)[0] + ",..."


def cause(history: Sequence[Attempt]) -> str:
    """A task's class: its state, and for a failure the failing step's exit in words."""
    current = history[-1]
    state = current.allocation.state
    if state in ("FAILED", "OUT_OF_MEMORY"):
        step = failing_step(current)
        source = step or current.allocation
        return f"{state} ({exit_text(source.exit_code, source.exit_signal)})"
    return state


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    values.sort()
    return f"{values[0]:.0%} / {statistics.median(values):.0%} / {values[-1]:.0%}"


def summary(
    array_id: str, tasks: Mapping[str, Sequence[Attempt]], notes: Sequence[str] = ()
) -> Verdict:
    """The array's verdict from ``task key -> attempts`` (every task of the array)."""
    groups: dict[str, list[str]] = {}
    cpu: list[float] = []
    mem: list[float] = []
    requeued = 0
    for key, history in tasks.items():
        task = key.rpartition("_")[2]
        groups.setdefault(cause(history), []).append(task)
        requeued += len(history) > 1
        eff = efficiency.of_attempt(history[-1].allocation, history[-1].steps)
        if eff.cpu_share is not None:
            cpu.append(eff.cpu_share)
        if eff.memory_share is not None:
            mem.append(eff.memory_share)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    counts = ", ".join(f"{len(ids)} {name.split(' ', 1)[0]}" for name, ids in ordered)
    headline = f"array {array_id}: {len(tasks)} tasks: {counts}"
    evidence = [
        Evidence("tasks", f"{len(ids)} {name}: {fold_ids(ids)}", "sacct") for name, ids in ordered
    ]
    evidence.append(Evidence("efficiency", f"CPU min / median / max over tasks: {_spread(cpu)}"))
    evidence.append(Evidence("efficiency", f"memory min / median / max: {_spread(mem)}"))
    if requeued:
        evidence.append(Evidence("requeued", f"{requeued} tasks started more than once"))
    bad = any(name.split(" ", 1)[0] in BAD_STATES for name in groups)
    return Verdict(
        job_id=array_id,
        kind="ended",
        headline=headline,
        severity="bad" if bad else "ok",
        evidence=tuple(evidence),
        advice=(f"slurmkit why {array_id}_N for one task's evidence",),
        notes=tuple(notes),
        data={
            "tasks": len(tasks),
            "groups": {name: fold_ids(ids) for name, ids in ordered},
            "counts": {name: len(ids) for name, ids in ordered},
        },
    )
