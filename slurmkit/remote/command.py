"""The remote command line, and end markers for transports that lose exit codes.

Commands always run under ``sh -c`` on the node, so their meaning does not
depend on the login shell of the remote account (bash, zsh, fish...).

pdsh and ``srun --label`` mix all nodes' output into one stream and report
one exit code for all of them. The wrapper built here makes each node print,
after the command, a line with a token unique to this run, the node's exit
code and the command's duration; :func:`parse_marker` reads it back. A node
whose marker is missing did not run the command to its end.
"""

from __future__ import annotations

import math
import re
import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from slurmkit.errors import UsageError

Command = str | Sequence[str]

# %N is GNU date; where it is not supported the duration falls back to wall time.
_STAMP = "$(date +%s%N 2>/dev/null)"


def to_shell(command: Command) -> str:
    """A shell command line from the user's command.

    One string is a command line written for a shell on purpose (pipes,
    globs, ``$VAR``). Several words are an argv and are quoted one by one,
    so ``run -- echo '$HOME'`` prints ``$HOME`` literally.
    """
    if isinstance(command, str):
        text = command
    elif len(command) == 1:
        text = command[0]
    else:
        text = shlex.join(command)
    if not text.strip():
        raise UsageError("no command given: slurmkit run -w NODES -- CMD...")
    return text


def sh_c(script: str) -> str:
    """``sh -c '<script>'``: the one form every login shell passes on unchanged."""
    return f"sh -c {shlex.quote(script)}"


def new_token() -> str:
    """A marker no command prints by accident."""
    return f"__slurmkit_end_{secrets.token_hex(8)}__"


@dataclass(frozen=True)
class Marker:
    """A parsed end marker: the node's exit code and how long the command took."""

    exit_code: int
    seconds: float | None
    node: str | None = None


def wrap_script(
    command: str, token: str, *, with_node: bool = False, time_limit: float | None = None
) -> str:
    """A POSIX sh script that runs ``command`` and then prints the end marker.

    ``with_node`` adds ``$SLURMD_NODENAME`` (srun: task ids are not node
    names). ``time_limit`` runs the command under coreutils ``timeout`` on the
    node, for transports that have no time limit of their own.
    """
    inner = sh_c(command)
    if time_limit is not None and not 0 < time_limit < math.inf:  # NaN fails this too
        raise UsageError(f"a time limit must be positive, finite seconds, not {time_limit!r}")
    if time_limit is not None:
        inner = f"timeout -k 5 {max(1, round(time_limit))} {inner}"
    node = ' "${SLURMD_NODENAME:-?}"' if with_node else ""
    fmt = "%s rc=%s t0=%s t1=%s" + (" node=%s" if with_node else "") + "\n"
    return (
        f"t0={_STAMP}; {inner}; rc=$?; "
        f'printf {shlex.quote(fmt)} {shlex.quote(token)} "$rc" "$t0" {_STAMP}{node}'
    )


def wrap(command: str, token: str) -> str:
    """The remote command line for :func:`wrap_script`, for a login shell to run."""
    return sh_c(wrap_script(command, token))


_MARKER_TAIL = re.compile(r" rc=(\d+) t0=(\d*) t1=(\d*)(?: node=(\S+))?\s*$")


def parse_marker(text: str, token: str) -> tuple[str, Marker] | None:
    """Split a line that holds the marker into (text before it, marker); None if absent.

    The text before the marker is the command's last line when that line had
    no newline of its own. The last occurrence counts: a ``ps`` listing may
    show the wrapper's own command line, token included.
    """
    head, found, tail = text.rpartition(token)
    if not found:
        return None
    match = _MARKER_TAIL.match(tail)
    if not match:
        return None
    rc, t0, t1, node = match.groups()
    seconds = (int(t1) - int(t0)) / 1e9 if t0 and t1 and int(t1) >= int(t0) else None
    return head, Marker(int(rc), seconds, node)
