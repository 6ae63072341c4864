"""``why JOB``: gather what Slurm knows in a fixed number of calls, then pick the verdict.

The calls, whatever the job's size: one ``sacct`` of the allocations (every attempt, or
every task of an array) and one more for the steps (the job's, or a sample of an array's
tasks; none for a pending job), one ``scontrol show job`` (a job slurmctld still holds: its
log paths, a pending job's detail; skipped for an array of many tasks), and only when the
state calls for them one ``sstat`` (running), one ``sacctmgr show event`` (NODE_FAIL) and
one ``sinfo -R`` ("Kill task failed" drains). With slurmdbd down the verdict comes from
slurmctld alone, with a note; a job neither knows is :class:`NotFound` (exit 2).
"""

from __future__ import annotations

import dataclasses
import os
import pwd
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from slurmkit.errors import (
    ControllerUnreachable,
    HostlistParseError,
    NotFound,
    SlurmError,
    UsageError,
)
from slurmkit.grammar import idrange
from slurmkit.hostlist import HostSet
from slurmkit.slurm import accounting
from slurmkit.slurm.accounting import AccountingError, Step
from slurmkit.slurm.records import Job
from slurmkit.why import arrays, ended, logs
from slurmkit.why.model import Evidence, Verdict

PRIVATE_NOTE = (
    "another user's job: Slurm shows you what its PrivateData setting allows (with "
    "PrivateData=jobs or usage, other users' jobs, steps and usage are hidden; "
    "`scontrol show config | grep PrivateData`)"
)
NO_DBD_NOTE = "accounting (slurmdbd) did not answer: the verdict comes from slurmctld alone"
# An array's efficiency spread is read from this many of its tasks that ran (all when fewer).
USAGE_SAMPLE = 200


def check_job_id(text: str) -> str:
    if not idrange.is_job_id(text, tasks=False):
        raise UsageError(f"not a job id: {text!r} (JOB or JOB_TASK, e.g. 1234 or 1234_7)")
    return text


def explain(
    job_id: str,
    *,
    log_paths: Sequence[str] = (),
    caller: str | None = None,
    stale: float | None = None,
    stacks: bool = False,
) -> Verdict:
    """The verdict for ``job_id`` (a job, an array task ``4_1``, or a whole array ``4``).

    A running job is also asked :func:`slurmkit.why.hung.explain` (``stale`` seconds without
    output growth, or ``stacks``): a hang wins the headline, its evidence joins the usage.
    """
    check_job_id(job_id)
    caller = caller or _caller()
    notes: list[str] = []
    tasks = ended.attempts(_accounting(job_id, notes, allocations=True) or [])
    if len(tasks) > 1:
        return arrays.summary(job_id, tasks, notes, usage=_sample_usage(tasks, notes))
    live = _live(job_id, notes)
    if live is None and not tasks:
        raise NotFound(f"unknown job {job_id} (neither slurmctld nor accounting knows it)")
    owner = live.user if live is not None else _owner(tasks)
    if owner and caller and owner != caller and caller != "root":
        notes.append(PRIVATE_NOTE)
    if live is not None and live.is_pending:
        return _earlier_attempts(_pending(live, caller, notes), tasks)
    if not tasks:
        assert live is not None
        return _from_controller(live, notes, log_paths)
    (history,) = tasks.values()
    current = history[-1].allocation
    if current.state == "PENDING" and live is None:
        return _with_notes(Verdict(job_id, "pending", f"job {job_id} is pending", "info"), notes)
    (history,) = _with_steps(job_id, tasks, notes).values()
    current = history[-1].allocation
    if current.state in ended.ACTIVE_STATES:
        history[-1].steps[:] = _with_sstat(job_id, history[-1].steps, notes)
    context = ended.Context(
        events=_events(history, notes),
        kill_task_failed=_kill_task_failed(current),
        logs=logs.scan(_log_paths(live, current, log_paths)),
        notes=notes,
    )
    verdict = ended.verdict(job_id, history, context)
    if live is not None and live.is_running:
        return _with_hang(verdict, live, stale, stacks)
    return verdict


def _with_hang(verdict: Verdict, live: Job, stale: float | None, stacks: bool) -> Verdict:
    """The hang part's verdict on a running job, merged with the usage of this one."""
    try:
        from slurmkit.why import hung
    except ImportError:
        return verdict
    options = hung.Options(stale=hung.DEFAULT_STALE if stale is None else stale, stacks=stacks)
    found = hung.explain(live, options)
    if found.kind == "hung" or found.severity in ("warning", "bad"):
        merged = (*found.evidence, *verdict.evidence)
        notes = tuple(dict.fromkeys([*found.notes, *verdict.notes]))
        return dataclasses.replace(found, evidence=merged, notes=notes)
    return dataclasses.replace(
        verdict,
        evidence=(*verdict.evidence, *found.evidence),
        notes=tuple(dict.fromkeys([*verdict.notes, *found.notes])),
    )


def _caller() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _accounting(job_id: str, notes: list[str], *, allocations: bool = False) -> list[Step] | None:
    try:
        return accounting.job_steps(job_id, allocations=allocations)
    except AccountingError as exc:
        if exc.unreachable:
            notes.append(f"{NO_DBD_NOTE} ({exc})")
            return None
        raise


def _with_steps(
    job_id: str, tasks: dict[str, list[ended.Attempt]], notes: list[str]
) -> dict[str, list[ended.Attempt]]:
    """One job's attempts with their steps: a second sacct, as cheap as the first for one
    job (the first asks allocations only, see :func:`accounting.sacct_argv`)."""
    full = ended.attempts(_accounting(job_id, notes) or [])
    return full if len(full) == 1 else tasks


def _sample_usage(
    tasks: dict[str, list[ended.Attempt]], notes: list[str]
) -> dict[str, list[ended.Attempt]]:
    """The steps of at most :data:`USAGE_SAMPLE` of an array's tasks that ran, evenly
    spaced, in one sacct: their efficiency stands for the array's without costing
    slurmdbd one query per task."""
    ran = [key for key, history in tasks.items() if history[-1].allocation.started]
    picked = ran[:: -(-len(ran) // USAGE_SAMPLE)] if ran else []
    if not picked:
        return {}
    found = ended.attempts(_accounting(",".join(picked), notes) or [])
    return {key: found[key] for key in picked if key in found}


def _live(job_id: str, notes: list[str]) -> Job | None:
    from slurmkit.slurm import query

    try:
        return query.job(job_id)
    except NotFound:
        return None
    except ControllerUnreachable as exc:
        notes.append(f"slurmctld did not answer ({exc}): from accounting alone")
        return None


def _owner(tasks: dict[str, list[ended.Attempt]]) -> str | None:
    for history in tasks.values():
        return history[-1].allocation.user
    return None


def _pending(live: Job, caller: str, notes: list[str]) -> Verdict:
    try:
        from slurmkit.why import pending
    except ImportError:
        verdict = Verdict(
            live.display_id,
            "pending",
            f"job {live.display_id} is pending ({live.reason or 'no reason given'}); "
            "the pending explanation is not yet built",
            "info",
        )
        return _with_notes(verdict, notes)
    return _with_notes(pending.explain(live, caller=caller), notes)


def _earlier_attempts(verdict: Verdict, tasks: dict[str, list[ended.Attempt]]) -> Verdict:
    """A requeued job pending again: what ended its earlier starts (NODE_FAIL, a requeue)."""
    done = [a.allocation for h in tasks.values() for a in h if a.allocation.state != "PENDING"]
    if not done:
        return verdict
    ends = ", ".join(f"{s.state} on {s.nodelist or '-'}" for s in done)
    item = Evidence("requeued", f"started {len(done)} times before; ended: {ends}", "sacct -D")
    return dataclasses.replace(verdict, evidence=(*verdict.evidence, item))


def _with_notes(verdict: Verdict, notes: Sequence[str]) -> Verdict:
    if not notes:
        return verdict
    return dataclasses.replace(verdict, notes=tuple(dict.fromkeys([*verdict.notes, *notes])))


def _from_controller(live: Job, notes: list[str], log_paths: Sequence[str]) -> Verdict:
    """slurmdbd down: slurmctld's record alone (state, exit code, nodes, limit, logs)."""
    state = live.state
    code = ended.exit_text(live.exit_code, live.exit_signal)
    bad = state in ended.BAD_STATES
    headline = f"job {live.display_id} {state.lower()}" + (f": {code}" if bad else "")
    restarts = live.raw.get("Restarts", "0")
    evidence = [
        Evidence("state", f"{state}, {code}, on {live.nodelist or '-'}", "scontrol show job"),
    ]
    if restarts not in ("", "0"):
        evidence.append(Evidence("requeued", f"restarted {restarts} times", "scontrol show job"))
    report = logs.scan([*log_paths, live.std_out or "", live.std_err or ""])
    verdict = Verdict(
        live.display_id,
        "running" if live.is_running else "ended",
        headline,
        "bad" if bad else "info",
        evidence=tuple(evidence),
        notes=tuple(report.notes),
    )
    return _with_notes(verdict, notes)


def _with_sstat(job_id: str, steps: list[Step], notes: list[str]) -> list[Step]:
    """A running job's steps with sstat's live figures (accounting has none until they end)."""
    try:
        live = {s.display_id: s for s in accounting.running_usage(job_id)}
    except AccountingError as exc:
        notes.append(f"sstat did not answer ({exc}): no live usage")
        return steps
    merged = []
    for step in steps:
        now = live.get(step.display_id)
        if now is None:
            merged.append(step)
            continue
        merged.append(
            dataclasses.replace(
                step,
                max_rss=now.max_rss,
                max_rss_node=now.max_rss_node,
                max_rss_task=now.max_rss_task,
                ave_rss=now.ave_rss,
                usage_max_text=now.usage_max_text,
                usage_tot_text=now.usage_tot_text,
            )
        )
    return merged


def _events(history: Sequence[ended.Attempt], notes: list[str]) -> list[accounting.NodeEvent]:
    failed = [a.allocation for a in history if a.allocation.state == "NODE_FAIL"]
    if not failed:
        return []
    last = failed[-1]
    try:  # Slurm's nodelist text parsed here, once, where it is read
        found = accounting.node_events(HostSet(last.nodelist), last.start_time, None)
    except (SlurmError, HostlistParseError) as exc:
        notes.append(f"node events unavailable ({exc})")
        return []
    # The node goes down in the second the job ends NODE_FAIL (or just after): events that
    # began by a minute after the end belong to it; later ones are another story.
    if last.end_time is None:
        return found
    latest = last.end_time + timedelta(minutes=1)
    return [e for e in found if e.start is None or e.start <= latest]


def _kill_task_failed(current: Step) -> str:
    if not current.nodelist or current.state in ended.ACTIVE_STATES:
        return ""
    from slurmkit import hostlist
    from slurmkit.slurm import query

    try:
        reasons = query.drain_reasons()
    except SlurmError:
        return ""
    mine = set(hostlist.expand(current.nodelist))
    hit: set[str] = set()
    for reason in reasons:
        if "kill task failed" in reason.reason.lower():
            hit |= mine & set(hostlist.expand(reason.nodelist))
    return hostlist.fold(sorted(hit)) if hit else ""


def _log_paths(live: Job | None, current: Step, given: Sequence[str]) -> list[str]:
    """The caller's --log paths, slurmctld's StdOut/StdErr, else Slurm's default name."""
    paths = list(given)
    if live is not None and (live.std_out or live.std_err):
        paths += [p for p in (live.std_out, live.std_err) if p]
    elif not given and current.work_dir:
        name = (
            f"slurm-{current.array_job_id}_{current.array_task_id}.out"
            if current.array_job_id
            else f"slurm-{current.job_id}.out"
        )
        default = Path(current.work_dir) / name
        if default.exists():
            paths.append(str(default))
    return paths
