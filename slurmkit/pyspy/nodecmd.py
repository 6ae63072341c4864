"""The command line each node runs: slurmkit's node-side script under a node's Python.

The script (:mod:`slurmkit.pyspy.node_script`) travels as text in the argv
of ``python -c``, so nothing needs installing on the nodes but a Python and
py-spy. The Python is slurmkit's own when the node sees the same path (a
shared filesystem), else ``python3`` on the node's PATH. Jobs and ssh
sessions have their own PATH, so py-spy is looked for on it and then next to
slurmkit's Python; ``--py-spy PATH`` replaces both.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from importlib import resources

from slurmkit.slurm.records import Job

LISTPIDS = "listpids"
ENVIRON = "environ"


@dataclass(frozen=True)
class DumpOptions:
    native: bool = False
    all_processes: bool = False
    py_spy: str | None = None


def node_script_source() -> str:
    """The script's text, read without importing it (it is meant for the nodes)."""
    return resources.files("slurmkit.pyspy").joinpath("node_script.py").read_text()


def budget(timeout: float) -> float:
    """Time the node side may spend, leaving room to start Python and report before the limit."""
    return round(max(1.0, timeout - min(5.0, timeout * 0.25)), 1)


def node_command(
    job: Job, source: str, timeout: float, options: DumpOptions, uid: int | None = None
) -> str:
    """A POSIX sh command line; every value in it is quoted."""
    args = ["--jobid", job.job_id, "--source", source, "--budget", f"{budget(timeout):g}"]
    if source == ENVIRON and uid is not None:
        args += ["--uid", str(uid)]
    if options.native:
        args.append("--native")
    if options.all_processes:
        args.append("--all-processes")
    if options.py_spy:
        args += ["--py-spy", _absolute_if_path(options.py_spy)]
    else:
        args += ["--fallback-dir", os.path.dirname(os.path.abspath(sys.executable))]
    python = shlex.quote(os.path.abspath(sys.executable))
    script = shlex.quote(node_script_source())
    return f'p={python}; [ -x "$p" ] || p=python3; exec "$p" -c {script} {shlex.join(args)}'


def _absolute_if_path(program: str) -> str:
    """A relative path means the caller's directory, which a node's shell does not start in."""
    return os.path.abspath(program) if os.sep in program else program
