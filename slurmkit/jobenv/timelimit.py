"""A job's time: limit, used, left; and raising the limit (``scontrol update ... TimeLimit``).

Seconds left is ``TimeLimit - RunTime`` from ``scontrol show job`` (RunTime
excludes suspended time and follows limit changes, as Slurm's own enforcement
does). A job without a limit has :data:`UNLIMITED_SECONDS` left: a plain
integer, so ``[ "$left" -lt 600 ]`` and ``int(out)`` work unchanged in the
training loops this is for. Each query is one RPC to slurmctld: read it once
and keep the deadline, do not ask every step.

Limit changes are parsed strictly, in two forms:

- relative, always with ``+``: ``+3h``, ``+90m``, ``+1d``, ``+1d12h``, or a
  Slurm duration after the sign (``+30`` is 30 minutes, ``+1:30:00``);
- absolute, Slurm's formats (``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``,
  ``D-HH:MM``, ``D-HH:MM:SS``) or ``UNLIMITED``.

Slurm keeps limits in whole minutes and would round seconds up; they are
refused here so the limit set is the one typed. ``3h`` without a sign is
refused too: it could mean "by" or "to".

On Slurm 22.05 (checked on 22.05.8) ``scontrol update JobId=N TimeLimit+=M``
(the job syntax in ``man scontrol``) and ``TimeLimit=+M`` (documented there
for steps) both add M minutes; ``JobId=`` must come first. Only operators,
administrators and root may *raise* a running job's limit; users may lower
it, and may change a pending job's limit within the partition's.

``job extend`` writes its intent (job, limit before and after, token) to a journal
beside the user's other state (:func:`journal_path`) before the update and the
outcome after (issue 22). An update that gets no answer is "unknown, checked
again": the job is read back (bounded) and the limit found decides. A run killed in
between, or one that never got an answer, is settled by the next ``job extend``:
one line on stderr says whether the earlier change went through, so a retried
``+2h`` is seen for what it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from slurmkit import faultpoint, files
from slurmkit.errors import (
    ControllerUnreachable,
    PermissionDenied,
    SlurmError,
    SlurmkitError,
    UsageError,
)
from slurmkit.grammar import duration, timelimit
from slurmkit.grammar.timelimit import format_limit
from slurmkit.journal import Journal
from slurmkit.slurm import recheck
from slurmkit.slurm.records import Job

JOURNAL_NAME = "job-extend.journal"
EXTEND = "job-extend"
Notify = Callable[[str], None]

UNLIMITED_SECONDS = 2**31 - 1  # 68 years: "no limit" as an integer every shell can compare


# ---------------------------------------------------------------- reading


@dataclass(frozen=True)
class JobTime:
    """What ``job info`` shows: where and when a job runs and how long it has left."""

    job_id: str
    state: str
    nodelist: str
    num_nodes: int | None
    start: datetime | None
    end: datetime | None
    time_limit: int | None  # seconds; None = UNLIMITED
    time_used: int | None
    seconds_left: int | None  # None: not running, or no limit (see ``unlimited``)

    @property
    def unlimited(self) -> bool:
        return self.time_limit is None

    def rows(self) -> list[tuple[str, str]]:
        """(field, value) rows for people."""
        return [
            ("state", self.state),
            ("nodes", self.nodelist + (f" ({self.num_nodes})" if self.num_nodes else "") or "-"),
            ("start", _when(self.start)),
            ("end", _when(self.end)),
            ("time limit", format_limit(self.time_limit)),
            ("time used", format_limit(self.time_used) if self.time_used is not None else "-"),
            ("time left", self._left_text()),
        ]

    def _left_text(self) -> str:
        if self.state == "PENDING":
            return "- (not started)"
        if self.unlimited:
            return "UNLIMITED"
        return format_limit(self.seconds_left) if self.seconds_left is not None else "-"

    def to_json(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "state": self.state,
            "nodes": self.nodelist,
            "num_nodes": self.num_nodes,
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "time_limit_seconds": self.time_limit,
            "time_used_seconds": self.time_used,
            "seconds_left": self.seconds_left,
            "unlimited": self.unlimited,
        }


def _when(moment: datetime | None) -> str:
    return moment.isoformat(sep=" ", timespec="seconds") if moment else "-"


def job_time(job: Job) -> JobTime:
    running = not job.is_pending and not job.is_finished
    return JobTime(
        job_id=job.job_id,
        state=job.state,
        nodelist=job.nodelist,
        num_nodes=job.num_nodes,
        start=None if job.is_pending else job.start_time,
        end=job.end_time,
        time_limit=job.time_limit,
        time_used=job.time_used,
        seconds_left=job.time_left if running else None,
    )


def seconds_left(job: Job) -> int:
    """Seconds until the limit; :data:`UNLIMITED_SECONDS` without one; an error unless running."""
    if job.is_pending:
        why = f" ({job.reason})" if job.reason else ""
        raise SlurmkitError(f"job {job.job_id} is pending{why}: it has not started")
    if job.is_finished:
        raise SlurmkitError(f"job {job.job_id} has ended ({job.state})")
    if job.time_limit is None:
        return UNLIMITED_SECONDS
    return max(job.time_left if job.time_left is not None else job.time_limit, 0)


# ---------------------------------------------------------------- changing


@dataclass(frozen=True)
class LimitChange:
    """A parsed ``job extend`` TIME: add ``minutes``, or set the limit to it (None: UNLIMITED)."""

    minutes: int | None
    relative: bool

    @property
    def assignment(self) -> str:
        """The ``scontrol update`` word: ``TimeLimit+=180`` or ``TimeLimit=2-00:00:00``."""
        if self.relative:
            return f"TimeLimit+={self.minutes}"
        if self.minutes is None:
            return "TimeLimit=UNLIMITED"
        return f"TimeLimit={format_limit(self.minutes * 60)}"

    def new_limit(self, current: int | None) -> int | None:
        """The limit in seconds after the change, from the current one (None: UNLIMITED)."""
        if not self.relative:
            return None if self.minutes is None else self.minutes * 60
        if current is None:
            return None
        return current + (self.minutes or 0) * 60


_LONGEST = 40  # characters: far more than any time limit Slurm takes


def parse_change(text: str) -> LimitChange:
    """``+3h``, ``+90m``, ``+1d``, ``+1:30:00`` (add); ``2-00:00:00``, ``90``, UNLIMITED (set)."""
    value = text.strip()
    if not value:
        raise UsageError("no time given: use +3h, +90m, +1d (add) or D-HH:MM:SS (set)")
    if len(value) > _LONGEST:  # a 5000-digit number is no time limit (and int() refuses it)
        raise UsageError(f"{value[:_LONGEST]!r}...: too long for a time limit")
    if timelimit.is_unlimited(value):
        return LimitChange(None, relative=False)
    if value.startswith("-"):
        raise UsageError(
            f"{text!r}: extend only adds time; to lower the limit give the new value (e.g. 30:00)"
        )
    relative = value.startswith("+")
    body = value[1:].strip() if relative else value
    minutes = _unit_minutes(body, text) if relative and body[-1:].isalpha() else None
    if minutes is None:
        if body[-1:].isalpha():
            raise UsageError(
                f"{text!r}: a unit needs a sign: +{body} adds, or give the new limit as D-HH:MM:SS"
            )
        minutes = _slurm_minutes(body, text)
    if minutes <= 0:
        raise UsageError(f"{text!r}: the time must be at least one minute")
    return LimitChange(minutes, relative=relative)


def _unit_minutes(body: str, text: str) -> int:
    """``3h``, ``90m``, ``1d12h`` (:mod:`slurmkit.grammar.duration`), in minutes."""
    try:
        seconds = duration.parse_duration(body, minimum=0)
    except UsageError:
        seconds = None
    if seconds is None or seconds % 60:
        why = "not a duration" if seconds is None else "whole minutes"
        raise UsageError(
            f"{text!r}: {why}; use +<n>d, +<n>h, +<n>m or combined (+1d12h); "
            "Slurm limits are whole minutes, so no seconds"
        ) from None
    return seconds // 60


def _slurm_minutes(body: str, text: str) -> int:
    """Slurm's time formats (:mod:`slurmkit.grammar.timelimit`), in whole minutes."""
    seconds = timelimit.parse_limit(body, what="")
    if seconds is None:
        raise UsageError(f"{text!r}: UNLIMITED sets no limit; it cannot be added")
    if seconds % 60:
        raise UsageError(f"{text!r}: Slurm time limits are whole minutes (it would round up)")
    return seconds // 60


@dataclass(frozen=True)
class ExtendPlan:
    """What ``job extend`` will do: the command, and the limit before and after (seconds)."""

    job_id: str
    change: LimitChange
    before: int | None
    after: int | None

    @property
    def argv(self) -> list[str]:
        from slurmkit.slurm import query

        return query.update_job_argv(self.job_id, self.change.assignment)

    def describe(self) -> str:
        return (
            f"job {self.job_id}: time limit {format_limit(self.before)} -> "
            f"{format_limit(self.after)}"
        )


def plan_extend(job: Job, change: LimitChange) -> ExtendPlan:
    """Check the change makes sense for ``job`` (ended jobs and unlimited ones cannot grow)."""
    if job.is_finished:
        raise SlurmkitError(f"job {job.job_id} has ended ({job.state}): its limit cannot change")
    if change.relative and job.time_limit is None:
        raise UsageError(f"job {job.job_id} has no time limit (UNLIMITED): nothing to extend")
    return ExtendPlan(job.job_id, change, job.time_limit, change.new_limit(job.time_limit))


def journal_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/slurmkit/job-extend.journal`` (a relative XDG_STATE_HOME is ignored)."""
    return files.state_path(JOURNAL_NAME, env)


def open_journal() -> Journal:
    """The journal, its folder created private to the caller when missing."""
    from slurmkit.trust import private_dir

    path = journal_path()
    private_dir(path.parent, what="state directory")
    return Journal(path)


def _verdict(entry_after: Any, entry_before: Any, now: int | None) -> str:
    if now == entry_after:
        return "done"
    if now == entry_before:
        return "not-applied"
    return "changed-otherwise"


def settle(journal: Journal, notify: Notify, *, record: bool = True) -> list[str]:
    """Settle the extends an earlier run left open: read each job, say and record the result.

    ``record=False`` (a dry run) only says. A job Slurm no longer knows is ``job-gone``;
    without an answer the intent stays open.
    """
    from slurmkit.errors import NotFound
    from slurmkit.slurm import query

    texts: list[str] = []
    for entry in (e for e in journal.open_intents() if e.action == EXTEND):
        job_id = str(entry.details.get("job", ""))
        before, after = entry.details.get("before"), entry.details.get("after")
        change = f"{format_limit(before)} -> {format_limit(after)}"
        try:
            limit = query.job(job_id).time_limit
        except NotFound:
            result, text = "job-gone", f"job {job_id}: the earlier extend {change}: job is gone"
        except SlurmError as exc:
            texts.append(f"job {job_id}: the earlier extend {change} is still unknown ({exc})")
            continue
        else:
            result = _verdict(after, before, limit)
            what = {
                "done": "went through",
                "not-applied": "was not applied",
                "changed-otherwise": f"left the limit at {format_limit(limit)}",
            }[result]
            text = f"job {job_id}: the earlier extend {change} {what}"
        if record:
            journal.outcome(entry.token, EXTEND, result, reconciled=True)
        texts.append(text)
    if texts:
        notify("; ".join(texts))
    return texts


def apply_extend(
    plan: ExtendPlan, journal: Journal | None = None, notify: Notify | None = None
) -> Job:
    """Run the ``scontrol update`` and return the job as Slurm reports it afterwards.

    With ``journal``: intent first (nothing is done when it cannot be written), outcome
    after; an update without an answer is checked by reading the job again.
    """
    from slurmkit.slurm import query

    token = None
    if journal is not None:
        journal.check_writable()
        token = journal.intent(EXTEND, job=plan.job_id, before=plan.before, after=plan.after)
    try:
        query.update_job(plan.job_id, plan.change.assignment)
    except SlurmError as exc:
        if not recheck.no_answer(exc):
            _close(journal, token, "failed", error=str(exc))
            _refused(plan, exc)
            raise
        job, error = recheck.read_again(
            lambda: query.job(plan.job_id),
            what=f"job {plan.job_id}",
            notify=notify,
            # a woken slurmctld may answer before it runs the update still in its backlog
            until=lambda now: now is not None and now.time_limit != plan.before,
        )
        if job is None:
            raise ControllerUnreachable(
                f"scontrol update of job {plan.job_id} got no answer and Slurm still does not "
                f"answer ({error}): whether its limit changed is unknown; the next "
                "`slurmkit job extend` says (and records it)"
            ) from None
        faultpoint.reached("job-extend.after-update")
        _close(journal, token, _verdict(plan.after, plan.before, job.time_limit), checked=True)
        return job
    faultpoint.reached("job-extend.after-update")
    job = query.job(plan.job_id)
    _close(journal, token, _verdict(plan.after, plan.before, job.time_limit))
    return job


def _close(journal: Journal | None, token: str | None, result: str, **details: Any) -> None:
    if journal is not None and token is not None:
        journal.outcome(token, EXTEND, result, **details)


def _refused(plan: ExtendPlan, exc: SlurmError) -> None:
    """A refusal of a raise gets the explanation of who may raise a limit."""
    if isinstance(exc, PermissionDenied):
        raise PermissionDenied(
            f"Slurm refused to change the time limit of job {plan.job_id} ({exc}): only Slurm "
            "operators, administrators and root can raise a running job's limit; ask one to "
            f"run: scontrol update JobId={plan.job_id} {plan.change.assignment}",
            exc.argv,
            exc.returncode,
            exc.stderr,
        ) from exc
