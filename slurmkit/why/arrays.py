"""One verdict for a whole array: tasks grouped by state and cause, never a line per task.

An array of 10,000 tasks is read with one sacct of the array id, allocations only; each
task's current attempt is classified (state, and the allocation's exit code or signal for
a failure), tasks alike are counted together with their ids folded into ranges, and the
memory and CPU shares are given as the spread over the tasks that ran, or over an evenly
spaced sample of them whose steps were read (``usage``).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from slurmkit import hostlist
from slurmkit.errors import SlurmParseError
from slurmkit.grammar import idrange
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


def size(task: str) -> int:
    """How many tasks an id stands for: 1, or a pending remainder's range
    (sacct prints the tasks not yet started as one line, ``4_[2709-9999%64]``)."""
    if not task.startswith("["):
        return 1
    try:
        return idrange.parse_array(task).count()
    except SlurmParseError:
        return 1


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    values.sort()
    return f"{values[0]:.0%} / {statistics.median(values):.0%} / {values[-1]:.0%}"


def _shares(usage: Mapping[str, Sequence[Attempt]]) -> tuple[list[float], list[float]]:
    """The CPU and memory shares of the tasks in ``usage`` (their current attempts)."""
    cpu: list[float] = []
    mem: list[float] = []
    for history in usage.values():
        eff = efficiency.of_attempt(history[-1].allocation, history[-1].steps)
        if eff.cpu_share is not None:
            cpu.append(eff.cpu_share)
        if eff.memory_share is not None:
            mem.append(eff.memory_share)
    return cpu, mem


def _over(usage: Mapping[str, Sequence[Attempt]], tasks: Mapping[str, Sequence[Attempt]]) -> str:
    ran = sum(h[-1].allocation.started for h in tasks.values())
    return "tasks" if len(usage) >= ran else f"{len(usage)} of the {ran} tasks that ran"


def summary(
    array_id: str,
    tasks: Mapping[str, Sequence[Attempt]],
    notes: Sequence[str] = (),
    usage: Mapping[str, Sequence[Attempt]] | None = None,
) -> Verdict:
    """The array's verdict from ``task key -> attempts`` (every task of the array);
    ``usage``: the tasks whose steps were read, for the efficiency (default ``tasks``)."""
    groups: dict[str, list[str]] = {}
    requeued = 0
    for key, history in tasks.items():
        task = key.rpartition("_")[2]
        groups.setdefault(cause(history), []).append(task)
        requeued += len(history) > 1
    usage = tasks if usage is None else usage
    cpu, mem = _shares(usage)
    sizes = {name: sum(size(task) for task in ids) for name, ids in groups.items()}
    ordered = sorted(groups.items(), key=lambda item: (-sizes[item[0]], item[0]))
    counts = ", ".join(f"{sizes[name]} {name.split(' ', 1)[0]}" for name, _ in ordered)
    headline = f"array {array_id}: {sum(sizes.values())} tasks: {counts}"
    evidence = [
        Evidence("tasks", f"{sizes[name]} {name}: {fold_ids(ids)}", "sacct")
        for name, ids in ordered
    ]
    over = _over(usage, tasks)
    evidence.append(Evidence("efficiency", f"CPU min / median / max over {over}: {_spread(cpu)}"))
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
            "tasks": sum(sizes.values()),
            "groups": {name: fold_ids(ids) for name, ids in ordered},
            "counts": {name: sizes[name] for name, _ in ordered},
        },
    )
