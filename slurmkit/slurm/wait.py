"""Wait for one job to reach a final state: bounded, with progress, one Slurm call a poll.

Every command that waits for a job it submitted (``faulty scan`` and ``cpus check``
through :mod:`slurmkit.checkjob`, the check runner's wait for a cancelled job to
leave) polls through :func:`until_final`, so the polling rules live in one place:

- one ``squeue --states=all`` per poll (it keeps a finished job's record for a
  while, so the final state usually comes from the same call), never a call per
  node or per array task;
- polls start fast (``first_poll``: a check job often ends within seconds) and slow
  down by half each time up to ``poll`` (a queued job may wait long);
- progress goes to the caller's callable (the CLI: stderr) when the job's state or
  place changes, and at least every ``every`` seconds while it does not;
- the deadline is never exceeded by a sleep; what to do at the deadline (cancel,
  raise, go on) is the caller's decision: :func:`until_final` only reports it.

:func:`final_state` then reads how the job ended: squeue's record while it has one,
else sacct's (one call).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from slurmkit.errors import SlurmError
from slurmkit.slurm import query
from slurmkit.slurm.records import Job

Progress = Callable[[str], None]
Reader = Callable[[str], "Job | None"]

FIRST_POLL = 0.25
MAX_POLL = 2.0
PROGRESS_EVERY = 10.0


@dataclass(frozen=True)
class Watched:
    """What the wait saw: the last row (None once the queue forgot the job).

    ``deadline``: the timeout came while the job was still pending or running
    (nothing was done about it). ``started``: it was seen out of PENDING at least once.
    """

    job_id: str
    row: Job | None
    started: bool
    nodelist: str
    deadline: bool
    seconds: float


def read_row(job_id: str) -> Job | None:
    """The job's queue row (one ``squeue --states=all``), None when the queue has none."""
    rows = query.jobs(job_ids=job_id, states="all")
    return rows[0] if rows else None


def quiet(_: str) -> None:
    """Progress that shows nothing."""


def until_final(
    job_id: str,
    timeout: float,
    progress: Progress = quiet,
    *,
    poll: float = MAX_POLL,
    first_poll: float = FIRST_POLL,
    read: Reader = read_row,
    every: float = PROGRESS_EVERY,
) -> Watched:
    """Poll ``job_id`` until it is finished or gone, or ``timeout`` seconds have passed.

    ``read`` answers one poll (default: :func:`read_row`); a caller passes its own to
    handle a controller that stops answering in its own words. Progress lines read
    ``slurmkit: job <id> <STATE> (<reason>)|on <nodes>, <n> s``.
    """
    start = time.monotonic()
    interval = min(first_poll, poll)
    started = False
    nodelist = ""
    shown = ("", -every)
    while True:
        row = read(job_id)
        elapsed = time.monotonic() - start
        if row is None or row.is_finished:
            return Watched(job_id, row, started, nodelist, False, elapsed)
        started = started or not row.is_pending
        nodelist = row.nodelist or nodelist
        shown = _show(job_id, row, elapsed, shown, progress, every)
        if elapsed >= timeout:
            return Watched(job_id, row, started, nodelist, True, elapsed)
        time.sleep(max(0.0, min(interval, timeout - elapsed)))
        interval = min(interval * 1.5, poll)


def final_state(job_id: str, row: Job | None) -> tuple[str, str]:
    """(state, nodelist) of the ended job: squeue's record while it has one, else sacct's."""
    if row is not None and row.is_finished:
        return row.state, row.nodelist
    try:
        found = query.sacct_jobs(job_ids=job_id)
    except SlurmError:
        found = []
    mine = [j for j in found if j.job_id == job_id]
    if mine:
        return mine[0].state, mine[0].nodelist
    return (row.state if row else "UNKNOWN"), (row.nodelist if row else "")


def _show(
    job_id: str,
    row: Job,
    elapsed: float,
    shown: tuple[str, float],
    progress: Progress,
    every: float,
) -> tuple[str, float]:
    where = f"({row.reason})" if row.is_pending else f"on {row.nodelist}"
    text = f"{row.state} {where}"
    if text != shown[0] or elapsed - shown[1] >= every:
        progress(f"slurmkit: job {job_id} {text}, {elapsed:.0f} s")
        return text, elapsed
    return shown
