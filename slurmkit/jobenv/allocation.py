"""Which nodes a command is about: the job it runs in, a job id, or a plain node list.

Inside a job the environment is the cheapest and most exact source (no RPC,
and the batch step's view of its own allocation); from outside, one
``scontrol show job -d`` answers. The environment is only trusted for the job
it belongs to: ``--jobid`` naming another job never reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from slurmkit import hostlist
from slurmkit.errors import SlurmkitError, UsageError
from slurmkit.slurm.records import Job

HOW_TO = (
    "no Slurm job here: run inside a job (sbatch/salloc/srun set SLURM_JOB_NODELIST), "
    "or give --jobid ID or --nodelist LIST"
)


@dataclass(frozen=True)
class Allocation:
    """Nodes in Slurm's order (``scontrol show hostnames``), and what else is known about them.

    ``env`` is the job's own environment when read from inside the job (the
    slot sources read it); ``job`` is the ``scontrol show job -d`` record when
    one was fetched; ``origin`` says where the node list came from, for ``-v``.
    """

    hosts: tuple[str, ...]
    origin: str
    job_id: str | None = None
    env: Mapping[str, str] | None = field(default=None, repr=False)
    job: Job | None = field(default=None, repr=False)

    @property
    def first(self) -> str:
        return self.hosts[0]

    @property
    def in_step(self) -> bool:
        """Inside an ``srun`` step (not the batch script): per-node values are this node's.

        26.05 also sets SLURM_STEP_ID in the batch script, to -5 (its batch-step id as a
        signed number); a real step's id is a plain non-negative number.
        """
        value = self.env.get("SLURM_STEP_ID", "").strip() if self.env else ""
        return value.isdigit() and int(value) < _SPECIAL_STEP_IDS


# Slurm's special step ids (batch, extern, interactive, pending) are 0xfffffffa and up.
_SPECIAL_STEP_IDS = 0xFFFFFFF0


def env_job_ids(env: Mapping[str, str]) -> set[str]:
    """The ids the surrounding job answers to: ``123`` and, for an array task, ``100_3``."""
    ids = {env[k].strip() for k in ("SLURM_JOB_ID", "SLURM_JOBID") if env.get(k, "").strip()}
    array, task = env.get("SLURM_ARRAY_JOB_ID", "").strip(), env.get("SLURM_ARRAY_TASK_ID", "")
    if array and task.strip():
        ids.add(f"{array}_{task.strip()}")
    return ids


def in_job(env: Mapping[str, str]) -> bool:
    return bool(env_job_ids(env)) and bool(env.get("SLURM_JOB_NODELIST", "").strip())


def from_environment(env: Mapping[str, str], *, step: bool = False) -> Allocation:
    """The surrounding job's nodes; with ``step``, an ``srun`` step's own nodes when inside one."""
    key = "SLURM_STEP_NODELIST" if step and env.get("SLURM_STEP_NODELIST") else "SLURM_JOB_NODELIST"
    hosts = tuple(hostlist.expand(env[key]))
    if not hosts:
        raise SlurmkitError(f"{key} is empty")
    job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    return Allocation(hosts=hosts, origin=key, job_id=job_id, env=env)


def from_job_record(job: Job) -> Allocation:
    """A running job's nodes from its ``scontrol show job`` record; pending/ended jobs have none."""
    if job.is_finished:
        raise SlurmkitError(f"job {job.job_id} has ended ({job.state}): it holds no nodes")
    if job.is_pending or not job.nodelist:
        raise SlurmkitError(
            f"job {job.job_id} has no nodes allocated yet (state {job.state}"
            + (f", reason {job.reason})" if job.reason else ")")
        )
    hosts = tuple(hostlist.expand(job.nodelist))
    return Allocation(hosts=hosts, origin="scontrol show job", job_id=job.job_id, job=job)


def from_nodelist(names: Sequence[str]) -> Allocation:
    """``--nodelist``'s names in the order given (rank 0 first): a list, not a sorted set."""
    hosts = tuple(names)
    if not hosts:
        raise UsageError("--nodelist is empty")
    return Allocation(hosts=hosts, origin="--nodelist")


def resolve(
    env: Mapping[str, str],
    jobid: str | None = None,
    nodelist: Sequence[str] | None = None,
    *,
    step: bool = False,
) -> Allocation:
    """The allocation a command means: ``--nodelist``, ``--jobid``, else the surrounding job.

    ``--jobid`` naming the surrounding job still reads the environment; any
    other id costs one ``scontrol show job -d``.
    """
    if jobid is not None and nodelist is not None:
        raise UsageError("give --jobid or --nodelist, not both")
    if nodelist is not None:
        return from_nodelist(nodelist)
    if jobid is not None and not jobid.strip():
        raise UsageError("--jobid is empty")
    if jobid is None or (in_job(env) and jobid.strip() in env_job_ids(env)):
        if not in_job(env):
            raise UsageError(HOW_TO)
        return from_environment(env, step=step)
    from slurmkit.slurm import query

    return from_job_record(query.job(jobid.strip()))
