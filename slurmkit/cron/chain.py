"""Starting and stopping the scheduler chains of a cron dir.

A chain is every job of the user named ``<prefix>-<period>``. ``start`` submits a
period's scheduler only when no job of its chain is pending or running, so starting
twice leaves one chain; should two starts race, the scheduler's own guard (a run that
sees another run of its chain pending queues nothing) and ``--dependency=singleton``
still leave one. ``stop`` cancels by name and user and then watches the queue until
nothing of the chain is left: a run that was between its ``squeue`` and its ``sbatch``
when cancelled can still queue a next run, which is cancelled too.

Both write their intent to the cron dir's journal first and the outcome after
(:mod:`.journaling`); the first run of a chain carries ``--comment=slurmkit:<token>``.
An sbatch or scancel that gets no answer is "unknown, checked again": the queue is
read again (bounded, :mod:`slurmkit.slurm.recheck`) and the checked answer is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from slurmkit import faultpoint
from slurmkit.cron.layout import CronConfig, CronDir
from slurmkit.cron.period import Period, begin_value, next_at
from slurmkit.errors import ControllerUnreachable, SlurmError, UsageError
from slurmkit.journal import Journal, comment_for
from slurmkit.slurm import query, recheck
from slurmkit.slurm.records import Job
from slurmkit.slurm.submit import current_user

Notify = Callable[[str], None]


def _quiet(message: str) -> None:
    """The default ``notify``: library callers that want no progress lines."""


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
    token: str | None = None
    checked: bool = False  # sbatch gave no answer; the job was found in the queue afterwards

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
    journal: Journal | None = None,
    notify: Notify = _quiet,
) -> list[StartOutcome]:
    """Submit the scheduler of each period that has no live chain.

    With ``journal``: intent before each sbatch, outcome after (see the module doc).
    """
    from slurmkit.slurm.submit import sbatch_argv

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
            _submit_chain(outcome, script, extra, user, journal, notify)
        outcomes.append(outcome)
    return outcomes


def _submit_chain(
    outcome: StartOutcome,
    script: Path,
    extra: list[str],
    user: str,
    journal: Journal | None,
    notify: Notify,
) -> None:
    """One first run: intent, sbatch with the token, outcome; no answer: look in the queue."""
    from slurmkit.slurm.submit import submit

    chain = outcome.chain
    if journal is not None:
        outcome.token = journal.intent("cron-start", chain=chain, period=outcome.period)
        extra = [*extra, f"--comment={comment_for(outcome.token)}"]
    try:
        outcome.job_id = submit(script, extra)
    except SlurmError as exc:
        if not recheck.no_answer(exc):
            _close(journal, outcome.token, "cron-start", "failed", error=str(exc))
            raise
        jobs, error = recheck.read_again(
            lambda: chain_jobs([chain], user)[chain],
            what=f"the queue for {chain}",
            notify=notify,
            until=bool,  # absent may only mean "not processed yet": look for the whole window
        )
        if jobs is None:
            raise ControllerUnreachable(
                f"sbatch of {chain} got no answer and Slurm still does not answer ({error}): "
                "the chain may have been queued; `slurmkit cron status` (or start) tells, and "
                "records it in the journal"
            ) from None
        if not jobs:
            _close(journal, outcome.token, "cron-start", "not-queued", error=str(exc))
            raise SlurmError(
                f"sbatch of {chain} got no answer ({exc}) and the chain is not in the queue: "
                "nothing was started; run `slurmkit cron start` again"
            ) from None
        outcome.job_id, outcome.checked = jobs[0].job_id, True
        notify(f"{chain}: sbatch got no answer, but job {outcome.job_id} of the chain is queued")
    faultpoint.reached("cron.after-submit")
    outcome.action = "submitted"
    _close(journal, outcome.token, "cron-start", "done", jobs=[outcome.job_id])


def _close(journal: Journal | None, token: str | None, action: str, result: str, **kw) -> None:
    if journal is not None and token is not None:
        journal.outcome(token, action, result, **kw)


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
    journal: Journal | None = None,
    notify: Notify = _quiet,
) -> list[StopOutcome]:
    """Cancel each chain of the plan by name and user; cancel again whatever it queues meanwhile.

    Returns with ``left`` empty for every chain once nothing of it is pending or
    running, or with the ids still there after ``timeout`` seconds. A scancel that
    gets no answer is followed by one look at the queue: a controller that answers
    it goes on as before; one that is silent too is hung, so the chains not yet asked
    are not asked (each would cost the same timeout, and reach nothing) and
    ControllerUnreachable says which were asked to cancel. The intents of the chains
    asked stay open for ``cron status`` to settle.
    """
    user = current_user()
    todo = [o for o in plan if o.jobs]
    tokens: dict[str, str] = {}
    for outcome in todo:
        if journal is not None:
            tokens[outcome.chain] = journal.intent(
                "cron-stop", chain=outcome.chain, period=outcome.period, jobs=outcome.jobs
            )
        silent = _cancel(outcome.chain, user)
        outcome.cancelled = True
        if silent:
            _unless_hung(todo, user)
    faultpoint.reached("cron.after-cancel")
    deadline = time.monotonic() + timeout
    while todo:
        names = [o.chain for o in todo]
        live, error = recheck.read_again(
            lambda names=names: chain_jobs(names, user),  # type: ignore[misc]
            what="the queue",
            notify=None,
            within=max(0.0, min(recheck.window(), deadline - time.monotonic())),
        )
        if live is None and error is not None and not recheck.no_answer(error):
            raise error
        if live is None:
            raise ControllerUnreachable(
                f"asked to cancel {', '.join(o.chain for o in todo)}, but Slurm does not answer "
                f"({error}): whether they stopped is unknown; `slurmkit cron status` tells"
            )
        for outcome in todo:
            outcome.left = [j.job_id for j in live[outcome.chain]]
            if any(j.is_pending for j in live[outcome.chain]):
                _cancel(outcome.chain, user)
        for outcome in todo:
            if not outcome.left and outcome.chain in tokens:
                _close(journal, tokens.pop(outcome.chain), "cron-stop", "done")
        todo = [o for o in todo if o.left]
        if not todo or time.monotonic() > deadline:
            break
        notify(f"waiting for {', '.join(o.chain for o in todo)} to leave the queue")
        sleep(0.5)
    for outcome in todo:
        token = tokens.pop(outcome.chain, None)
        _close(journal, token, "cron-stop", "incomplete", jobs=outcome.left)
    return list(plan)


def _unless_hung(todo: Sequence[StopOutcome], user: str) -> None:
    """After a silent scancel: one read of the queue. Silent too: stop asking, say so.

    A hung slurmctld costs each scancel its timeout (two MessageTimeouts: by name, scancel
    lists the jobs first) and nothing reaches it; three chains cost 81 s and were then
    reported "cancelled" (issue 29). One read decides between "still hung" and "awake".
    """
    try:
        chain_jobs([o.chain for o in todo], user)
    except SlurmError as exc:
        if not recheck.no_answer(exc):
            raise
        asked = [o.chain for o in todo if o.cancelled]
        unasked = [o.chain for o in todo if not o.cancelled]
        rest = f"; not asked: {', '.join(unasked)}" if unasked else ""
        raise ControllerUnreachable(
            f"asked to cancel {', '.join(asked)}{rest}, but Slurm does not answer ({exc}): "
            "whether they stopped is unknown; `slurmkit cron status` tells, and "
            "`slurmkit cron stop` again stops the rest once Slurm answers"
        ) from None


def _cancel(chain: str, user: str) -> bool:
    """scancel by name; True when it got no answer (the queue read after it decides)."""
    try:
        query.cancel_by_name(chain, user)
    except SlurmError as exc:
        if not recheck.no_answer(exc):
            raise
        return True
    return False
