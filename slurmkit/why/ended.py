"""The verdict on a job that ended (or still runs), from accounting, step by step.

Accounting's lines for one job come as attempts: each allocation line (``7``) followed by
its steps (``7.batch``, ``7.0``); a requeued job has one attempt per start (sacct
``--duplicates``), the last one is the job as it stands. The verdict names the state, the
step that failed and why (exit code and signal decoded), and adds what the state calls
for: the memory peak of an OUT_OF_MEMORY step, the limit of a TIMEOUT, the node events
of a NODE_FAIL, who cancelled. Then how well the job used what it asked for.
"""

from __future__ import annotations

import pwd
import signal as signals
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from slurmkit.slurm.accounting import NodeEvent, Step
from slurmkit.why import efficiency
from slurmkit.why.logs import LogReport
from slurmkit.why.model import Evidence, Kind, Severity, Verdict

BAD_STATES = frozenset(
    {"FAILED", "OUT_OF_MEMORY", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "CANCELLED", "BOOT_FAIL"}
    | {"DEADLINE"}
)
ACTIVE_STATES = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"})
_SIGNAL_WORDS = {
    signals.SIGKILL: "SIGKILL: killed outright (scancel, the OOM killer, or Slurm after KillWait)",
    signals.SIGSEGV: "SIGSEGV: segmentation fault",
    signals.SIGBUS: "SIGBUS: bus error (often a file or /dev/shm that went away)",
    signals.SIGTERM: "SIGTERM: asked to stop (scancel, a time limit or preemption)",
    signals.SIGABRT: "SIGABRT: aborted (an assert or a C++ exception)",
    signals.SIGINT: "SIGINT: interrupted",
    signals.SIGUSR1: "SIGUSR1: the --signal warning, not handled by the script",
    signals.SIGUSR2: "SIGUSR2: the --signal warning, not handled by the script",
    signals.SIGFPE: "SIGFPE: arithmetic error",
}
_ADVICE = {
    "OUT_OF_MEMORY": "ask for more memory (--mem or --mem-per-cpu), or use less per task",
    "TIMEOUT": "ask for more --time, or checkpoint and ask for a --signal warning before the end",
    "NODE_FAIL": "resubmit; exclude the node (-x) if it fails again (slurmkit faulty history)",
    "PREEMPTED": "resubmit, or run in a QOS/partition that is not preempted (--requeue "
    "makes Slurm resubmit it for you)",
}


@dataclass
class Attempt:
    """One start of a job: its allocation line and the steps that ran in it."""

    allocation: Step
    steps: list[Step] = field(default_factory=list)


@dataclass(frozen=True)
class Context:
    """What the caller gathered besides accounting: node events, drains, logs, notes."""

    events: Sequence[NodeEvent] = ()
    kill_task_failed: str = ""  # nodes of the job drained "Kill task failed"
    logs: LogReport | None = None
    notes: Sequence[str] = ()
    user_name: Callable[[str], str] | None = None


def attempts(steps: Sequence[Step]) -> dict[str, list[Attempt]]:
    """Task key (``7``, ``4_1``) -> its attempts in the order sacct printed them."""
    found: dict[str, list[Attempt]] = {}
    for step in steps:
        key = step.task_key
        if step.step is None:
            found.setdefault(key, []).append(Attempt(step))
        elif found.get(key):
            found[key][-1].steps.append(step)
    return found


def signal_text(number: int) -> str:
    if number in _SIGNAL_WORDS:
        return _SIGNAL_WORDS[signals.Signals(number)]
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_text(code: int | None, signal: int | None) -> str:
    """sacct's ``code:signal`` in words; 128+N exit codes are a child killed by signal N."""
    if signal:
        return f"killed by signal {signal} ({signal_text(signal)})"
    if code is None:
        return "no exit code recorded"
    if code > 128 and code - 128 < 65:
        return f"exit code {code} = 128+{code - 128}: a process died of {signal_text(code - 128)}"
    return f"exit code {code}"


def _user(uid: str, lookup: Callable[[str], str] | None) -> str:
    if lookup is not None:
        return lookup(uid)
    try:
        return f"{pwd.getpwuid(int(uid)).pw_name} (uid {uid})"
    except (KeyError, ValueError):
        return f"uid {uid}"


def failing_step(attempt: Attempt) -> Step | None:
    """The step that ended the attempt: a bad state or a non-zero exit, user steps first."""
    ordered = sorted(attempt.steps, key=lambda s: s.step in ("batch", "extern"))
    for step in ordered:
        bad = step.state in BAD_STATES - {"CANCELLED"} or step.exit_code or step.exit_signal
        if bad and step.step != "extern":
            return step
    return None


def _fmt_seconds(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def verdict(job_id: str, history: Sequence[Attempt], context: Context) -> Verdict:
    """The verdict for one job or array task from its attempts (the last is current)."""
    current = history[-1]
    alloc = current.allocation
    evidence: list[Evidence] = []
    advice: list[str] = []
    headline, severity = _state_line(job_id, current, context, evidence, advice)
    _requeues(history, evidence)
    if context.kill_task_failed:
        text = f"'Kill task failed' drains on the job's nodes: {context.kill_task_failed}"
        evidence.append(Evidence("drained", text, "sinfo -R"))
    eff = efficiency.of_attempt(alloc, current.steps)
    for line in efficiency.summary_lines(eff):
        evidence.append(Evidence("efficiency", line, "sacct"))
    flags = [*eff.over, *eff.waste]
    if flags:
        headline += "; " + "; ".join(flags)
        if severity in ("ok", "info"):
            severity = "warning"
    notes = list(context.notes)
    if context.logs is not None:
        _log_evidence(context.logs, evidence)
        notes.extend(context.logs.notes)
    kind: Kind = "running" if alloc.state in ACTIVE_STATES else "ended"
    data = {
        "state": alloc.state,
        "exit_code": alloc.exit_code,
        "exit_signal": alloc.exit_signal,
        "attempts": len(history),
        "nodes": alloc.nodelist,
        "elapsed": alloc.elapsed,
        "time_limit_minutes": alloc.time_limit,
        "efficiency": eff.to_json(),
    }
    return Verdict(
        job_id=job_id,
        kind=kind,
        headline=headline,
        severity=severity,
        evidence=tuple(evidence),
        advice=tuple(dict.fromkeys(advice)),
        notes=tuple(dict.fromkeys(notes)),
        data=data,
    )


def _state_line(
    job_id: str,
    attempt: Attempt,
    context: Context,
    evidence: list[Evidence],
    advice: list[str],
) -> tuple[str, Severity]:
    alloc = attempt.allocation
    state = alloc.state
    where = f" on {alloc.nodelist}" if alloc.nodelist else ""
    ran = f"ran {_fmt_seconds(alloc.elapsed)}{where}"
    text = f"{state}, {exit_text(alloc.exit_code, alloc.exit_signal)}, {ran}"
    evidence.append(Evidence("state", text, "sacct"))
    if state in _ADVICE:
        advice.append(_ADVICE[state])
    handler = _HANDLERS.get(state)
    if handler is not None:
        return handler(job_id, attempt, context, evidence)
    if state in ACTIVE_STATES:
        return (
            f"job {job_id} is {state.lower()}{where}, {_fmt_seconds(alloc.elapsed)} so far",
            "info",
        )
    if state == "COMPLETED":
        return f"job {job_id} completed (exit 0) after {_fmt_seconds(alloc.elapsed)}", "ok"
    return f"job {job_id} ended {state}", "bad" if state in BAD_STATES else "info"


def _failed(
    job_id: str, attempt: Attempt, context: Context, evidence: list[Evidence]
) -> tuple[str, Severity]:
    alloc = attempt.allocation
    step = failing_step(attempt)
    if step is not None:
        words = exit_text(step.exit_code, step.exit_signal)
        where = f" on {step.nodelist}" if step.nodelist else ""
        text = f"step {step.display_id} {step.state}: {words}{where}"
        evidence.append(Evidence("step", text, "sacct"))
        return f"job {job_id} failed: step {step.step} {words}", "bad"
    return f"job {job_id} failed: {exit_text(alloc.exit_code, alloc.exit_signal)}", "bad"


def _oom(
    job_id: str, attempt: Attempt, context: Context, evidence: list[Evidence]
) -> tuple[str, Severity]:
    alloc = attempt.allocation
    step = next((s for s in attempt.steps if s.state == "OUT_OF_MEMORY"), None) or failing_step(
        attempt
    )
    request = efficiency.memory_request(alloc)
    per_node = request // (alloc.num_nodes or 1) if request else None
    if step is None:
        return f"job {job_id} ran out of memory (asked {efficiency.size_text(request)})", "bad"
    use = efficiency.step_use(step)
    node = step.max_rss_node or step.nodelist
    size = efficiency.size_text
    text = (
        f"step {step.display_id} peaked at {size(use.memory)} (largest task "
        f"{size(step.max_rss)} on {node or '-'}) against {size(per_node)} per node asked"
    )
    evidence.append(Evidence("memory", text, "sacct"))
    return (
        f"job {job_id} ran out of memory: step {step.step} on {node or '?'} used "
        f"{efficiency.size_text(step.max_rss)} of {efficiency.size_text(per_node)} per node",
        "bad",
    )


def _timeout(
    job_id: str, attempt: Attempt, context: Context, evidence: list[Evidence]
) -> tuple[str, Severity]:
    alloc = attempt.allocation
    limit = alloc.time_limit * 60 if alloc.time_limit is not None else None
    line = alloc.submit_line or ""
    asked = "--signal" in line
    warned = (
        "a --signal warning was asked on the sbatch line"
        if asked
        else "no --signal on the sbatch line (a #SBATCH --signal in the script is not "
        "recorded by accounting)"
    )
    text = f"ran {_fmt_seconds(alloc.elapsed)} of a {_fmt_seconds(limit)} limit; {warned}"
    evidence.append(Evidence("limit", text, "sacct SubmitLine"))
    return f"job {job_id} hit its time limit ({_fmt_seconds(limit)}) and was killed", "bad"


def _node_fail(
    job_id: str, attempt: Attempt, context: Context, evidence: list[Evidence]
) -> tuple[str, Severity]:
    alloc = attempt.allocation
    for event in context.events:
        when = event.start.isoformat(timespec="seconds") if event.start else "?"
        by = f" by {event.user}" if event.user else ""
        text = f"{event.node} {event.state} at {when}{by}: {event.reason}"
        evidence.append(Evidence("node event", text, "sacctmgr show event"))
    nodes = sorted({e.node for e in context.events}) or [alloc.nodelist]
    return f"job {job_id} ended NODE_FAIL: node {','.join(nodes)} stopped answering", "bad"


def _preempted(
    job_id: str, attempt: Attempt, context: Context, evidence: list[Evidence]
) -> tuple[str, Severity]:
    alloc = attempt.allocation
    where = ", ".join(x for x in (f"partition {alloc.partition}", f"QOS {alloc.qos}") if x)
    return f"job {job_id} was preempted ({where}) by a job of higher priority", "bad"


def _cancelled(
    job_id: str, attempt: Attempt, context: Context, evidence: list[Evidence]
) -> tuple[str, Severity]:
    alloc = attempt.allocation
    if alloc.cancelled_by is None:
        return f"job {job_id} was cancelled", "bad"
    who = _user(alloc.cancelled_by, context.user_name)
    own = alloc.user is not None and who.split(" ", 1)[0] == alloc.user
    evidence.append(Evidence("cancelled", f"cancelled by {who}", "sacct State"))
    owner = " (its owner)" if own else f" (the job is {alloc.user}'s)" if alloc.user else ""
    return f"job {job_id} was cancelled by {who}{owner}", "bad"


_HANDLERS = {
    "FAILED": _failed,
    "OUT_OF_MEMORY": _oom,
    "TIMEOUT": _timeout,
    "NODE_FAIL": _node_fail,
    "PREEMPTED": _preempted,
    "CANCELLED": _cancelled,
}


def _requeues(history: Sequence[Attempt], evidence: list[Evidence]) -> None:
    if len(history) < 2:
        return
    states = ", ".join(a.allocation.state for a in history[:-1])
    text = f"started {len(history)} times; earlier attempts ended: {states}"
    evidence.append(Evidence("requeued", text, "sacct --duplicates"))


def _log_evidence(report: LogReport, evidence: list[Evidence]) -> None:
    for finding in report.findings:
        evidence.append(Evidence(f"log: {finding.label}", finding.line, finding.path))
    for path, lines in report.tails.items():
        if lines:
            evidence.append(Evidence("log tail", " | ".join(lines), path))
