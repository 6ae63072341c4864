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


# Exit code of a command whose --env-setup failed (as coreutils' env uses 125 for itself).
ENV_SETUP_FAILED = 125


def env_setup_line(setup: str) -> str:
    """The shell line for ``--env-setup``: a path is sourced (``. PATH``), else run as given.

    A path is one word holding a ``/`` (``/opt/conda/bin/activate``,
    ``~/venv/bin/activate``, ``./env.sh``): it is quoted, ``~/`` kept as
    ``$HOME``. Anything else is the user's own command line, meant for a shell
    (``. /opt/conda/bin/activate base``, ``module load cuda``). It runs in the
    same ``sh`` as the command, so what it exports and defines is seen by it.
    """
    word = setup.strip()
    if "/" in word and not any(c.isspace() for c in word):
        if word.startswith("~/"):
            return f'. "$HOME"/{shlex.quote(word[2:])}'
        return f". {shlex.quote(word)}"
    return setup


def remote_line(
    command: str,
    *,
    sudo: bool = False,
    sudo_user: str | None = None,
    env_setup: str | None = None,
) -> str:
    """The command line a transport runs, with ``--env-setup`` and ``--sudo`` applied.

    ``env_setup`` runs first in the same shell, in a group whose failure ends the
    script with exit 125 and one line on stderr, so a broken activation never runs
    the command in the wrong environment. With ``sudo`` (or a ``sudo_user``) the
    whole script runs under ``sudo -n -H [-u USER] -- sh -c SCRIPT``: ``-n`` never
    prompts (a node without a sudo rule fails at once with sudo's own "a password
    is required"), and the setup runs as the target user, in its shell. Every word
    is quoted with :func:`shlex.quote`; nothing user-given is spliced unquoted.
    """
    script = command
    if env_setup is not None:
        script = (
            f"{{ {env_setup_line(env_setup)}\n}} || {{ rc=$?; "
            f'echo {shlex.quote("slurmkit: --env-setup failed")}" (exit $rc)" >&2; '
            f"exit {ENV_SETUP_FAILED}; }}\n{command}"
        )
    if not (sudo or sudo_user is not None):
        return script
    who = ["-u", sudo_user] if sudo_user is not None else []
    return shlex.join(["sudo", "-n", "-H", *who, "--", "sh", "-c", script])


def sudo_problem(stderr: str, exit_code: int | None) -> str | None:
    """sudo's own refusal in a node's stderr, as that node's one-line error; None if not sudo's.

    sudo prefixes its messages with ``sudo: `` and exits 1 ("a password is
    required", "unknown user"); a node without sudo makes the shell say
    ``sudo: not found`` (exit 127).
    """
    if exit_code == 127 and "sudo: not found" in stderr:
        return "sudo is not installed on this node"
    # The last line: sshd may print its own first ("Could not chdir to home directory").
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if exit_code == 1 and lines and lines[-1].startswith("sudo: "):
        return lines[-1]
    return None


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
