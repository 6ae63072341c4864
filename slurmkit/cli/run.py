"""``slurmkit run``: one command on many nodes, output grouped like ``dshbak -c``.

Thin over :mod:`slurmkit.remote`; paramiko is imported by the ssh transport
only when it runs.
"""

from __future__ import annotations

from dataclasses import replace

import click

from slurmkit import remote, stderr
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import (
    json_option,
    node_timeout_option,
    selection_options,
    via_option,
)
from slurmkit.cli._output import per_node_option, per_node_wanted
from slurmkit.cli._ssh_options import ssh_transport_options
from slurmkit.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from slurmkit.nodesel import Selection
from slurmkit.remote.base import RemoteOptions


@click.command("run")
@selection_options(
    "Nodes to run on, e.g. node-[1-4]. Default with --jobid: the job's nodes.",
    deprecated_alias=True,
)
@via_option(
    remote.VIA_CHOICES, "Transport. auto: srun with --jobid, else pdsh, else ssh (paramiko)."
)
@click.option("--jobid", metavar="ID", help="Run inside this job's allocation (srun --overlap).")
@node_timeout_option(remote.DEFAULT_TIMEOUT, "Limit for the command on each node, in seconds.")
@ssh_transport_options("pdsh, ssh")
@json_option("One JSON record per node.")
@per_node_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_command(
    selection: Selection,
    via: str,
    jobid: str | None,
    timeout: float,
    ssh: RemoteOptions,
    as_json: bool,
    command: tuple[str, ...],
) -> None:
    """Run CMD on every node of NODES in parallel: slurmkit run -w node-[1-4] -- CMD...

    One CMD word is a shell command line (pipes, $VARS: quote it); several
    words are run exactly as given. Identical output is shown once under the
    folded list of nodes that printed it; failed, unreachable and timed-out
    nodes follow, one line per way of failing (-v: one per node). Exit 0 when
    every node succeeded, 1 when any did not, 2 on usage errors.
    """
    from slurmkit.remote.grouping import format_grouped

    if via == "srun" and not jobid:
        raise UsageError("--via srun needs --jobid")
    if selection.include is None:  # -x alone narrows the job's nodes
        selection = replace(selection, include=_job_nodes(jobid), what=f"job {jobid}'s nodes")
    nodes = selection.resolve()  # groups resolved and -x applied before anything runs
    options = replace(ssh, timeout=timeout, jobid=jobid, notify=stderr.say)
    outcome = remote.run(nodes, list(command), via=via, options=options)
    if as_json:
        from slurmkit.cli._output import print_json

        print_json({"transport": outcome.transport, "nodes": outcome.results})
    else:
        click.echo(format_grouped(outcome.results, per_node_wanted()), nl=False)
    exit_with(EXIT_OK if outcome.all_ok else EXIT_FINDINGS)


def _job_nodes(jobid: str | None) -> str:
    if not jobid:
        raise UsageError("give the nodes with -w NODES (or --jobid to use a job's nodes)")
    from slurmkit.slurm import query

    return query.job_nodelist(jobid)
