"""The live cpus-per-task test: one real job on the cluster, submitted, waited for, read.

The ``cpus-per-task-test`` template runs, in one job: the batch step, a plain
``srun``, ``srun --exact`` (what each task is *given*), ``srun --cpus-per-task`` and
``SRUN_CPUS_PER_TASK`` + srun, each printing the CPUs it sees (affinity) and the
CPUs its step was given (``scontrol show step``). :mod:`slurmkit.checkjob` renders,
submits and waits; :mod:`slurmkit.cpus.report` reads the verdict from the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from slurmkit import checkjob
from slurmkit.cpus.report import CpusReport, summarize
from slurmkit.slurm import wait as slurm_wait

TEMPLATE = "cpus-per-task-test"
DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True)
class CpusOptions:
    partition: str | None = None
    cpus_per_task: int | None = None
    nodes: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    work_dir: Path = checkjob.DEFAULT_WORK_DIR
    sets: Mapping[str, str] = field(default_factory=dict)
    poll: float = slurm_wait.MAX_POLL


def template_values(options: CpusOptions) -> dict[str, object]:
    values: dict[str, object] = {"time": checkjob.time_limit(options.timeout)}
    if options.cpus_per_task is not None:
        values["cpus_per_task"] = options.cpus_per_task
    if options.nodes is not None:
        values["nodes"] = options.nodes
    if options.partition:
        values["partition"] = options.partition
    return values


def check(
    options: CpusOptions, progress: checkjob.Progress, notify: checkjob.Progress | None = None
) -> CpusReport:
    """Submit the test job, wait, read the verdict; ``notify``: notices always shown."""
    job = checkjob.submit_check(
        TEMPLATE,
        template_values(options),
        options.work_dir,
        "slurmkit-cpus",
        sets=options.sets,
        notify=notify,
    )
    progress(f"slurmkit: submitted cpus-per-task test job {job.job_id}, log {job.log}")
    finished = checkjob.wait(job, options.timeout, progress, options.poll)
    return summarize(finished.log_text, job.job_id, finished.state, str(job.log))
