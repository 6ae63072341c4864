"""The train's arrays as the queue shows them now: one squeue, read by array.

Changes (:mod:`.control`) plan from it and ``status`` counts from it, so a pending
range such as ``115_[2-5%1]`` is expanded in one place, the same way for both.
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmkit.errors import SlurmParseError
from slurmkit.grammar import idrange
from slurmkit.slurm import query
from slurmkit.slurm.records import Job
from slurmkit.train.state import TrainState


@dataclass(frozen=True)
class Queue:
    """The train's records in the queue right now (one squeue), by array."""

    jobs: list[Job]

    def of(self, array_id: str) -> list[Job]:
        return [j for j in self.jobs if (j.array_job_id or j.job_id) == array_id]

    def live(self, state: TrainState) -> list[str]:
        """Arrays of the train that still have runs running or pending, in order."""
        return [a for a in state.array_ids if self.of(a)]

    def pending_runs(self, array_id: str) -> int:
        return sum(_task_count(j) for j in self.of(array_id) if j.is_pending)

    def running(self, array_id: str) -> list[Job]:
        return [j for j in self.of(array_id) if j.is_running or j.state == "COMPLETING"]

    def ids(self) -> set[str]:
        """Every id the queue holds, each task of a pending range ``115_[2-3%1]`` named alone.

        Slurm 22.05 lists a run requeued after NODE_FAIL inside its array's pending
        record, not as a record of its own; matched by record id only, that run also
        counted as a failed finished one.
        """
        ids: set[str] = set()
        for job in self.jobs:
            ids |= {job.display_id, job.job_id}
            if job.array_job_id and job.array_task_id and not job.array_task_id.isdigit():
                ids |= {f"{job.array_job_id}_{n}" for n in _task_ids(job)}
        return ids


def _task_ids(job: Job) -> list[int]:
    """The task indices a record stands for; none when Slurm's text does not parse."""
    try:
        return idrange.task_ids(job.array_task_id) if job.array_task_id is not None else []
    except SlurmParseError:
        return []


def _task_count(job: Job) -> int:
    return len(_task_ids(job)) or 1


def queue_of(state: TrainState) -> Queue:
    return Queue(query.jobs(job_ids=state.array_ids) if state.array_ids else [])
