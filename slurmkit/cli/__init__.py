"""The ``slurmkit`` command: a lazy registry of thin subcommands over the library.

Exit codes, for every subcommand: 0 done; 1 done with findings or skips
(an alerting watchdog, a node left drained, lint errors); 2 usage or
environment error (bad input, Slurm missing, controller down); 130 interrupted.
"""

from __future__ import annotations

import click

from slurmkit import __version__, _proc
from slurmkit.cli._group import RootGroup

SUBCOMMANDS: dict[str, str] = {
    "nodes": "slurmkit.cli.nodes:nodes_group",
    "sandbox": "slurmkit.cli.sandbox:sandbox_group",
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
        _proc.set_verbose(True)


def main() -> None:
    cli.main(prog_name="slurmkit")
