"""``slurmkit hostfile`` and ``slurmkit launch-env``: a job's nodes for multi-node launchers.

Thin over :mod:`slurmkit.jobenv`. Both run inside job scripts, on every node
of large jobs, so this module imports only click and the small jobenv modules;
the Slurm layer is loaded only when a job has to be asked for (``--jobid``
from outside, or GPU counts the environment cannot give).
"""

from __future__ import annotations

import os

import click

from slurmkit import _proc, hostlist, nodesel, stderr
from slurmkit.cli._options import selection_options
from slurmkit.errors import UsageError
from slurmkit.jobenv import allocation, hostfile, launch, slots
from slurmkit.nodesel import Selection


class _SlotsType(click.ParamType):
    name = "N|auto|gpus|tasks|cpus"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None):
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        try:
            return slots.parse_wanted(str(value))
        except UsageError as exc:
            self.fail(str(exc), param, ctx)


class _PortType(click.ParamType):
    name = "PORT|auto"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None):
        try:
            return launch.parse_port(str(value))
        except UsageError as exc:
            self.fail(str(exc), param, ctx)


_slots_option = click.option(
    "--slots",
    "wanted",
    type=_SlotsType(),
    default="auto",
    show_default=True,
    help="Processes per node: a number, or auto (GPUs per node, else tasks per node, else 1; "
    "-v says which source answered); gpus, tasks or cpus use only that kind.",
)
_jobid_option = click.option(
    "--jobid", metavar="ID", help="A job's nodes (default: the job this runs in)."
)


@click.command("hostfile")
@_jobid_option
@selection_options("These nodes (1 slot each unless --slots N).")
@_slots_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(hostfile.FORMATS),
    default="deepspeed",
    show_default=True,
    help="deepspeed/openmpi: 'host slots=N'; mpich (Hydra): 'host:N'; plain: one host per "
    "line; json: [{host, slots}].",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write FILE atomically (temporary file + rename) instead of printing.",
)
def hostfile_command(
    jobid: str | None, selection: Selection, wanted: int | str, fmt: str, output: str | None
) -> None:
    """Print a hostfile for a job's nodes, in Slurm's order (first line = rank 0).

    Inside a job it reads the job's environment; outside, give --jobid (one
    scontrol call) or --nodelist. Slots in auto mode, first that answers:
    --slots N, SLURM_GPUS_ON_NODE, SLURM_STEP_GPUS/SLURM_JOB_GPUS (count of
    ids), SLURM_GPUS_PER_NODE, the job's GPU GRES per node (scontrol show job
    -d), SLURM_NTASKS_PER_NODE, SLURM_TASKS_PER_NODE (per node), else 1.
    Nodes with different counts get their own. Use `slurmkit -v hostfile` to
    see the source used.
    """
    nodelist = selection.include
    if nodelist is not None and nodesel.has_groups(nodelist):
        nodelist = str(nodesel.resolve(nodelist))  # groups: sorted; a literal list keeps its order
    names = hostlist.expand(nodelist) if nodelist is not None else None  # the one parse
    alloc = allocation.resolve(os.environ, jobid, names)
    if nodelist is not None and not isinstance(wanted, int) and wanted != slots.AUTO:
        raise UsageError(f"--slots {wanted} needs a job (--jobid or inside one), not --nodelist")
    found = slots.resolve_slots(alloc, wanted)
    if selection.exclude is not None:  # after the slots: per-node counts follow Slurm's order
        alloc, found = _without(alloc, found, selection.exclude)
    if _proc.is_verbose():
        stderr.say(f"nodes from {alloc.origin}: {len(alloc.hosts)}")
        stderr.say(found.describe())
    text = hostfile.render(alloc.hosts, found.per_host, fmt)
    if output is None or output == "-":
        click.echo(text, nl=False)
        return
    from slurmkit.files import write_atomic

    path = write_atomic(output, text)
    if _proc.is_verbose():
        stderr.say(f"wrote {path} ({len(alloc.hosts)} hosts, {found.total} slots)")


def _without(
    alloc: allocation.Allocation, found: slots.Slots, exclude: str
) -> tuple[allocation.Allocation, slots.Slots]:
    """The allocation minus -x, order kept (rank 0 stays first); nothing left is an error."""
    from dataclasses import replace

    removed = nodesel.excluded(exclude)
    kept = [(h, n) for h, n in zip(alloc.hosts, found.per_host, strict=True) if h not in removed]
    if not kept:
        raise UsageError(f"--exclude {exclude!r} removes every node (an empty list is refused)")
    hosts, counts = zip(*kept, strict=True)
    return replace(alloc, hosts=tuple(hosts)), replace(found, per_host=tuple(counts))


@click.command("launch-env")
@click.option(
    "--port",
    type=_PortType(),
    default=str(launch.DEFAULT_PORT),
    show_default=True,
    help="MASTER_PORT; auto = 20000 + job id mod 20000 (jobs sharing a node differ).",
)
@click.option(
    "--launcher",
    type=click.Choice(launch.LAUNCHERS),
    help="Also export this launcher's variables: torchrun PET_* (read by torchrun itself); "
    "accelerate NUM_MACHINES/NUM_PROCESSES/MACHINE_RANK; deepspeed NUM_NODES/NUM_GPUS.",
)
@_jobid_option
@_slots_option
def launch_env_command(
    port: int | str, launcher: str | None, jobid: str | None, wanted: int | str
) -> None:
    """Print export lines for multi-node launchers: eval "$(slurmkit launch-env)".

    MASTER_ADDR (first node, Slurm's order), MASTER_PORT, NNODES,
    GPUS_PER_NODE (slots per node, as in `hostfile`), WORLD_SIZE, and
    NODE_RANK (= SLURM_NODEID) only inside an srun step: exported from the
    batch script it would reach every node. Fails (exit 2) when NNODES is
    already set to another count than the allocation's SLURM_NNODES.
    """
    env = os.environ
    alloc = allocation.resolve(env, jobid, step=True)
    launch.check_nnodes(env, len(alloc.hosts))
    found = slots.resolve_slots(alloc, wanted)
    result = launch.build(
        alloc, found, port=launch.resolve_port(port, alloc.job_id), launcher=launcher
    )
    if _proc.is_verbose():
        stderr.say(f"nodes from {alloc.origin}: {len(alloc.hosts)}")
        for note in result.notes:
            stderr.say(note)
    click.echo(result.exports(), nl=False)
