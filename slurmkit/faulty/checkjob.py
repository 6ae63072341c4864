"""Run a check template as one batch job: render, submit, wait with progress, read its log.

Used by ``faulty scan`` and ``cpus check``. The wait polls ``squeue --states=all``
(one call per poll, which also reports the final state for a while after the job
ended) and falls back to ``sacct``. A job still pending at the deadline is
cancelled and reported with squeue's pending reason; a running one is cancelled and
its partial log read, so the nodes that had not reported show up as unknown.

sbatch reads the script on stdin; a copy and the log go to ``work_dir`` (absolute),
which must be on a file system the nodes share with this machine (the batch host
writes the log there) and must belong to the caller or root, writable by nobody else.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurmkit.errors import SlurmError, SlurmkitError
from slurmkit.slurm import query
from slurmkit.slurm.records import Job

Progress = Callable[[str], None]
PROGRESS_EVERY = 10.0
FIRST_POLL = 0.25
MAX_POLL = 2.0
CANCEL_GRACE = 15.0
LOG_GRACE = 5.0


class NeverStarted(SlurmkitError):
    """The check job was still pending at the deadline (it was cancelled)."""


@dataclass(frozen=True)
class CheckJob:
    job_id: str
    name: str
    script: Path
    log: Path


@dataclass(frozen=True)
class Finished:
    """How the job ended; ``timed_out``: our deadline cancelled it while it ran."""

    job: CheckJob
    state: str
    nodelist: str
    log_text: str
    timed_out: bool
    seconds: float


def time_limit(timeout: float) -> str:
    """A job time limit (HH:MM:SS) no longer than the wait, at least one minute."""
    minutes = max(1, int(timeout // 60))
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


def submit_check(
    template: str,
    values: Mapping[str, Any],
    work_dir: Path,
    prefix: str,
    extra_sbatch: tuple[str, ...] = (),
    sets: Mapping[str, str] | None = None,
) -> CheckJob:
    """Render ``template`` (site config < ``values`` < ``sets``) and submit it on sbatch's stdin.

    ``work_dir`` gets the job's log, which we read back, and a copy of the script: it
    must be ours and writable by nobody else (see :func:`submit_rendered`).
    """
    from slurmkit.templating import config, render_template
    from slurmkit.templating.submit import submit_rendered, trusted_folder

    folder = trusted_folder(work_dir, "--dir")
    name = f"{prefix}-{secrets.token_hex(3)}"
    overrides = {**values, **(sets or {}), "job_name": name, "log_dir": str(folder)}
    rendered = render_template(template, overrides=overrides, site=config.load())
    job_id, submission = submit_rendered(
        rendered.text, folder, rendered.template.name, extra_sbatch, "--dir"
    )
    return CheckJob(
        job_id=job_id, name=name, script=submission.record, log=folder / f"{name}-{job_id}.out"
    )


def wait(job: CheckJob, timeout: float, progress: Progress, poll: float = MAX_POLL) -> Finished:
    """Wait for the job to end; cancel it at ``timeout`` (NeverStarted if it never ran).

    squeue is asked every FIRST_POLL s at first, then less and less often up to every
    ``poll`` s: a check job often ends within seconds, a queued one may wait long.
    """
    start = time.monotonic()
    interval = min(FIRST_POLL, poll)
    started = False
    nodelist = ""
    shown = ("", -PROGRESS_EVERY)
    timed_out = False
    while True:
        row = _row(job.job_id)
        elapsed = time.monotonic() - start
        if row is None or row.is_finished:
            break
        started = started or not row.is_pending
        nodelist = row.nodelist or nodelist
        shown = _show(job, row, elapsed, shown, progress)
        if elapsed >= timeout:
            cancel(job.job_id)
            if not started:
                raise NeverStarted(
                    f"check job {job.job_id} did not start within {timeout:g} s "
                    f"(pending: {row.reason or 'no reason given'}); cancelled it"
                )
            progress(f"slurmkit: timeout after {timeout:g} s: cancelled job {job.job_id}")
            timed_out = True
            _wait_gone(job.job_id, CANCEL_GRACE, FIRST_POLL)
            break
        time.sleep(max(0.0, min(interval, timeout - elapsed)))
        interval = min(interval * 1.5, poll)
    state, final_nodes = _final(job.job_id, row)
    return Finished(
        job=job,
        state=state,
        nodelist=final_nodes or nodelist,
        log_text=_read_log(job.log, LOG_GRACE if started or state != "CANCELLED" else 0.0),
        timed_out=timed_out,
        seconds=time.monotonic() - start,
    )


def cancel(job_id: str) -> None:
    """scancel our own job; a job already gone is fine."""
    with contextlib.suppress(SlurmError):
        query.cancel(job_id)


def _row(job_id: str) -> Job | None:
    rows = query.jobs(job_ids=job_id, states="all")
    return rows[0] if rows else None


def _show(
    job: CheckJob, row: Job, elapsed: float, shown: tuple[str, float], progress: Progress
) -> tuple[str, float]:
    where = f"({row.reason})" if row.is_pending else f"on {row.nodelist}"
    text = f"{row.state} {where}"
    if text != shown[0] or elapsed - shown[1] >= PROGRESS_EVERY:
        progress(f"slurmkit: job {job.job_id} {text}, {elapsed:.0f} s")
        return text, elapsed
    return shown


def _wait_gone(job_id: str, grace: float, poll: float) -> None:
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        row = _row(job_id)
        if row is None or row.is_finished:
            return
        time.sleep(poll)


def _final(job_id: str, row: Job | None) -> tuple[str, str]:
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


def _read_log(path: Path, grace: float) -> str:
    """The log's text; the batch host may write it a moment after the job ends."""
    deadline = time.monotonic() + grace
    while True:
        try:
            return path.read_text(errors="replace")
        except FileNotFoundError:
            if time.monotonic() >= deadline:
                return ""
            time.sleep(FIRST_POLL)
