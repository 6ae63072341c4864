"""Run the node-side script on every node of a job and gather what came back.

``srun``: one step of the job on all its nodes (``srun --jobid --overlap``),
processes found by the local slurmd (``scontrol listpids``). ``ssh``: pdsh
(paramiko when pdsh is missing) to the job's nodes, for when no new step can
start (a wedged slurmd, a job at its step limit); processes found by the
job's user and ``SLURM_JOB_ID`` in their environment. Both go through
:func:`slurmkit.remote.run`, which returns one result per node whatever
happens to the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from slurmkit import remote, stderr
from slurmkit.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from slurmkit.hostlist import expand
from slurmkit.pyspy.decode import decode
from slurmkit.pyspy.grouping import StackGroup, group_stacks
from slurmkit.pyspy.nodecmd import ENVIRON, LISTPIDS, DumpOptions, node_command
from slurmkit.pyspy.records import NodeStacks, Problem, ProcessStack
from slurmkit.pyspy.target import job_uid
from slurmkit.slurm.records import Job

VIA = ("srun", "ssh")
DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class Settings:
    """How to collect: transport, limit, what to dump, and how ``--via ssh`` connects.

    ``ssh`` carries what ``slurmkit run`` takes for its ssh transports
    (connect timeout, fanout, ``insecure``, ``ssh_config``); its own timeout,
    jobid and notify are replaced by these settings'. The srun transport has
    no use for it and ignores it, as ``run`` does.
    """

    via: str = "srun"
    timeout: float = DEFAULT_TIMEOUT
    dump: DumpOptions = field(default_factory=DumpOptions)
    notify: Callable[[str], None] = field(default=stderr.say, compare=False)
    ssh: remote.RemoteOptions = field(default_factory=remote.RemoteOptions)

    def __post_init__(self) -> None:
        if self.via not in VIA:
            raise UsageError(f"--via must be one of {', '.join(VIA)}, got {self.via!r}")
        if self.timeout <= 0:
            raise UsageError(f"--timeout must be positive, got {self.timeout:g}")

    def remote_options(self, jobid: str | None = None) -> remote.RemoteOptions:
        """What the remote layer gets; ``jobid`` only for srun, which steps into the job."""
        return replace(self.ssh, timeout=self.timeout, jobid=jobid, notify=self.notify)


@dataclass(frozen=True)
class Collection:
    """Every node's report for one job, in the job's node order."""

    jobid: str
    job: Job
    transport: str
    timeout: float
    reports: tuple[NodeStacks, ...]

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(r.node for r in self.reports)

    @property
    def processes(self) -> list[ProcessStack]:
        return [p for r in self.reports for p in r.processes]

    @property
    def problems(self) -> list[Problem]:
        return [p for r in self.reports for p in r.problems]

    @property
    def groups(self) -> list[StackGroup]:
        return group_stacks(self.processes)

    @property
    def no_python(self) -> bool:
        """Every node answered and none has a Python process of the job."""
        return all(r.python == 0 for r in self.reports)

    @property
    def exit_code(self) -> int:
        dumped = any(p.ok for p in self.processes)
        return EXIT_OK if dumped and not self.problems else EXIT_FINDINGS


def collect(jobid: str, job: Job, settings: Settings) -> Collection:
    """Dump the job's Python processes on all its nodes; never raises for one node's trouble."""
    nodes = expand(job.nodelist)
    if settings.via == "srun":
        command = node_command(job, LISTPIDS, settings.timeout, settings.dump)
        options = settings.remote_options(jobid=job.job_id)
        outcome = remote.run(nodes, command, via="srun", options=options)
    else:
        command = node_command(job, ENVIRON, settings.timeout, settings.dump, job_uid(job))
        outcome = remote.run(nodes, command, via="pdsh", options=settings.remote_options())
    reports = tuple(
        decode(result, job.job_id, settings.timeout, outcome.transport)
        for result in outcome.results
    )
    return Collection(jobid, job, outcome.transport, settings.timeout, reports)
