"""The import rule: every Python slurmkit starts as root or as a train's owner imports only
from folders nobody else can write, and every interpreter runs exactly the file checked.

Issue 28: Python puts a folder first on ``sys.path`` before any import: the script's
folder, or the current folder for ``-c``, ``-m`` and stdin. The nccl check wrote its
script into ``/tmp`` and root's scan imported any user's ``/tmp/datetime.py``; the other
checks and the train wrapper's exclude-list step imported from a working directory a
teammate can write. And the undrain gate checked one path (``stat -L``) and then ran
another (the unresolved name), so a link flipped in between ran a user's program.

The rule, held here and in ``templates/_safe_exec.sh`` (its shell side, which the check
templates, the train wrapper, the undrain gate and pyspy's node command all use):

* resolve the interpreter once; check that file and every folder above it (owned by
  root or the caller, writable by nobody else; a root-owned sticky folder only from two
  levels up, since Python reads ``pyvenv.cfg`` in the file's folder and the one above);
  then exec exactly that file, with the name it was called by as ``argv[0]`` (in its
  resolved folder, so a venv is still that venv);
* start Python with ``-I``, or ``-P`` where the interpreter has it (3.11+) and the code
  needs ``PYTHONPATH`` (torch from a module system); workers a launcher starts
  (``torch.distributed.run``) get ``PYTHONSAFEPATH=1`` and a script in a private
  ``mktemp -d`` folder;
* check jobs run with ``--chdir=/`` (:data:`CHECK_JOB_CHDIR`).
"""

from __future__ import annotations

import sys
from functools import cache

from slurmkit.errors import EnvironmentProblem
from slurmkit.files import read_text_bounded
from slurmkit.resources import data_dir

SHELL_FILE = "_safe_exec.sh"
REFUSED = "slurmkit-refused:"
REFUSED_RC = 126
ISOLATED = "-I"
CHECK_JOB_CHDIR = "/"


@cache
def shell_library() -> str:
    """The shell functions of the rule (``sk_resolve``, ``sk_python_flag``, ``sk_exec``)."""
    path = data_dir("templates") / SHELL_FILE
    try:
        return read_text_bounded(
            path, what="slurmkit's shell library", follow_links=True, error=EnvironmentProblem
        )
    except FileNotFoundError:
        raise EnvironmentProblem(f"{path} is missing: the installation is broken") from None


def own_python(*args: str) -> list[str]:
    """This interpreter, isolated: for helpers slurmkit runs here with its own Python.

    No resolution or check: this process already runs that file.
    """
    return [sys.executable, ISOLATED, *args]
