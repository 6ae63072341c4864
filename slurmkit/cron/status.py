"""Is each chain of a cron dir alive and on time? Shared by ``cron status`` and ``watch cron``.

Two sources, read once: ``squeue`` (one call for all chains: is a run pending or
running, when does the next one start) and the state file each run replaces (when
did it last run, what did it launch). The verdict per chain, worst first:

``gone``    no job of the chain is pending or running: nothing will ever run again;
``stuck``   its only queued run waits for a person (held, dependency never satisfied);
``error``   the last run could not look at its folder (missing folder);
``late``    the last run is older than the period plus a grace;
``failed``  the last run could not submit some jobs (sbatch refused them);
``ok``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from slurmkit.cron.chain import chain_jobs
from slurmkit.cron.layout import CronConfig, CronDir
from slurmkit.cron.period import Period
from slurmkit.cron.state import LastRun, read_state
from slurmkit.grammar.duration import human_duration
from slurmkit.slurm.liveness import can_run, is_running, stuck_reason
from slurmkit.slurm.records import Job
from slurmkit.slurm.submit import current_user

HEALTHY = frozenset({"ok"})
MIN_GRACE_SECONDS = 300


def default_grace(period_seconds: int) -> int:
    """How late a run may be before it counts as late: a tenth of the period, at least 5 min."""
    return max(MIN_GRACE_SECONDS, period_seconds // 10)


@dataclass
class ChainStatus:
    period: str
    seconds: int
    chain: str
    health: str
    message: str
    jobs: list[Job] = field(default_factory=list)
    last: LastRun | None = None
    log: Path | None = None

    @property
    def healthy(self) -> bool:
        return self.health in HEALTHY

    @property
    def queued(self) -> Job | None:
        """The next run: the pending job (the earliest, should there be several)."""
        pending = [j for j in self.jobs if j.is_pending]
        return min(pending, key=lambda j: int(j.job_id)) if pending else None

    @property
    def running(self) -> Job | None:
        return next((j for j in self.jobs if is_running(j)), None)

    def to_json(self) -> dict[str, object]:
        queued, running, last = self.queued, self.running, self.last
        return {
            "period": self.period,
            "seconds": self.seconds,
            "chain": self.chain,
            "health": self.health,
            "message": self.message,
            "queued_job": queued.job_id if queued else None,
            "queued_reason": queued.reason if queued else None,
            "next_start": queued.start_time if queued else None,
            "running_job": running.job_id if running else None,
            "jobs": [{"job_id": j.job_id, "state": j.state, "reason": j.reason} for j in self.jobs],
            "last_run": last.last_run if last else None,
            "last_job": last.job_id if last else None,
            "last_log": str(self.log) if self.log else None,
            "launched": [{"job_id": x.job_id, "file": x.file} for x in last.launched]
            if last
            else [],
            "failed_files": list(last.failed_files) if last else [],
            "error": (last.error or last.problem) if last else None,
        }


def assess(
    period_seconds: int,
    jobs: Sequence[Job],
    last: LastRun | None,
    now: datetime,
    grace: int,
) -> tuple[str, str]:
    """(health, message) of one chain from its live jobs and its last recorded run."""
    if not jobs:
        if last is None:
            return "gone", "no job of the chain is queued: never started, or stopped before a run"
        return "gone", "no job of the chain is pending or running: the chain has ended"
    if not any(can_run(j) for j in jobs):
        why = "; ".join(f"job {j.job_id} {stuck_reason(j)}" for j in jobs)
        return "stuck", f"the chain's next run will not start by itself: {why}"
    if last is not None and last.error:
        return "error", f"last run (job {last.job_id}) failed: {last.error}"
    reference = last.last_run if last is not None and last.last_run else _first_submit(jobs)
    allowed = period_seconds + grace
    if reference is not None and not any(is_running(j) for j in jobs):
        age = int((now - reference).total_seconds())
        if age > allowed:
            what = "last run" if last is not None and last.last_run else "queued"
            return "late", (
                f"{what} {human_duration(age)} ago, more than the period "
                f"{human_duration(period_seconds)} + grace {human_duration(grace)}"
            )
    if last is not None and last.failed:
        files = ", ".join(last.failed_files) or f"{last.failed} file(s)"
        return "failed", f"last run (job {last.job_id}) could not submit: {files}"
    return "ok", _ok_message(jobs, last, now)


def _first_submit(jobs: Sequence[Job]) -> datetime | None:
    times = [j.submit_time for j in jobs if j.submit_time]
    return min(times) if times else None


def _ok_message(jobs: Sequence[Job], last: LastRun | None, now: datetime) -> str:
    head = "running now" if any(is_running(j) for j in jobs) else "next run queued"
    if last is None or last.last_run is None:
        return f"{head}; no run recorded yet"
    age = human_duration((now - last.last_run).total_seconds())
    return f"{head}; last run {age} ago launched {last.submitted} job(s)"


def chain_statuses(
    cron: CronDir,
    config: CronConfig,
    periods: Sequence[Period] | None = None,
    *,
    now: datetime | None = None,
    grace: int | None = None,
) -> list[ChainStatus]:
    """The status of each chain (all periods by default), with one ``squeue``."""
    chosen = list(periods) if periods is not None else list(config.periods)
    moment = now or datetime.now().astimezone()
    live = chain_jobs([config.chain_name(p) for p in chosen], current_user())
    out = []
    for period in chosen:
        chain = config.chain_name(period)
        last = read_state(cron.state_file(chain))
        jobs = live[chain]
        chain_grace = grace if grace is not None else default_grace(period.seconds)
        health, message = assess(period.seconds, jobs, last, moment, chain_grace)
        log = cron.log(chain, last.job_id) if last and last.job_id else None
        out.append(
            ChainStatus(period.name, period.seconds, chain, health, message, jobs, last, log)
        )
    return out
