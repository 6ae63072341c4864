"""Run a check template as one batch job: render, submit, wait with progress, read its log.

Used by ``faulty scan`` and ``cpus check``. The wait is the Slurm layer's
(:mod:`slurmkit.slurm.wait`: one ``squeue --states=all`` per poll, which also reports
the final state for a while after the job ended, then ``sacct``).
A job still pending at the deadline is cancelled and reported with squeue's pending
reason; a running one is cancelled and its partial log read, so the nodes that had not
reported show up as unknown.

sbatch reads the script on stdin; a copy and the log go to ``work_dir`` (absolute),
which must be on a file system the nodes share with this machine (the batch host
writes the log there) and must belong to the caller or root, writable by nobody else.

"No answer" is not "not done" (issue 22): each job carries a unique name and
``--comment=slurmkit:<token>``. An sbatch that times out on a hung slurmctld may still
have queued the job, so the queue is asked for that name for the whole window
(bounded; a controller just woken may answer before it runs the sbatch in its
backlog): a job found is the job of this check; one never listed is cancelled by name
in case it lands late; with no answer either, the error names the job and the
commands that find and remove it. A controller that stops answering while the job
waits or runs gets one ``scancel`` and the error says whether the job may still be
queued, never a plain failure that hides it.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurmkit.errors import ControllerUnreachable, EnvironmentProblem, SlurmError, SlurmkitError
from slurmkit.files import read_text_bounded
from slurmkit.grammar.timelimit import format_limit
from slurmkit.journal import comment_for, new_token
from slurmkit.slurm import query, recheck
from slurmkit.slurm import wait as slurm_wait
from slurmkit.slurm.records import Job

Progress = Callable[[str], None]
# Relative, so under the directory the command runs in; the nodes must see it.
DEFAULT_WORK_DIR = Path("slurmkit-checks")
CANCEL_GRACE = 15.0
LOG_GRACE = 5.0
# A check log holds a few lines per node; past this it is not a check log.
LOG_MAX_BYTES = 64 * 1024 * 1024


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
    """A job time limit (``[D-]HH:MM:SS``) no longer than the wait, at least one minute."""
    return format_limit(max(1, int(timeout // 60)) * 60)


def submit_check(
    template: str,
    values: Mapping[str, Any],
    work_dir: Path,
    prefix: str,
    extra_sbatch: tuple[str, ...] = (),
    sets: Mapping[str, str] | None = None,
    notify: Progress | None = None,
) -> CheckJob:
    """Render ``template`` (site config < ``values`` < ``sets``) and submit it on sbatch's stdin.

    ``work_dir`` gets the job's log, which we read back, and a copy of the script: it
    must be ours and writable by nobody else (see :func:`submit_rendered`). An sbatch
    that gets no answer is resolved by looking the job's unique name up in the queue;
    ``notify`` (always shown, unlike progress) says what is awaited and what was found.
    """
    from slurmkit.slurm.submit import prepare, send, trusted_folder
    from slurmkit.templating import config, render_template

    folder = trusted_folder(work_dir, "--dir")
    name = f"{prefix}-{secrets.token_hex(3)}"
    overrides = {**values, **(sets or {}), "job_name": name, "log_dir": str(folder)}
    rendered = render_template(template, overrides=overrides, site=config.load())
    token = new_token()
    extra = (*extra_sbatch, f"--comment={comment_for(token)}")
    submission = prepare(rendered.text, folder, rendered.template.name, extra, "--dir")
    try:
        job_id = send(submission)
    except SlurmError as exc:
        if not recheck.no_answer(exc):
            raise
        job_id = _find_submitted(name, token, exc, notify)
    return CheckJob(
        job_id=job_id, name=name, script=submission.record, log=folder / f"{name}-{job_id}.out"
    )


def _find_submitted(name: str, token: str, exc: SlurmError, notify: Progress | None) -> str:
    """The id of the job an unanswered sbatch may have queued, found by its unique name."""
    from slurmkit.slurm.submit import current_user

    user = current_user()
    found, error = recheck.read_again(
        lambda: query.jobs(name=name, user=user, states="all"),
        what=f"the queue for job {name}",
        notify=notify,
        until=bool,  # absent may only mean "not processed yet": look for the whole window
    )
    if found:
        job_id = found[0].job_id
        if notify is not None:
            notify(f"sbatch got no answer, but job {job_id} ({name}) is queued: using it")
        return job_id
    if found is None:
        raise ControllerUnreachable(
            f"sbatch of check job {name} got no answer and Slurm still does not answer "
            f"({error}): the job may be queued (comment {comment_for(token)}); find it with "
            f"`squeue --name={name}`, remove it with `scancel --name={name} --user={user}`"
        ) from None
    # Not listed for the whole window: not queued. Should the request still be in a
    # backlog, one scancel by its unique name removes it when it lands (no answer: it is
    # named in the error, so the user can).
    try:
        query.cancel_by_name(name, user)
        removed = f"(`scancel --name={name}` sent in case it queues late)"
    except SlurmError:
        removed = f"(if it queues late: `scancel --name={name} --user={user}`)"
    raise SlurmError(
        f"{exc}; the queue has no job {name}: nothing was submitted {removed}"
    ) from None


def wait(
    job: CheckJob, timeout: float, progress: Progress, poll: float = slurm_wait.MAX_POLL
) -> Finished:
    """Wait for the job to end; cancel it at ``timeout`` (NeverStarted if it never ran).

    The polling (fast at first, then up to every ``poll`` s, one squeue a poll) is the
    Slurm layer's :func:`slurmkit.slurm.wait.until_final`; this adds what a check job
    needs: the cancel at the deadline and the log read back.
    """
    start = time.monotonic()
    watched = slurm_wait.until_final(
        job.job_id,
        timeout,
        progress,
        poll=poll,
        first_poll=slurm_wait.FIRST_POLL,
        read=lambda _: _row_or_cancel(job),
        every=slurm_wait.PROGRESS_EVERY,
    )
    row = watched.row
    if watched.deadline:
        cancel(job.job_id)
        if not watched.started:
            reason = row.reason if row is not None else ""
            raise NeverStarted(
                f"check job {job.job_id} did not start within {timeout:g} s "
                f"(pending: {reason or 'no reason given'}); cancelled it"
            )
        progress(f"slurmkit: timeout after {timeout:g} s: cancelled job {job.job_id}")
        slurm_wait.until_final(
            job.job_id, CANCEL_GRACE, poll=slurm_wait.FIRST_POLL, first_poll=slurm_wait.FIRST_POLL
        )
    state, final_nodes = slurm_wait.final_state(job.job_id, row)
    return Finished(
        job=job,
        state=state,
        nodelist=final_nodes or watched.nodelist,
        log_text=_read_log(job.log, LOG_GRACE if watched.started or state != "CANCELLED" else 0.0),
        timed_out=watched.deadline,
        seconds=time.monotonic() - start,
    )


def cancel(job_id: str) -> None:
    """scancel our own job; a job already gone is fine."""
    with contextlib.suppress(SlurmError):
        query.cancel(job_id)


def _row_or_cancel(job: CheckJob) -> Job | None:
    """The job's row; when Slurm stops answering, one scancel and an error naming the job."""
    try:
        return slurm_wait.read_row(job.job_id)
    except SlurmError as exc:
        if not recheck.no_answer(exc):
            raise
        rows, error = recheck.read_again(
            lambda: query.jobs(job_ids=job.job_id, states="all"), what=f"job {job.job_id}"
        )
        if rows is not None:
            return rows[0] if rows else None
        try:
            query.cancel(job.job_id)
        except SlurmError as cancel_error:
            fate = (
                f"cancelling it got no answer either ({cancel_error}): it may still be "
                f"queued; remove it with `scancel {job.job_id}`"
            )
        else:
            fate = "cancelled it"
        raise ControllerUnreachable(
            f"Slurm stopped answering while check job {job.job_id} was queued or running "
            f"({error}); {fate}"
        ) from None


def _read_log(path: Path, grace: float) -> str:
    """The log's text; the batch host may write it a moment after the job ends."""
    deadline = time.monotonic() + grace
    while True:
        try:
            return read_text_bounded(
                path, what="check job log", max_bytes=LOG_MAX_BYTES, error=EnvironmentProblem,
                errors="replace",
            )  # fmt: skip
        except FileNotFoundError:
            if time.monotonic() >= deadline:
                return ""
            time.sleep(slurm_wait.FIRST_POLL)
