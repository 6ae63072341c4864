"""The command line each node runs: slurmkit's node-side script under a node's Python.

The script (:mod:`slurmkit.pyspy.node_script`) travels as text in the argv
of ``python -c``, so nothing needs installing on the nodes but a Python and
py-spy. Root runs this on every node, so the Python is the system's
``/usr/bin/python3`` (or ``--python PATH``), never a path that merely exists on
the admin host: a user who can create that path on a node (a venv under /tmp)
would get root (issue 14). Before ``exec``, the shell line checks, on the node,
that the interpreter and every directory above it (symlinks resolved) belong
to root or the caller and that nobody else can write them; it then runs the
resolved path, so a link swapped after the check changes nothing. A refusal is
one ``slurmkit-refused: ...`` line on stderr, read back as that node's problem.
py-spy is found and checked the same way by the script itself.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from importlib import resources

from slurmkit.slurm.records import Job

LISTPIDS = "listpids"
ENVIRON = "environ"


DEFAULT_PYTHON = "/usr/bin/python3"
REFUSED = "slurmkit-refused:"
REFUSED_RC = 126

# POSIX sh: is "$2" (the program "$1" names) safe for this user to run? A bare name
# is looked up on the node's PATH; links are resolved, then it walks up to /: every
# component owned by root or us, none writable by group or others (a root-owned
# sticky directory such as /tmp is fine above the file). On success sets p to the
# resolved path; on failure one line on stderr.
_TRUSTED_SH = r"""sk_trusted() {
  sk_what=$1 sk_path=$2 sk_uid=$(id -u)
  case $sk_path in */*) ;; *) sk_path=$(command -v "$sk_path") || sk_path=$2 ;; esac
  p=$(readlink -f -- "$sk_path" 2>/dev/null) || p=
  if [ -z "$p" ] || [ ! -f "$p" ] || [ ! -x "$p" ]; then
    echo "SK_REFUSED $sk_what $sk_path: not an executable file" >&2; return 1
  fi
  sk_dir=$p sk_leaf=1
  while :; do
    set -f; set -- $(ls -ldn -- "$sk_dir" 2>/dev/null); set +f
    if [ $# -lt 3 ]; then
      echo "SK_REFUSED $sk_what $sk_path: cannot inspect $sk_dir" >&2; return 1
    fi
    if [ "$3" != 0 ] && [ "$3" != "$sk_uid" ]; then
      echo "SK_REFUSED $sk_what $sk_path: $sk_dir is owned by uid $3, not root" >&2; return 1
    fi
    case $1 in
      ?????w*|????????w*)
        case $sk_leaf$3$1 in
          00d????????[tT]*) ;;
          *) echo "SK_REFUSED $sk_what $sk_path: $sk_dir is writable by group or others ($1)" >&2
             return 1 ;;
        esac ;;
    esac
    [ "$sk_dir" = / ] && return 0
    sk_dir=$(dirname -- "$sk_dir") sk_leaf=0
  done
}""".replace("SK_REFUSED", REFUSED)


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
        f"{_TRUSTED_SH}\nsk_trusted python {python} || exit {REFUSED_RC}\n"
        f'exec "$p" -c {script} {shlex.join(args)}'
    )


def _absolute_if_path(program: str) -> str:
    """A relative path means the caller's directory, which a node's shell does not start in."""
    return os.path.abspath(program) if os.sep in program else program
