"""``slurmkit cpus check``: does srun pass --cpus-per-task on here? Over :mod:`slurmkit.cpus`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmkit import stderr
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import check_dir_option, check_timeout_option, json_option
from slurmkit.cli._output import print_json, print_table, progress

if TYPE_CHECKING:
    from slurmkit.cpus import CpusReport

_DESCRIPTION = {
    "batch": "the batch step",
    "srun": "plain srun (may take the whole allocation)",
    "srun-exact": "plain srun --exact: what each task is given",
    "srun-cpus-per-task": "srun --cpus-per-task=$SLURM_CPUS_PER_TASK",
    "srun-env": "SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK srun",
}


@click.group("cpus")
def cpus_group() -> None:
    """CPUs per task: is this cluster affected by srun not inheriting --cpus-per-task?"""


@cpus_group.command("check")
@click.option("-p", "--partition", metavar="P", help="Partition for the test job.")
@click.option(
    "-c",
    "--cpus-per-task",
    type=click.IntRange(min=2),
    metavar="N",
    help="CPUs per task to request (at least 2; default: the template's, 2).",
)
@click.option("-N", "--nodes", type=click.IntRange(min=1), metavar="K", help="Nodes (default 1).")
@check_timeout_option(600.0)
@check_dir_option()
@json_option()
def check_command(
    partition: str | None,
    cpus_per_task: int | None,
    nodes: int | None,
    timeout: float,
    work_dir: Path,
    as_json: bool,
) -> None:
    """Submit a small job that measures the CPUs each task gets and report the verdict.

    The verdict reads what each step was given (scontrol show step), not only the
    CPUs a task sees: on 22.05.8 a plain srun that takes the whole allocation shows
    every CPU although it did not inherit --cpus-per-task.

    Exit 0 not affected, 1 affected (srun needs --cpus-per-task) or undetermined, 2 error.
    """
    from slurmkit.cpus import CpusOptions, check

    options = CpusOptions(
        partition=partition,
        cpus_per_task=cpus_per_task,
        nodes=nodes,
        timeout=timeout,
        work_dir=work_dir,
    )
    from slurmkit.cli._confirm import notify

    report = check(options, progress, notify)
    if as_json:
        print_json(report.to_json())
    else:
        _print(report)
    exit_with(report.exit_code)


def _print(report: CpusReport) -> None:
    requested = report.requested
    print_table(
        [
            [
                m.mode,
                m.tasks,
                "-" if m.given is None else m.given,
                "-" if m.step_cpus is None else m.step_cpus,
                _span(m.affinity_min, m.affinity_max),
                _DESCRIPTION.get(m.mode, ""),
            ]
            for m in report.modes
        ],
        ["MODE", "TASKS", "CPUS/TASK GIVEN", "STEP CPUS", "AFFINITY", "HOW"],
    )
    plain = report.mode("srun-exact")
    given = plain.given if plain else None
    if report.affected is None:
        verdict = "unknown (the plain srun step's CPUs could not be read)"
    elif report.affected:
        verdict = (
            f"affected: a plain srun gives each task {given} CPU(s), not the "
            f"{requested} of #SBATCH --cpus-per-task"
        )
    else:
        verdict = f"not affected: a plain srun gives each task {given} CPU(s), as requested"
    click.echo(f"Slurm {report.slurm}: {verdict}")
    for fix in report.fixes:
        click.echo(f"fix: {fix}")
    expected = report.expected_affected
    if report.affected is not None and expected is not None and expected != report.affected:
        stderr.say(
            f"note: Slurm {report.slurm} is expected to be "
            f"{'affected' if expected else 'not affected'}; this cluster behaves otherwise "
            "(a site srun default?)"
        )
    stderr.say(f"job {report.job_id} {report.job_state}; log {report.log}")


def _span(low: int | None, high: int | None) -> str:
    if low is None:
        return "-"
    return str(low) if low == high else f"{low}-{high}"
