"""The cron dir's journal (``DIR/journal``) and its lock: what start/stop meant to do.

``cron start`` and ``cron stop`` append an intent (chain, period, token) and fsync it
before they submit or cancel, and the outcome after (:mod:`slurmkit.journal`). The
first run of a chain carries ``--comment=slurmkit:<token>``. A command killed in
between, or an sbatch/scancel that got no answer from a hung slurmctld, leaves the
intent open; the next ``cron start``, ``cron stop`` or ``cron status`` on the dir
asks the queue what became of it (:func:`reconcile`), records the answer and says so
in one line on stderr. The chain's own guard (one queued run per chain name) is what
keeps a retried start from making a second chain; the journal is what keeps the
record true.

Start and stop hold ``DIR/scheduler/cron.lock`` with a bounded wait, so a settle and
a submission of two commands never interleave.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from slurmkit import locks
from slurmkit.cron.layout import CronDir
from slurmkit.errors import SlurmError
from slurmkit.journal import Journal, JournalProblem

JOURNAL = "journal"
LOCK = "cron.lock"
LOCK_WAIT = 30.0
START = "cron-start"
STOP = "cron-stop"

Notify = Callable[[str], None]


def journal_of(cron: CronDir) -> Journal:
    return Journal(cron.root / JOURNAL)


def lock_path(cron: CronDir) -> Path:
    return cron.scheduler / LOCK


@contextmanager
def locked(
    cron: CronDir, wait: float | None = None, notify: Notify | None = None
) -> Iterator[None]:
    """Serialise start/stop/settle on one cron dir; past ``wait`` s: LockBusy (exit 2)."""
    limit = LOCK_WAIT if wait is None else wait
    what = f"cron dir {cron.root}"
    with locks.hold(lock_path(cron), wait=limit, what=what, notify=notify):
        yield


def reconcile(cron: CronDir, notify: Notify, *, record: bool = True) -> list[str]:
    """Settle the intents an earlier start/stop left open; one line on stderr.

    A start is ``done`` when a job of its chain is pending or running (whoever queued
    it: there is one chain), ``not-queued`` otherwise. A stop is ``done`` when nothing
    of the chain is left, ``incomplete`` (job ids named) when something is. Without an
    answer from Slurm the intents stay open. ``record=False`` (or a journal that cannot
    be written) only reports.
    """
    from slurmkit.cron.chain import chain_jobs
    from slurmkit.slurm.submit import current_user

    journal = journal_of(cron)
    pending = [e for e in journal.open_intents() if e.action in (START, STOP)]
    if not pending:
        return []
    chains = sorted({str(e.details.get("chain", "")) for e in pending} - {""})
    try:
        live = chain_jobs(chains, current_user())
    except SlurmError as exc:
        notify(
            f"{len(pending)} start/stop intent(s) in {journal.path} are still open: "
            f"cannot ask the queue ({exc})"
        )
        return []
    texts: list[str] = []
    results: list[tuple[str, str, str, list[str]]] = []
    for entry in pending:
        chain = str(entry.details.get("chain", ""))
        jobs = [j.job_id for j in live.get(chain, [])]
        if entry.action == START:
            result = "done" if jobs else "not-queued"
            text = (
                f"{chain} start went through (job {', '.join(jobs)})"
                if jobs
                else f"{chain} start queued nothing that is alive"
            )
        else:
            result = "incomplete" if jobs else "done"
            text = (
                f"{chain} stop left job {', '.join(jobs)} queued"
                if jobs
                else f"{chain} stop went through"
            )
        results.append((entry.token, entry.action, result, jobs))
        texts.append(text)
    unrecorded = ""
    if record:
        try:
            for token, action, result, jobs in results:
                journal.outcome(token, action, result, jobs=jobs, reconciled=True)
        except JournalProblem as exc:
            unrecorded = f" (not recorded: {exc})"
    notify(f"settled what an earlier cron command left open: {'; '.join(texts)}{unrecorded}")
    return texts
