"""``watch job``: is a job of this name running, or pending and able to run?

The seed's ``slurm-status`` ran as a job with the very name it watched, so it always
found itself and could never alert. Here the watchdog's own job
(``$SLURM_JOB_ID``) and every task of its own array (``$SLURM_ARRAY_JOB_ID``) are
never counted. A held job, or one waiting on a dependency that can never be
satisfied, is queued but not alive. A failing ``squeue`` is itself an alert: a
watchdog that cannot see the queue cannot say the job is fine.

When nothing of the name is queued any more, the alert says how the last one ended:
one more squeue (finished jobs slurmctld still holds), and for a job that ended badly
the headline of ``slurmkit why`` (:func:`slurmkit.why.explain.explain`), so the page
reads "job 58 out of memory: ..." instead of only "no job named train".
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from slurmkit.errors import SlurmError, SlurmkitError
from slurmkit.slurm import query
from slurmkit.slurm.liveness import can_run, is_running, stuck_reason
from slurmkit.slurm.records import Job
from slurmkit.watch.finding import WatchFinding


@dataclass(frozen=True)
class OwnJob:
    """The watchdog's own job ids, when it runs inside Slurm."""

    job_id: str | None = None
    array_job_id: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OwnJob:
        env = os.environ if environ is None else environ
        return cls(env.get("SLURM_JOB_ID") or None, env.get("SLURM_ARRAY_JOB_ID") or None)

    def owns(self, job: Job) -> bool:
        ids = {i for i in (self.job_id, self.array_job_id) if i}
        if job.job_id in ids:
            return True
        return bool(self.array_job_id) and job.array_job_id == self.array_job_id


def _describe(job: Job) -> str:
    if is_running(job):
        where = f" on {job.nodelist}" if job.nodelist else ""
        return f"job {job.display_id} {job.state}{where}"
    stuck = stuck_reason(job)
    if stuck:
        return f"job {job.display_id} PENDING, {stuck}"
    reason = f" ({job.reason})" if job.reason else ""
    start = (
        f", expected start {job.start_time.isoformat(timespec='seconds')}"
        if (job.start_time)
        else ""
    )
    return f"job {job.display_id} {job.state}{reason}{start}"


def assess_jobs(jobs: Sequence[Job], name: str, user: str | None, me: OwnJob) -> WatchFinding:
    """The verdict for the jobs ``squeue --name`` returned."""
    who = f" of user {user}" if user else ""
    subject = f"job {name}" + (f" ({user})" if user else "")
    key = f"job:{user or '*'}:{name}"
    own = [j for j in jobs if me.owns(j)]
    others = [j for j in jobs if not me.owns(j) and j.name == name and not j.is_finished]
    alive = [j for j in others if can_run(j)]
    details = {"jobs": [_describe(j) for j in others], "ignored_self": [j.job_id for j in own]}
    if alive:
        best = sorted(alive, key=lambda j: (not is_running(j), int(j.job_id or 0)))
        return WatchFinding(
            "job", key, subject, True, "; ".join(_describe(j) for j in best), details
        )
    if others:
        why = "; ".join(_describe(j) for j in others)
        return WatchFinding("job", key, subject, False, f"no job can run: {why}", details)
    message = f"no job named {name}{who} is running or queued"
    if own:
        message += f" (only this watchdog, job {own[0].job_id}, has that name)"
    return WatchFinding("job", key, subject, False, message, details)


Explainer = Callable[[str], str]


def check_job(
    name: str, user: str | None, me: OwnJob | None = None, *, explain: Explainer | None = None
) -> WatchFinding:
    """One ``squeue --name=NAME [--user=USER]``; a failure is an alerting finding.

    When no job of the name is queued, one more squeue finds how the last one ended,
    and ``explain`` (``why``'s headline by default) says why, if it ended badly.
    """
    me = me if me is not None else OwnJob.from_env()
    try:
        jobs = query.jobs(name=name, user=user)
    except SlurmError as exc:
        subject = f"job {name}" + (f" ({user})" if user else "")
        return WatchFinding(
            "job", f"job:{user or '*'}:{name}", subject, False, f"cannot read the queue: {exc}"
        )
    finding = assess_jobs(jobs, name, user, me)
    if finding.healthy or finding.details.get("jobs"):
        return finding
    return with_ended_verdict(finding, name, user, me, explain or why_headline)


def with_ended_verdict(
    finding: WatchFinding, name: str, user: str | None, me: OwnJob, explain: Explainer
) -> WatchFinding:
    """The alert, with how the last job of the name ended when it ended badly."""
    try:
        found = query.jobs(name=name, user=user, states="all")
    except SlurmError:
        return finding
    ended = [j for j in found if j.is_finished and j.name == name and not me.owns(j)]
    if not ended:
        return finding
    last = max(ended, key=lambda j: (j.end_time.timestamp() if j.end_time else 0.0, j.job_id))
    if last.state == "COMPLETED":
        return finding
    headline = explain(last.display_id) or f"job {last.display_id} ended {last.state}"
    details = {**finding.details, "last_job": last.display_id, "verdict": headline}
    return replace(finding, message=f"{finding.message}; last: {headline}", details=details)


def why_headline(job_id: str) -> str:
    """``slurmkit why``'s one-line verdict for an ended job; "" when it cannot be had."""
    try:
        from slurmkit.why import explain
    except ImportError:  # an install without the why package
        return ""
    try:
        return explain.explain(job_id).headline
    except (SlurmkitError, OSError):
        return ""
