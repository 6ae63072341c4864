"""The ``slurmkit`` command: a lazy registry of thin subcommands over the library.

Exit codes, for every subcommand: 0 done; 1 done with findings or skips
(an alerting watchdog, a node left drained, lint errors); 2 usage or
environment error (bad input, Slurm missing, controller down); 130 interrupted.
"""

from __future__ import annotations

import click

from slurmkit import __version__
from slurmkit.cli._group import RootGroup

SUBCOMMANDS: dict[str, str] = {
    "cpus": "slurmkit.cli.cpus:cpus_group",
    "cron": "slurmkit.cli.cron:cron_group",
    "faulty": "slurmkit.cli.faulty:faulty_group",
    "hostfile": "slurmkit.cli.hostfile:hostfile_command",
    "job": "slurmkit.cli.job:job_group",
    "launch-env": "slurmkit.cli.hostfile:launch_env_command",
    "lint": "slurmkit.cli.lint:lint_command",
    "nodes": "slurmkit.cli.nodes:nodes_group",
    "pyspy": "slurmkit.cli.pyspy:pyspy_command",
    "run": "slurmkit.cli.run:run_command",
    "sandbox": "slurmkit.cli.sandbox:sandbox_group",
    "template": "slurmkit.cli.template:template_group",
    "train": "slurmkit.cli.train:train_group",
    "undrain": "slurmkit.cli.undrain:undrain_command",
    "watch": "slurmkit.cli.watch:watch_group",
}


@click.group(
    cls=RootGroup,
    lazy_subcommands=SUBCOMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "--version", prog_name="slurmkit")
@click.option("-v", "--verbose", is_flag=True, help="Print every command slurmkit runs, to stderr.")
@click.option("--debug", is_flag=True, hidden=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool, debug: bool) -> None:
    """SLURM operations toolbox: node lists, hostfiles, undrain, trains, cron, checks, py-spy.

    Exit codes: 0 done, 1 done with findings or skips, 2 usage or environment error.
    """
    ctx.meta["slurmkit.debug"] = debug
    if verbose:
        from slurmkit import _proc  # imported here: subprocess costs start-up time

        _proc.set_verbose(True)


def main() -> None:
    cli.main(prog_name="slurmkit")
