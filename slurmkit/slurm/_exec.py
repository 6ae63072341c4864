"""Run one Slurm command and turn its failure into one clear error.

Slurm's commands disagree on how they fail: ``scontrol`` may print an error
and still exit 0 (22.05: ``scontrol show hostnames 'n[5-1]'``), ``sacct`` says
"Problem talking to the database", ``squeue`` "Unable to contact slurm
controller". This module reads exit code *and* stderr so that callers only
ever see a :class:`~slurmkit.errors.SlurmError` subclass with one line of text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from slurmkit import _proc
from slurmkit.errors import (
    ControllerUnreachable,
    NoAnswer,
    NotFound,
    PermissionDenied,
    SlurmError,
    SlurmNotInstalled,
)
from slurmkit.slurm import refusals

DEFAULT_TIMEOUT = 60.0

# Every Slurm argv run in this process, in order: lets tests and benchmarks
# prove that a command does not make one call per node.
call_log: list[tuple[str, ...]] = []

_UNREACHABLE = re.compile(
    r"unable to contact slurm controller|connection refused|socket timed out"
    r"|problem talking to the database|zero bytes were transmitted"
    r"|unable to establish|slurm_persist_conn_open|communication connection failure",
    re.I,
)
_DENIED = re.compile(
    r"access.?denied|permission denied|not authorized|invalid user id|only root|user not found",
    re.I,
)
_NOT_FOUND = re.compile(
    r"invalid job id|invalid node name|invalid partition name|job.*does not exist"
    r"|invalid job array|no such (job|node|partition)|(node|partition|job) \S+ not found",
    re.I,
)
# No slurm.conf, no SLURM_CONF and no DNS SRV record: the controller cannot even
# be located (seen on 22.05 clients without a configuration).
_NO_CONFIG = re.compile(r"could not establish a configuration source", re.I)
_FATAL_LINE = re.compile(r"(^|\s)fatal:", re.I | re.M)
# scontrol/sinfo print "<cmd>: error: ..." or "slurm_xxx error: ..." on failures
# even when they exit 0.
_ERROR_LINE = re.compile(r"(^|\s)error:", re.I | re.M)

# Outputs that scripts parse must not depend on the user's environment.
_FORMAT_OVERRIDES = (
    "SQUEUE_FORMAT",
    "SQUEUE_FORMAT2",
    "SINFO_FORMAT",
    "SACCT_FORMAT",
    "SQUEUE_SORT",
    "SINFO_SORT",
    "SLURM_TIME_FORMAT",
)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's environment minus variables that change Slurm's output formats."""
    env = {k: v for k, v in os.environ.items() if k not in _FORMAT_OVERRIDES}
    env["SLURM_TIME_FORMAT"] = "standard"
    if extra:
        env.update(extra)
    return env


def run_slurm(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    input: str | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> _proc.Completed:
    """Run a Slurm command; with ``check`` raise a classified :class:`SlurmError` on failure."""
    call_log.append(tuple(argv))
    try:
        result = _proc.run(argv, timeout=timeout, input=input, env=clean_env(env))
    except FileNotFoundError as exc:
        raise SlurmNotInstalled(
            f"'{argv[0]}' not found on PATH: Slurm's client commands are not installed here "
            "(Debian/Ubuntu: apt-get install slurm-client)",
            list(argv),
        ) from exc
    if result.timed_out:
        raise ControllerUnreachable(
            f"'{result.command_line}' did not answer within {timeout:g} s "
            "(is slurmctld reachable?)",
            list(argv),
            None,
            result.stderr,
        )
    if check and failed(result):
        raise classify(result)
    return result


def failed(result: _proc.Completed) -> bool:
    """Non-zero exit, or an ``error:``/``fatal:`` line on stderr despite exit 0."""
    stderr = result.stderr
    return result.returncode != 0 or bool(_ERROR_LINE.search(stderr) or _FATAL_LINE.search(stderr))


def first_message(text: str) -> str:
    """The most telling line of a Slurm message, without the ``cmd: error:`` prefix.

    A ``fatal:`` line wins over the ``error:`` lines that led to it.
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    telling = (
        [ln for ln in lines if _FATAL_LINE.search(ln)]
        or [
            ln
            for ln in lines
            if _ERROR_LINE.search(ln) or _UNREACHABLE.search(ln) or _NOT_FOUND.search(ln)
        ]
        or lines
    )
    if not telling:
        return "no error message"
    line = telling[0]
    return re.sub(r"^[\w.-]+:\s*((error|fatal):\s*)?", "", line, flags=re.I).strip() or line


def _messages(stdout: str) -> str:
    return "\n".join(line for line in stdout.splitlines() if "=" not in line)


def classify(result: _proc.Completed) -> SlurmError:
    """Map a failed command to the error subclass its messages point at.

    scontrol prints some failures ("Node node-9 not found", "Partition x not
    found") on stdout with an empty stderr, so stdout is read when stderr is
    silent, skipping the ``key=value`` records printed for what was found.
    """
    stderr = result.stderr
    text = stderr if stderr.strip() else _messages(result.stdout)
    cmd = result.argv[0] if result.argv else "slurm"
    message = first_message(text)
    args = (list(result.argv), result.returncode, stderr)
    if _NO_CONFIG.search(text):
        return ControllerUnreachable(
            f"{cmd}: cannot locate slurmctld: no slurm.conf here (set SLURM_CONF, install "
            "the cluster's slurm.conf, or publish a DNS SRV record for configless Slurm)",
            *args,
        )
    if _UNREACHABLE.search(text):
        what = "slurmdbd (accounting)" if cmd in ("sacct", "sacctmgr") else "slurmctld"
        return ControllerUnreachable(f"{cmd}: cannot reach {what}: {message}", *args)
    return _unless_unanswered(_answered(cmd, text, message, result, args), text)


def _answered(
    cmd: str,
    text: str,
    message: str,
    result: _proc.Completed,
    args: tuple[list[str], int | None, str],
) -> SlurmError:
    if _DENIED.search(text):
        return PermissionDenied(f"{cmd}: permission denied: {message}", *args)
    if _NOT_FOUND.search(text):
        return NotFound(f"{cmd}: {message}", *args)
    rc = f" (exit {result.returncode})" if result.returncode else ""
    return SlurmError(f"{cmd} failed{rc}: {message}", *args)


def _unless_unanswered(error: SlurmError, text: str) -> SlurmError:
    """A state change whose failure is no known refusal is "no answer" (:mod:`.refusals`)."""
    cmd = os.path.basename(error.argv[0]) if error.argv else ""
    if not changes_state(error.argv) or refusals.meaning(text, cmd) != refusals.NO_ANSWER:
        return error
    return NoAnswer(
        f"{cmd}: no answer that says whether it was done ({first_message(text)}); "
        "it may still be carried out",
        error.argv,
        error.returncode,
        error.stderr,
    )


# scontrol's subcommands that change something; sbatch and scancel always do.
_SCONTROL_CHANGES = frozenset(
    {
        "hold", "uhold", "release", "update", "reboot", "cancel_reboot", "requeue",
        "requeuehold", "suspend", "resume", "top", "notify", "create", "delete",
        "reconfigure", "takeover", "shutdown",
    }
)  # fmt: skip


def changes_state(argv: Sequence[str]) -> bool:
    """Does this Slurm command line ask for a change (not a query)?"""
    if not argv:
        return False
    cmd = os.path.basename(argv[0])
    if cmd in ("sbatch", "scancel"):
        return True
    words = [w for w in argv[1:] if not w.startswith("-")]
    return cmd == "scontrol" and bool(words) and words[0].lower() in _SCONTROL_CHANGES
