"""``slurmkit pyspy``: dump every Python rank of a running job and say who is stuck where.

Thin over :mod:`slurmkit.pyspy`; the transports (and paramiko) load only when
a run needs them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmkit import stderr
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import (
    json_option,
    node_timeout_option,
    selection_options,
    via_option,
)
from slurmkit.cli._ssh_options import ssh_transport_options
from slurmkit.errors import UsageError
from slurmkit.nodesel import Selection
from slurmkit.pyspy.collect import DEFAULT_TIMEOUT, VIA
from slurmkit.remote.base import RemoteOptions

if TYPE_CHECKING:
    from slurmkit.slurm.records import Job


@click.command("pyspy")
@click.option("--jobid", required=True, metavar="ID", help="The running job to look at.")
@selection_options("Only these nodes of the job (default: all of its nodes).")
@click.option("--native", is_flag=True, help="Add C/C++ frames (py-spy dump --native).")
@click.option(
    "--all-processes",
    is_flag=True,
    help="Also dump Python children of the ranks (data-loader workers, helpers).",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Where trace-<node>.txt go. Default: ./pyspy-<jobid>-<YYYYmmdd-HHMMSS>/",
)
@via_option(
    VIA,
    "srun: a step inside the job (scontrol listpids). "
    "ssh: pdsh or paramiko to its nodes, when no step can start.",
)
@node_timeout_option(DEFAULT_TIMEOUT, "Limit for each node's answer, in seconds.")
@ssh_transport_options("--via ssh")
@json_option("Every process's stack, groups and problems.")
@click.option(
    "--py-spy",
    "py_spy",
    metavar="PATH",
    help="py-spy on the nodes. Default: the first py-spy on the node's PATH, then in "
    "/usr/local/bin, /usr/bin, ... that root (or you) owns and nobody else can write.",
)
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="Python that runs slurmkit's script on the nodes (default /usr/bin/python3). "
    "Like py-spy, it and its folders must be root's (or yours) and writable by nobody else.",
)
def pyspy_command(
    jobid: str,
    selection: Selection,
    native: bool,
    all_processes: bool,
    output_dir: Path | None,
    via: str,
    timeout: float,
    ssh: RemoteOptions,
    as_json: bool,
    py_spy: str | None,
    python: str | None,
) -> None:
    """Dump the Python stack of every rank of job ID and group identical stacks.

    Processes are grouped by their main thread's stack (innermost frame
    first); the smallest groups of ranks are marked OUTLIER: in a hang, the
    culprit is usually the rank that is somewhere else. py-spy's full output
    per node goes to DIR/trace-<node>.txt. Exit 0 when every node's ranks
    were dumped, 1 when some node or process failed or the job runs no
    Python, 2 for a job that does not exist, is not running or is not yours.
    --connect-timeout, --fanout, --insecure and --ssh-config are those of
    `slurmkit run`; only --via ssh uses them.
    """
    from slurmkit import pyspy
    from slurmkit.cli._output import print_json, progress
    from slurmkit.pyspy.render import as_json as to_json
    from slurmkit.pyspy.render import render
    from slurmkit.pyspy.traces import default_dir, prepare_dir, write_traces

    options = pyspy.DumpOptions(
        native=native, all_processes=all_processes, py_spy=py_spy, python=python
    )
    settings = pyspy.Settings(via=via, timeout=timeout, dump=options, notify=stderr.say, ssh=ssh)
    job = _only(pyspy.running_job(jobid), selection)
    directory = prepare_dir(output_dir or default_dir(jobid))
    progress(f"dumping job {jobid} on {job.nodelist} via {via}...")
    collection = pyspy.collect(jobid, job, settings)
    write_traces(directory, collection)
    if as_json:
        print_json(to_json(collection, directory))
        if collection.no_python:
            stderr.say(f"job {jobid} has no Python processes")
    else:
        click.echo(render(collection, directory), nl=False)
    exit_with(collection.exit_code)


def _only(job: Job, selection: Selection) -> Job:
    """The job with its nodes narrowed by -w/-x; naming a node outside the job is an error."""
    if selection.include is None and selection.exclude is None:
        return job
    from slurmkit import hostlist

    every = hostlist.HostSet(job.nodelist)
    wanted = replace(selection, include=selection.include or job.nodelist).resolve()
    outside = wanted.difference(every)
    if outside:
        raise UsageError(f"not nodes of job {job.job_id} ({job.nodelist}): {outside}")
    return replace(job, nodelist=str(wanted))
