"""The command line each node runs: slurmkit's node-side script under a node's Python.

The script (:mod:`slurmkit.pyspy.node_script`) travels as text in the argv
of ``python -c``, so nothing needs installing on the nodes but a Python and
py-spy. Root runs this on every node, so the Python is the system's
``/usr/bin/python3`` (or ``--python PATH``), never a path that merely exists on
the admin host: a user who can create that path on a node (a venv under /tmp)
would get root (issue 14). Before ``exec``, the shell line checks, on the node,
that the interpreter and every directory above it (symlinks resolved) belong
to root or the caller and that nobody else can write them; it then runs the
resolved path, isolated (``-I``), so a link swapped after the check changes nothing
and nothing is imported from the folder the node's shell starts in. The rule and its
shell functions are :mod:`slurmkit.safeexec`'s. A refusal is one
``slurmkit-refused: ...`` line on stderr, read back as that node's problem.
py-spy is found and checked the same way by the script itself.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from importlib import resources

from slurmkit import safeexec
from slurmkit.slurm.records import Job

LISTPIDS = "listpids"
ENVIRON = "environ"


DEFAULT_PYTHON = "/usr/bin/python3"
REFUSED = safeexec.REFUSED
REFUSED_RC = safeexec.REFUSED_RC


@dataclass(frozen=True)
class DumpOptions:
    native: bool = False
    all_processes: bool = False
    py_spy: str | None = None
    python: str | None = None


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
    python = shlex.quote(_absolute_if_path(options.python or DEFAULT_PYTHON))
    script = shlex.quote(node_script_source())
    return (
        f"{safeexec.shell_library()}\n"
        f'sk_resolve python {python} || {{ echo "$sk_why" >&2; exit {REFUSED_RC}; }}\n'
        f'exec "$sk_exe" {safeexec.ISOLATED} -c {script} {shlex.join(args)}'
    )


def _absolute_if_path(program: str) -> str:
    """A relative path means the caller's directory, which a node's shell does not start in."""
    return os.path.abspath(program) if os.sep in program else program
