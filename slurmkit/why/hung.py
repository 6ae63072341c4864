"""Is a running job hung, and which node to suspect?

A job whose output has stopped growing may be computing quietly or may be stuck in
a collective waiting for one rank. The ranks' Python stacks tell: in a hang most
ranks wait in the same call and the culprit is elsewhere. The stacks come from
:mod:`slurmkit.pyspy` (its library: one step on all nodes, grouped, the odd groups
marked); the odd ranks' nodes are then read in one ``scontrol show node`` and the
verdict names the node to suspect. A py-spy that is missing, a step that cannot
start, a node that does not answer: each is a note, never a traceback.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from slurmkit import pyspy
from slurmkit.errors import SlurmError, SlurmkitError
from slurmkit.hostlist import fold
from slurmkit.pyspy.grouping import StackGroup
from slurmkit.slurm import query
from slurmkit.slurm.records import Job, Node
from slurmkit.why.model import Evidence, Kind, Severity, Verdict

DEFAULT_STALE = 600.0
MAX_FRAMES = 3
Collector = Callable[[str, Job, pyspy.Settings], pyspy.Collection]


@dataclass(frozen=True)
class Options:
    """``stale``: seconds without output growth that make a job suspect (``--stale``);
    ``stacks``: dump the stacks whatever the output says (``--stacks``)."""

    stale: float = DEFAULT_STALE
    stacks: bool = False
    settings: pyspy.Settings = field(default_factory=pyspy.Settings)


def output_age(job: Job, now: float | None = None) -> float | None:
    """Seconds since the job's stdout (or stderr) last grew; None when it cannot be seen."""
    now = time.time() if now is None else now
    ages = []
    for path in (job.std_out, job.std_err):
        if not path or path == "/dev/null":
            continue
        try:
            ages.append(now - os.stat(path).st_mtime)
        except OSError:
            continue
    return min(ages) if ages else None


def explain(
    job: Job, options: Options | None = None, *, collect: Collector | None = None
) -> Verdict:
    """The verdict for a running job: quiet and fine, or hung with a node to suspect."""
    options = options or Options()
    age = output_age(job)
    notes: list[str] = []
    if age is None:
        notes.append("its output file cannot be seen from here (or goes to /dev/null)")
    stale = age is not None and age >= options.stale
    if not (stale or options.stacks):
        return _running(job, age, options, notes)
    grown = f"its output has not grown for {_span(age)}" if age is not None else ""
    try:
        collection = (collect or pyspy.collect)(job.job_id, job, options.settings)
    except (SlurmError, SlurmkitError) as exc:
        notes.append(f"no stacks: {exc}")
        return _verdict(job, "running", _quiet(job, grown), "warning", [], notes)
    return _from_stacks(job, collection, grown, notes)


def _running(job: Job, age: float | None, options: Options, notes: list[str]) -> Verdict:
    where = f" on {job.nodelist}" if job.nodelist else ""
    if age is None:
        headline = f"job {job.display_id} is running{where}"
        notes.append("ask for its stacks with --stacks to see where each rank is")
    else:
        headline = f"job {job.display_id} is running{where}; its output grew {_span(age)} ago"
    facts = [Evidence("output", f"last grew {_span(age)} ago", job.std_out or "")] if age else []
    data: dict[str, object] = {"output_age": age, "stale_after": options.stale}
    return _verdict(job, "running", headline, "ok", facts, notes, data)


def _quiet(job: Job, grown: str) -> str:
    return f"job {job.display_id} is running" + (f"; {grown}" if grown else "")


def _from_stacks(job: Job, collection: pyspy.Collection, grown: str, notes: list[str]) -> Verdict:
    notes.extend(f"{p.node}: {p.message}" for p in collection.problems)
    ranks = [g for g in collection.groups if g.role == "rank"]
    if not ranks:
        why = "no Python process was dumped" if not collection.no_python else "no Python ranks"
        return _verdict(job, "running", _quiet(job, grown) + f" ({why})", "warning", [], notes)
    facts = [_group_fact(g) for g in ranks]
    odd = [g for g in ranks if g.outlier]
    data: dict[str, object] = {"groups": [_group_json(g) for g in ranks]}
    if not odd:
        top = _frame_text(ranks[0])
        headline = (
            f"job {job.display_id}: all {sum(g.count for g in ranks)} ranks wait in {top}"
            + (f"; {grown}" if grown else "")
            + ": no odd rank, suspect what they all wait for (I/O, the network)"
        )
        return _verdict(job, "hung", headline, "warning", facts, notes, data)
    suspects = sorted({n for g in odd for n in g.nodes})
    facts.extend(_node_facts(suspects, notes))
    data["suspect_nodes"] = suspects
    majority = max(ranks, key=lambda g: g.count)
    odd_count = sum(g.count for g in odd)
    headline = (
        f"job {job.display_id} looks hung: {odd_count} rank{'s' if odd_count > 1 else ''} on "
        f"{fold(suspects)} in {_frame_text(odd[0])} while {majority.count} wait in "
        f"{_frame_text(majority)}: suspect {fold(suspects)}"
    )
    advice = (
        f"look at {fold(suspects)} (slurmkit node show {fold(suspects)}; its kernel log, GPUs)",
        f"resubmit without it: --exclude={fold(suspects)}",
    )
    return _verdict(job, "hung", headline, "bad", facts, notes, data, advice)


def _frame_text(group: StackGroup) -> str:
    if not group.frames:
        return "an unknown place"
    top = group.frames[0]
    line = f":{top.line}" if top.line is not None else ""
    return f"{top.function} ({top.file}{line})"


def _group_fact(group: StackGroup) -> Evidence:
    frames = " < ".join(f.function for f in group.frames[:MAX_FRAMES]) or "?"
    label = "odd ranks" if group.outlier else "ranks"
    pids = ", ".join(f"{p.node}:{p.pid}" for p in group.members[:8])
    text = f"{group.count} on {group.folded_nodes} in {frames} (pids {pids})"
    return Evidence(label, text, "py-spy dump")


def _group_json(group: StackGroup) -> dict[str, object]:
    return {
        "count": group.count,
        "nodes": group.folded_nodes,
        "outlier": group.outlier,
        "frames": [f.function for f in group.frames[:MAX_FRAMES]],
        "pids": [f"{p.node}:{p.pid}" for p in group.members],
    }


def _node_facts(names: list[str], notes: list[str]) -> list[Evidence]:
    try:
        nodes = query.nodes(names)
    except SlurmError as exc:
        notes.append(f"the suspect nodes' state could not be read: {exc}")
        return []
    return [Evidence(node.name, _node_text(node), "scontrol show node") for node in nodes]


def _node_text(node: Node) -> str:
    reason = f", reason {node.reason!r}" if node.reason else ""
    load = f", load {node.cpu_load:g}" if node.cpu_load is not None else ""
    return f"{node.state_text}{reason}{load}"


def _span(seconds: float | None) -> str:
    if seconds is None:
        return "an unknown time"
    if seconds < 120:
        return f"{int(seconds)} s"
    minutes = int(seconds // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60} min"


def _verdict(
    job: Job,
    kind: Kind,
    headline: str,
    severity: Severity,
    facts: list[Evidence],
    notes: list[str],
    data: dict[str, object] | None = None,
    advice: tuple[str, ...] = (),
) -> Verdict:
    return Verdict(
        job_id=job.display_id,
        kind=kind,
        headline=headline,
        severity=severity,
        evidence=tuple(facts),
        advice=advice,
        notes=tuple(notes),
        data=data or {},
    )
