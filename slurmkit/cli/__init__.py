"""The ``slurmkit`` command: a lazy registry of thin subcommands over the library.

Exit codes, for every subcommand: 0 done; 1 done with findings or skips
(an alerting watchdog, a node left drained, lint errors); 2 usage or
environment error (bad input, Slurm missing, controller down); 130 interrupted.
"""

from __future__ import annotations

import click

from slurmkit import __version__
from slurmkit.cli._defaults import ConfiguredRootGroup, check_invoked
from slurmkit.cli._group import LazyRegistry

# The second field is a copy of each command's short help, so `slurmkit --help` imports none of
# them; tests/unit/test_cli_root.py fails when a copy differs from the command's own help.
SUBCOMMANDS: LazyRegistry = {
    "completion": (
        "slurmkit.cli.completion:completion_command",
        'Print the shell completion script: eval "$(slurmkit completion bash)".',
    ),
    "config": (
        "slurmkit.cli.config:config_group",
        "Site defaults from the config files: each value and where it came from.",
    ),
    "cpus": (
        "slurmkit.cli.cpus:cpus_group",
        "CPUs per task: is this cluster affected by srun not inheriting --cpus-per-task?",
    ),
    "cron": (
        "slurmkit.cli.cron:cron_group",
        "Crontab emulation: scheduler jobs that re-submit themselves every period.",
    ),
    "faulty": (
        "slurmkit.cli.faulty:faulty_group",
        "Faulty nodes: scan them with checks in one job, drain them, rank past failures.",
    ),
    "health": (
        "slurmkit.cli.health:health_command",
        "Check this node quickly; drain it in Slurm when a check fails (HealthCheckProgram).",
    ),
    "hostfile": (
        "slurmkit.cli.hostfile:hostfile_command",
        "Print a hostfile for a job's nodes, in Slurm's order (first line = rank 0).",
    ),
    "job": ("slurmkit.cli.job:job_group", "A job's time: how much is left, and raising its limit."),
    "launch-env": (
        "slurmkit.cli.hostfile:launch_env_command",
        'Print export lines for multi-node launchers: eval "$(slurmkit launch-env)".',
    ),
    "lint": (
        "slurmkit.cli.lint:lint_command",
        "Check sbatch scripts for the mistakes that silently cost a training (SCRIPT - is stdin).",
    ),
    "log": (
        "slurmkit.cli.log:log_group",
        "The audit log of node changes (node drain/resume/reboot, undrain).",
    ),
    "node": (
        "slurmkit.cli.node:node_group",
        "Node lifecycle: drain with a reason, resume after a leftover check, reboot, show.",
    ),
    "nodes": (
        "slurmkit.cli.nodes:nodes_group",
        "Hostlists in Slurm's syntax, e.g. gpu[01-16],login1, and the nodes of a job or partition.",
    ),
    "pyspy": (
        "slurmkit.cli.pyspy:pyspy_command",
        "Dump the Python stack of every rank of job ID and group identical stacks.",
    ),
    "run": (
        "slurmkit.cli.run:run_command",
        "Run CMD on every node of NODES in parallel: slurmkit run -w node-[1-4] -- CMD...",
    ),
    "sandbox": (
        "slurmkit.cli.sandbox:sandbox_group",
        "Run a real multi-node Slurm cluster on this machine (root, Debian/Ubuntu).",
    ),
    "template": (
        "slurmkit.cli.template:template_group",
        "Shipped sbatch templates: launchers, train wrapper, cron, node checks.",
    ),
    "train": (
        "slurmkit.cli.train:train_group",
        "Job-array trains: one --array=1-N%1 array whose runs source an editable script.",
    ),
    "undrain": (
        "slurmkit.cli.undrain:undrain_command",
        "Return drained nodes to service when no job left anything behind on them.",
    ),
    "watch": (
        "slurmkit.cli.watch:watch_group",
        "Watchdogs: job alive, cron chains on time, disk space and inodes, stale logs.",
    ),
    "why": (
        "slurmkit.cli.why:why_command",
        "Why a job is pending, why it ended, and how well it used what it asked for.",
    ),
}


@click.group(
    cls=ConfiguredRootGroup,
    lazy_subcommands=SUBCOMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=lambda ctx, _param, value: _print_version(ctx) if value else None,
    help="Show the version and the query backend in use, then exit.",
)
@click.option("-v", "--verbose", is_flag=True, help="Print every command slurmkit runs, to stderr.")
@click.option(
    "--backend",
    type=click.Choice(["auto", "pyslurm", "commands"]),
    default=None,
    is_eager=True,  # before an eager --version that comes after it on the line
    callback=lambda _ctx, _param, value: _choose_backend(value),
    help="Who answers read-only queries: pyslurm's C API or Slurm's commands "
    "(env: SLURMKIT_BACKEND; default auto: pyslurm when installed for the cluster's version).",
)
@click.option("--debug", is_flag=True, hidden=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool, backend: str | None, debug: bool) -> None:
    """SLURM operations toolbox: node lists, hostfiles, undrain, trains, cron, checks, py-spy.

    Exit codes: 0 done, 1 done with findings or skips, 2 usage or environment error.
    """
    ctx.meta["slurmkit.debug"] = debug
    check_invoked(ctx)  # the config sections of the command about to run
    if verbose:
        from slurmkit import _proc  # imported here: subprocess costs start-up time

        _proc.set_verbose(True)


def _choose_backend(name: str | None) -> str | None:
    if name is not None:
        from slurmkit.slurm import backend as query_backend

        query_backend.choose(name)
    return name


def _print_version(ctx: click.Context) -> None:
    """``slurmkit --version``: the package, then which backend answers queries here and why.

    A ``--backend`` before ``--version`` was applied already (both are eager); one after
    it is read from the command line.
    """
    from slurmkit.slurm import backend as query_backend

    args = _raw_args()
    for i, arg in enumerate(args):
        if arg.startswith("--backend="):
            query_backend.choose(arg.split("=", 1)[1])
        elif arg == "--backend" and i + 1 < len(args):
            query_backend.choose(args[i + 1])
    click.echo(f"slurmkit, version {__version__}")
    click.echo(query_backend.describe())
    ctx.exit(0)


def _raw_args() -> list[str]:
    import sys

    return sys.argv[1:]


def main() -> None:
    cli.main(prog_name="slurmkit")
