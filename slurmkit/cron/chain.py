"""Starting and stopping the scheduler chains of a cron dir.

A chain is every job of the user named ``<prefix>-<period>``. ``start`` submits a
period's scheduler only when no job of its chain is pending or running, so starting
twice leaves one chain; should two starts race, the scheduler's own guard (a run that
sees another run of its chain pending queues nothing) and ``--dependency=singleton``
still leave one. ``stop`` cancels by name and user and then watches the queue until
nothing of the chain is left: a run that was between its ``squeue`` and its ``sbatch``
when cancelled can still queue a next run, which is cancelled too.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from slurmkit.cron.layout import CronConfig, CronDir
from slurmkit.cron.period import Period, begin_value, next_at
from slurmkit.errors import UsageError
from slurmkit.slurm import query
from slurmkit.slurm.records import Job


def current_user() -> str:
    """The user Slurm runs our jobs as (the real uid; $USER can lie under sudo)."""
    return pwd.getpwuid(os.getuid()).pw_name


def is_alive(job: Job) -> bool:
    """Pending, running or suspended; a COMPLETING job is on its way out and keeps nothing going."""
    return not job.is_finished and job.state != "COMPLETING"


def chain_jobs(names: Sequence[str], user: str) -> dict[str, list[Job]]:
    """The live jobs of each chain, by name, from one ``squeue``."""
    found: dict[str, list[Job]] = {name: [] for name in names}
    if not names:
        return found
    for job in query.jobs(user=user, name=",".join(names)):
        if job.name in found and is_alive(job):
            found[job.name].append(job)
    return found


@dataclass
class StartOutcome:
    """``submitted``, ``running`` (a job of the chain exists: nothing submitted) or ``dry-run``."""

    period: str
    chain: str
    action: str
    job_id: str | None = None
    existing: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    begin: str | None = None

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def start_argv_extra(cron: CronDir, config: CronConfig, period: Period, now: datetime) -> list[str]:
    """sbatch options for a chain's first run: its folder, and for ``--at`` daily its time."""
    extra = [f"--chdir={cron.scheduler}"]
    if period.name == "daily" and config.at:
        extra.append(f"--begin={begin_value(next_at(config.at, now))}")
    return extra


def start_chains(
    cron: CronDir,
    config: CronConfig,
    periods: Sequence[Period],
    *,
    dry_run: bool = False,
    now: datetime | None = None,
) -> list[StartOutcome]:
    """Submit the scheduler of each period that has no live chain."""
    from slurmkit.templating.submit import sbatch_argv, submit

    moment = now or datetime.now()
    user = current_user()
    live = chain_jobs([config.chain_name(p) for p in periods], user)
    outcomes = []
    for period in periods:
        chain = config.chain_name(period)
        script = cron.script(chain)
        if not script.is_file():
            raise UsageError(f"{script} is missing: run `slurmkit cron init {cron.root}` again")
        extra = start_argv_extra(cron, config, period, moment)
        begin = next((e.split("=", 1)[1] for e in extra if e.startswith("--begin=")), None)
        outcome = StartOutcome(
            period.name, chain, "dry-run", argv=sbatch_argv(script, extra), begin=begin
        )
        if live[chain]:
            outcome.action = "running"
            outcome.existing = [j.job_id for j in live[chain]]
        elif not dry_run:
            outcome.job_id = submit(script, extra)
            outcome.action = "submitted"
        outcomes.append(outcome)
    return outcomes


@dataclass
class StopOutcome:
    period: str
    chain: str
    jobs: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    cancelled: bool = False

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def stop_plan(config: CronConfig, periods: Sequence[Period]) -> list[StopOutcome]:
    """What ``stop`` would cancel: the live jobs of each chain."""
    live = chain_jobs([config.chain_name(p) for p in periods], current_user())
    return [
        StopOutcome(
            p.name, config.chain_name(p), jobs=[j.job_id for j in live[config.chain_name(p)]]
        )
        for p in periods
    ]


def stop_chains(
    plan: Sequence[StopOutcome],
    *,
    timeout: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
) -> list[StopOutcome]:
    """Cancel each chain of the plan by name and user; cancel again whatever it queues meanwhile.

    Returns with ``left`` empty for every chain once nothing of it is pending or
    running, or with the ids still there after ``timeout`` seconds.
    """
    user = current_user()
    todo = [o for o in plan if o.jobs]
    for outcome in todo:
        query.cancel_by_name(outcome.chain, user)
        outcome.cancelled = True
    deadline = time.monotonic() + timeout
    while todo:
        live = chain_jobs([o.chain for o in todo], user)
        for outcome in todo:
            outcome.left = [j.job_id for j in live[outcome.chain]]
            if any(j.is_pending for j in live[outcome.chain]):
                query.cancel_by_name(outcome.chain, user)
        todo = [o for o in todo if o.left]
        if not todo or time.monotonic() > deadline:
            break
        sleep(0.5)
    return list(plan)
