"""Whether a queued job can still run by itself, or waits for a person forever.

Shared by ``watch job`` (is the training alive?) and ``cron status``/``watch cron`` (is
the chain's next run going to happen?): a pending job only counts as alive when Slurm
would start it without anybody's help.
"""

from __future__ import annotations

from slurmkit.slurm.records import Job

# Pending reasons that no amount of waiting fixes: a hold, a dependency that failed,
# a request the cluster can never satisfy, a partition closed by an admin.
STUCK_REASONS = frozenset(
    {
        "JobHeldUser",
        "JobHeldAdmin",
        "DependencyNeverSatisfied",
        "BadConstraints",
        "InvalidAccount",
        "InvalidQOS",
        "PartitionDown",
        "PartitionInactive",
        "AccountNotAllowed",
        "QOSNotAllowed",
        "PartitionNodeLimit",
    }
)


def stuck_reason(job: Job) -> str | None:
    """Why a pending job will never start by itself, or None when it can (or is not pending)."""
    if not job.is_pending:
        return None
    if job.held:
        return f"held ({job.reason})" if job.reason else "held"
    reason = job.reason or ""
    # squeue may print several reasons ("ReqNodeNotAvail, UnavailableNodes:...").
    first = reason.split(",")[0].strip()
    if first in STUCK_REASONS:
        return first
    return None


def is_running(job: Job) -> bool:
    return job.state in ("RUNNING", "CONFIGURING")


def can_run(job: Job) -> bool:
    """Running, or pending and able to start without help."""
    return is_running(job) or (job.is_pending and stuck_reason(job) is None)
