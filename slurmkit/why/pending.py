"""Why a job is still pending, in plain words, with what its owner can do about it.

Slurm gives one reason word (``Resources``, ``Priority``, ``Dependency``,
``ReqNodeNotAvail, UnavailableNodes:node-4``, ``QOSMaxJobsPerUserLimit`` ...); the
facts behind it are spread over ``squeue``, ``sprio``, ``scontrol show node`` and
``sacctmgr``. Each reason here asks the few calls it needs, each over the whole
partition or node list at once, so one explanation costs a handful of Slurm calls
however long the queue is: the job's partition queue (one ``squeue``: its rank and
Slurm's start estimate, the value ``squeue --start`` prints), then at most one or two
more for the reason, and at most two ``sbatch --test-only`` for the what-if.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from slurmkit.errors import SlurmError, SlurmkitError
from slurmkit.grammar import timelimit
from slurmkit.hostlist import expand, fold
from slurmkit.slurm import pendingq, query
from slurmkit.slurm.parse_text import parse_time
from slurmkit.slurm.records import Job, Node
from slurmkit.why import whatif
from slurmkit.why.model import Evidence, Severity, Verdict

_UNAVAILABLE = re.compile(r"UnavailableNodes:(?P<nodes>\S+)")
_LIMIT = re.compile(r"^(?P<scope>QOS|Assoc)(?P<kind>Grp|Max|Min)(?P<what>\w+?)(?:Limit)?$")
_DEPENDENCY = re.compile(r"(?P<type>[a-z_]+):(?P<ids>[0-9_:+*()A-Za-z]+)")
_RESOURCE_REASONS = frozenset({"Resources", "Priority"})
_ASSOC_FIELD = {
    "MaxJobsPU": "MaxJobs",
    "MaxJobsPA": "MaxJobs",
    "MaxSubmitPU": "MaxSubmit",
    "MaxSubmitPA": "MaxSubmit",
    "MaxTRESPU": "MaxTRES",
    "MaxTRESPA": "MaxTRES",
}
_PARTITION_REASONS = ("PartitionTimeLimit", "PartitionNodeLimit", "PartitionConfig")


@dataclass
class _Facts:
    """What one explanation gathered: evidence lines, advice and notes, in order."""

    job: Job
    queue: list[Job] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    advice: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, object] = field(default_factory=dict)

    def fact(self, label: str, text: str, source: str) -> None:
        self.evidence.append(Evidence(label, text, source))


def explain(
    job: Job,
    *,
    what_if: bool | None = None,
    caller: str | None = None,
    now: datetime | None = None,
) -> Verdict:
    """The verdict for a pending job (``job`` as ``scontrol show job -d`` reads it).

    ``what_if`` None asks ``sbatch --test-only`` only where a smaller request can
    help (Resources, Priority) and only for the caller's own job (the test runs as
    the caller, with the caller's limits): two calls at most. ``caller`` is the
    user name running ``why`` (the job's owner is assumed when None).
    """
    now = now or datetime.now().astimezone()
    facts = _Facts(job)
    reason = job.reason or "None"
    facts.data["reason"] = reason
    _read_queue(facts)
    headline, severity = _explain_reason(facts, reason, now)
    estimate = _estimate(facts, now, reason)
    if _wants_what_if(job, reason, what_if, caller):
        _add_what_if(facts, estimate, now)
    return Verdict(
        job_id=job.display_id,
        kind="pending",
        headline=headline,
        severity=severity,
        evidence=tuple(facts.evidence),
        advice=tuple(facts.advice),
        notes=tuple(facts.notes),
        data=facts.data,
    )


# ---------------------------------------------------------------- the partition's queue


def _partitions(job: Job) -> list[str]:
    return [p for p in (job.partition or "").split(",") if p]


def _read_queue(facts: _Facts) -> None:
    parts = _partitions(facts.job)
    if not parts:
        facts.notes.append("the job names no partition: its rank in a queue is unknown")
        return
    try:
        facts.queue = pendingq.partition_queue(parts)
    except SlurmError as exc:
        facts.notes.append(f"the partition's queue could not be read: {exc}")


def _own_row(facts: _Facts) -> Job | None:
    return next((j for j in facts.queue if j.job_id == facts.job.job_id), None)


def _in_line(facts: _Facts) -> list[Job]:
    """The partition's jobs that wait for nodes (Resources, Priority), first in line first.

    Jobs held, waiting on a dependency, a begin time, a limit or a named node are not
    in line for nodes. Slurm orders by priority, then by submission.
    """
    me = facts.job.job_id
    line = [j for j in facts.queue if j.job_id == me or (j.reason or "") in _RESOURCE_REASONS]
    return sorted(line, key=lambda j: (-(j.priority or 0), _when(j.submit_time), _id(j.job_id)))


def _when(moment: datetime | None) -> float:
    return moment.timestamp() if moment else 0.0


def _id(job_id: str) -> int:
    return int(job_id) if job_id.isdigit() else 0


def _estimate(facts: _Facts, now: datetime, reason: str) -> datetime | None:
    """Slurm's expected start (``squeue --start``), said where it means something: for a
    job in line for nodes always, for the others only when Slurm has one."""
    row = _own_row(facts)
    start = row.start_time if row else None
    word = reason.split(",")[0]
    if start is None or start.year >= now.year + 1:
        if word in _RESOURCE_REASONS:
            facts.fact("start", "Slurm has no start estimate for it yet", "squeue --start")
        return None
    facts.data["expected_start"] = start.isoformat(timespec="seconds")
    if word != "BeginTime":
        facts.fact("start", f"Slurm expects it to start at {_at(start, now)}", "squeue --start")
    return start


def _at(moment: datetime, now: datetime) -> str:
    text = moment.isoformat(timespec="seconds")
    seconds = (moment - now).total_seconds()
    if seconds <= 0:
        return f"{text} (now, at the next scheduling pass)"
    return f"{text} (in {_span(seconds)})"


def _span(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 1:
        return f"{int(seconds)} s"
    if minutes < 120:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if hours < 48 else f"{hours // 24} days"


# ---------------------------------------------------------------- reasons


def _explain_reason(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    word = reason.split(",")[0].strip()
    for matches, handler in _HANDLERS:
        if matches(word, reason):
            return handler(facts, reason, now)
    return _other(facts, reason, now)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _resources(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    job = facts.job
    line = _in_line(facts)
    ids = [j.job_id for j in line]
    part = job.partition or "?"
    rank = ids.index(job.job_id) + 1 if job.job_id in ids else None
    facts.data["rank"] = rank
    facts.data["in_line"] = len(line)
    place = f"{_ordinal(rank)} of {len(line)} in line in partition {part}" if rank else ""
    if rank:
        ahead = ", ".join(f"{j.display_id} ({j.priority})" for j in line[: rank - 1][:5])
        more = f" and {rank - 6} more" if rank > 6 else ""
        text = place + (f"; ahead of it (priority): {ahead}{more}" if ahead else "")
        facts.fact("rank", text, f"squeue --partition={part} --states=PENDING")
    _priority_factors(facts)
    if reason.startswith("Resources"):
        headline = f"job {job.display_id} waits for free nodes: it is {place or 'in line'}"
        facts.advice.append(
            "a smaller request (less --time, fewer nodes or CPUs) can start sooner: "
            "the backfill scheduler fits short jobs into the gaps before a big one starts"
        )
    else:
        headline = (
            f"job {job.display_id} waits for jobs of higher priority: it is {place or 'in line'}"
        )
        facts.advice.append(
            "priority grows with queue age; a shorter --time lets backfill start it "
            "early without delaying the jobs ahead"
        )
    return headline, "info"


def _priority_factors(facts: _Facts) -> None:
    job = facts.job
    try:
        rows = pendingq.priority_factors(_partitions(job))
    except SlurmError as exc:
        facts.notes.append(f"sprio gave no priority factors: {exc}")
        return
    own = next((r for r in rows if r.job_id == job.job_id), None)
    if own is None:
        facts.notes.append("sprio does not list the job (held, or not yet prioritised)")
        return
    parts = [f"{name.removesuffix('_factor')} {value:g}" for name, value in own.nonzero()]
    text = f"priority {own.priority}" + (f" = {' + '.join(parts)}" if parts else "")
    facts.data["priority_factors"] = dict(own.factors)
    top = max((r.priority or 0 for r in rows), default=0)
    if own.priority is not None and top > own.priority:
        text += f"; the highest in the partition is {top}"
    facts.fact("priority", text, f"sprio --partition={job.partition}")


def _dependency(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    job = facts.job
    spec = job.dependency or ""
    pairs = [(m["type"], i) for m in _DEPENDENCY.finditer(spec) for i in _dep_ids(m["ids"])]
    facts.data["dependency"] = spec
    never = reason.startswith("DependencyNeverSatisfied")
    if not pairs:
        facts.fact("dependency", spec or "(Slurm shows none)", "scontrol show job")
        return f"job {job.display_id} waits for a dependency ({spec or 'not shown'})", "info"
    states = _dependency_states([i for _, i in pairs])
    described = [
        f"{i} ({kind}): {states.get(i, 'ended and forgotten by slurmctld')}" for kind, i in pairs
    ]
    for line in described:
        facts.fact("dependency", line, "squeue --states=all")
    if never:
        facts.advice.append(
            f"it can never start: cancel it (scancel {job.job_id}) and resubmit, "
            "or change the dependency with scontrol update JobId=... Dependency=..."
        )
        return (
            f"job {job.display_id} can never start: its dependency failed ({described[0]})",
            "bad",
        )
    facts.advice.append("it starts once the dependency is satisfied; nothing to do")
    return f"job {job.display_id} waits for job {described[0]}", "info"


def _dep_ids(text: str) -> list[str]:
    ids = []
    for piece in text.split(":"):
        match = re.match(r"\d+(?:_\d+)?", piece)
        if match:
            ids.append(match[0])
    return ids


def _dependency_states(ids: Sequence[str]) -> dict[str, str]:
    try:
        found = query.jobs(job_ids=list(ids), states="all")
    except SlurmError:
        return {}
    return {j.display_id: _state_words(j) for j in found} | {
        j.job_id: _state_words(j) for j in found
    }


def _state_words(job: Job) -> str:
    where = f" on {job.nodelist}" if job.is_running and job.nodelist else ""
    reason = f" ({job.reason})" if job.is_pending and job.reason else ""
    return f"{job.state}{where}{reason}"


def _held(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    job = facts.job
    facts.notes.append(
        "Slurm does not record who held or last released a job (only slurmctld's log does)"
    )
    if reason == "JobHeldUser":
        facts.fact(
            "held", "held by its user (sbatch -H or scontrol hold/uhold)", "scontrol show job"
        )
        facts.advice.append(f"scontrol release {job.job_id}")
        return f"job {job.display_id} is held by its user: scontrol release {job.job_id}", "warning"
    facts.fact("held", "held by an administrator (or by Slurm itself)", "scontrol show job")
    facts.advice.append(f"ask an administrator to release it (scontrol release {job.job_id})")
    return f"job {job.display_id} is held by an administrator", "warning"


def _launch_failed(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    job = facts.job
    node = job.batch_host or job.raw.get("BatchHost") or ""
    facts.fact("held", "its launch failed; Slurm requeued it and held it", "scontrol show job")
    facts.advice.append(
        f"find why the launch failed (sacct -j {job.job_id}, the node's slurmd log), "
        f"then scontrol release {job.job_id}"
    )
    where = f" (last on {node})" if node else ""
    return f"job {job.display_id} failed to launch{where} and was requeued held", "bad"


def _unavailable_nodes(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    job = facts.job
    match = _UNAVAILABLE.search(reason)
    listed = match["nodes"] if match else job.raw.get("ReqNodeList", "")
    facts.data["unavailable_nodes"] = listed
    if not listed or listed == "(null)":
        facts.advice.append("the nodes it asks for (-w, --constraint) are not available")
        return f"job {job.display_id} waits for nodes that are not available", "warning"
    try:
        nodes = query.nodes(listed)
    except SlurmError as exc:
        facts.notes.append(f"the nodes could not be read: {exc}")
        nodes = []
    for node in nodes:
        facts.fact(node.name, _why_out(node), "scontrol show node")
    asked = job.raw.get("ReqNodeList", "")
    if asked and asked != "(null)":
        facts.advice.append(f"it asks for {asked} by name (-w): drop or change -w to run elsewhere")
    facts.advice.append("the nodes come back when an administrator returns them (scontrol update)")
    first = nodes[0] if nodes else None
    why = f": {_why_out(first)}" if first and len(nodes) == 1 else ""
    return f"job {job.display_id} waits for {fold(expand(listed))}, out of service{why}", "warning"


def _why_out(node: Node) -> str:
    state = node.state_text
    if not node.reason:
        return state
    who = ", ".join(x for x in (node.reason_user or "", _iso(node.reason_time)) if x)
    return f"{state}, reason {node.reason!r}" + (f" ({who})" if who else "")


def _iso(moment: datetime | None) -> str:
    return moment.isoformat(timespec="seconds") if moment else ""


def _limit(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    job = facts.job
    match = _LIMIT.match(reason.split(",")[0].strip())
    assert match is not None  # the handler table matched it
    scope, what = match["scope"], match["what"]
    field_name, counted = _limit_field(match["kind"], what)
    if scope == "Assoc":  # an association's limits have no PU/PA suffix: they are its own
        field_name = _ASSOC_FIELD.get(field_name, field_name)
    limits = _read_limits(facts, scope)
    maximum = (limits or {}).get(field_name, "") if field_name else ""
    usage = _usage(facts, scope, what, counted)
    owner = f"QOS {job.qos}" if scope == "QOS" else f"association {job.user}/{job.account}"
    plain = _plain_limit(match["kind"], what)
    shown = f"{field_name}={maximum or '?'}" if field_name else reason
    facts.fact("limit", f"{owner}: {shown}", _limit_source(scope))
    if usage:
        facts.fact("usage", usage, "squeue")
    facts.data["limit"] = {"scope": scope, "reason": reason, "field": field_name, "max": maximum}
    facts.advice.append(
        "it starts when your other jobs under this limit end; or submit under "
        "another QOS/account that allows more (--qos, --account)"
    )
    now_text = f" ({usage})" if usage else ""
    return (
        f"job {job.display_id} is held back by its {owner}'s limit on {plain}: "
        f"max {maximum or '?'}{now_text}",
        "warning",
    )


def _limit_field(kind: str, what: str) -> tuple[str, str]:
    """The sacctmgr field a reason's limit is in, and what the limit counts.

    ``QOSMaxJobsPerUserLimit`` is MaxJobsPU counting running jobs, ``QOSGrpCpuLimit``
    GrpTRES counting CPUs: Slurm's reason names follow the limit's own name.
    """
    per_user = what.endswith(("PerUser", "PU"))
    per_account = what.endswith(("PerAccount", "PA"))
    base = re.sub(r"(PerUser|PerAccount|PerJob|PerNode|PU|PA|PJ)$", "", what)
    if base.startswith("Submit"):
        field_name = (
            "GrpSubmit" if kind == "Grp" else ("MaxSubmitPA" if per_account else "MaxSubmitPU")
        )
        return field_name, "submitted"
    if base.startswith("Jobs") or base == "Job":
        field_name = "GrpJobs" if kind == "Grp" else ("MaxJobsPA" if per_account else "MaxJobsPU")
        return field_name, "running"
    if base.startswith("Wall"):
        return ("GrpWall" if kind == "Grp" else "MaxWall"), ""
    if kind == "Grp":
        tres = "GrpTRES"
    else:
        tres = "MaxTRESPU" if per_user else "MaxTRESPA" if per_account else "MaxTRES"
    return tres, base.lower()


def _plain_limit(kind: str, what: str) -> str:
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", what).lower()
    words = words.replace("cpu", "CPUs")
    prefix = "the group's " if kind == "Grp" else ""
    return f"{prefix}{words}".strip()


def _limit_source(scope: str) -> str:
    return "sacctmgr show qos" if scope == "QOS" else "sacctmgr show assoc"


def _read_limits(facts: _Facts, scope: str) -> dict[str, str] | None:
    job = facts.job
    try:
        if scope == "QOS":
            return pendingq.qos_limits(job.qos or "normal")
        rows = pendingq.assoc_limits(job.user or "", job.account)
    except SlurmError as exc:
        facts.notes.append(f"accounting's limits could not be read: {exc}")
        return None
    return _merged(rows)


def _merged(rows: Sequence[dict[str, str]]) -> dict[str, str]:
    """The user row's limits, with the account row's where the user has none."""
    merged: dict[str, str] = {}
    for row in sorted(rows, key=lambda r: bool(r.get("User"))):
        merged.update({k: v for k, v in row.items() if v})
    return merged


def _usage(facts: _Facts, scope: str, what: str, counted: str) -> str:
    job = facts.job
    per_user = what.endswith(("PerUser", "PU")) or scope == "Assoc"
    per_account = what.endswith(("PerAccount", "PA"))
    try:
        jobs = pendingq.user_jobs(
            user=job.user if per_user else None,
            qos=job.qos if scope == "QOS" else None,
            account=job.account if (per_account or scope == "Assoc") else None,
        )
    except SlurmError as exc:
        facts.notes.append(f"the jobs the limit counts could not be read: {exc}")
        return ""
    running = [j for j in jobs if j.is_running]
    whose = f"{job.user}'s" if per_user else "its"
    if counted == "running":
        facts.data["usage"] = len(running)
        return f"{len(running)} of {whose} jobs run under it now"
    if counted == "submitted":
        facts.data["usage"] = len(jobs)
        return f"{len(jobs)} of {whose} jobs are queued or running under it"
    if counted.startswith("cpu"):
        used = sum(j.num_cpus or 0 for j in running)
        facts.data["usage"] = used
        return f"{whose} running jobs hold {used} CPUs"
    if counted.startswith("node"):
        used = sum(j.num_nodes or 0 for j in running)
        facts.data["usage"] = used
        return f"{whose} running jobs hold {used} nodes"
    return f"{len(running)} of {whose} jobs run under it now"


def _begin(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    job = facts.job
    eligible = parse_time(job.raw.get("EligibleTime")) or job.start_time
    when = _at(eligible, now) if eligible else "a time Slurm does not show"
    facts.fact("begin", f"not before {when}", "scontrol show job (EligibleTime)")
    facts.advice.append(
        f"it was submitted with --begin; scontrol update JobId={job.job_id} StartTime=now "
        "makes it eligible at once"
    )
    return f"job {job.display_id} may not start before {when} (--begin)", "info"


def _reservation(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    job = facts.job
    name = job.raw.get("Reservation", "")
    facts.fact("reservation", name or "(none shown)", "scontrol show job")
    facts.advice.append("it runs only inside its reservation, once that starts and has room")
    return f"job {job.display_id} waits for its reservation {name}".rstrip(), "info"


def _partition_limit(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    job = facts.job
    try:
        found = {p.name: p for p in query.partitions()}
    except SlurmError as exc:
        facts.notes.append(f"the partitions could not be read: {exc}")
        found = {}
    part = found.get(job.partition or "")
    if reason.startswith("PartitionTimeLimit"):
        limit = timelimit.format_limit(part.max_time) if part and part.max_time else "?"
        asked = timelimit.format_limit(job.time_limit) if job.time_limit else "?"
        facts.fact(
            "limit",
            f"partition {job.partition} allows --time up to {limit}",
            "scontrol show partition",
        )
        facts.fact("asked", f"the job asks for --time={asked}", "scontrol show job")
        facts.advice.append(
            f"scontrol update JobId={job.job_id} TimeLimit={limit} "
            "(or resubmit with a shorter --time)"
        )
        return (
            f"job {job.display_id} asks for {asked} but partition {job.partition} allows "
            f"at most {limit}: it will not start as it is",
            "bad",
        )
    facts.fact("limit", reason, "scontrol show job")
    facts.advice.append("the request exceeds a partition limit: change it or use another partition")
    return f"job {job.display_id} exceeds a limit of partition {job.partition}: {reason}", "bad"


def _other(facts: _Facts, reason: str, now: datetime) -> tuple[str, Severity]:
    job = facts.job
    facts.fact("reason", reason, "scontrol show job")
    return f"job {job.display_id} is pending: {reason}", "info"


Handler = Callable[[_Facts, str, datetime], tuple[str, Severity]]
_HANDLERS: tuple[tuple[Callable[[str, str], bool], Handler], ...] = (
    (lambda w, r: w in _RESOURCE_REASONS, _resources),
    (lambda w, r: w.startswith("Dependency"), _dependency),
    (lambda w, r: w in ("JobHeldUser", "JobHeldAdmin"), _held),
    (lambda w, r: "launch failed requeued held" in r.replace("_", " ").lower(), _launch_failed),
    (lambda w, r: w.startswith(("ReqNodeNotAvail", "NodeDown")), _unavailable_nodes),
    (lambda w, r: bool(_LIMIT.match(w)), _limit),
    (lambda w, r: w == "BeginTime", _begin),
    (lambda w, r: w.startswith("Reservation"), _reservation),
    (lambda w, r: w.startswith(_PARTITION_REASONS), _partition_limit),
)  # fmt: skip


# ---------------------------------------------------------------- what-if


def _wants_what_if(job: Job, reason: str, what_if: bool | None, caller: str | None) -> bool:
    if what_if is not None:
        return what_if
    own = caller is None or job.user is None or caller == job.user
    return own and reason.split(",")[0] in _RESOURCE_REASONS


def _add_what_if(facts: _Facts, estimate: datetime | None, now: datetime) -> None:
    try:
        answers = whatif.ask(facts.job, estimate, now=now)
    except (SlurmError, SlurmkitError) as exc:
        facts.notes.append(f"what-if not asked: {exc}")
        return
    for answer in answers:
        facts.fact("what-if", answer.text, "sbatch --test-only " + " ".join(answer.change))
        if answer.earlier:
            facts.advice.insert(0, answer.text)
    facts.data["what_if"] = [a.to_json() for a in answers]
    if answers:
        facts.notes.append(whatif.CAVEAT)
