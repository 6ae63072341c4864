"""Which job to look at: it must exist, run, and be one whose processes we may trace.

These are bad input (exit 2), found with one ``scontrol show job`` before any
node is contacted.
"""

from __future__ import annotations

import os
import pwd
import re

from slurmkit.errors import NotFound, PermissionDenied, UsageError
from slurmkit.slurm import query
from slurmkit.slurm.records import Job

_UID = re.compile(r"\((\d+)\)\s*$")


def running_job(jobid: str) -> Job:
    """The job record, or the reason it cannot be dumped, explained."""
    if not re.fullmatch(r"\d+(_\d+)?", jobid):
        raise UsageError(f"--jobid must be a job id like 1234 or 1234_5, got {jobid!r}")
    try:
        job = query.job(jobid)
    except NotFound as exc:
        said = _first_line(exc.stderr) or str(exc)
        raise NotFound(
            f"job {jobid} not found ({said}): it never existed, or it ended and Slurm "
            f"forgot it (`sacct -j {jobid}` shows past jobs)",
            exc.argv,
            exc.returncode,
            exc.stderr,
        ) from exc
    if not job.is_running:
        raise UsageError(_not_running(jobid, job))
    check_owner(job, os.geteuid())
    return job


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _not_running(jobid: str, job: Job) -> str:
    reason = f", reason {job.reason}" if job.reason and job.reason != "None" else ""
    if job.is_pending:
        return f"job {jobid} is PENDING{reason}: it has no processes yet"
    return f"job {jobid} is {job.state}{reason}: only a RUNNING job has processes to dump"


def check_owner(job: Job, euid: int) -> None:
    """py-spy attaches with ptrace: only the job's owner or root may do that."""
    if euid == 0 or job.user is None:
        return
    uid = job_uid(job)
    if uid == euid:
        return
    if uid is None and job.user == _user_name(euid):
        return
    raise PermissionDenied(
        f"job {job.job_id} belongs to {job.user}, not to {_user_name(euid)}: py-spy can "
        "attach only to your own processes (run as root to dump other users' jobs)"
    )


def job_uid(job: Job) -> int | None:
    """The numeric owner from ``UserId=alice(1000)``; None when Slurm did not say."""
    match = _UID.search(job.raw.get("UserId", ""))
    return int(match[1]) if match else None


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
