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
    NotFound,
    PermissionDenied,
    SlurmError,
    SlurmNotInstalled,
)

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
    r"|invalid job array|no such (job|node|partition)|node .* not found",
    re.I,
)
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
    return result.returncode != 0 or bool(_ERROR_LINE.search(result.stderr))


def first_message(stderr: str) -> str:
    """The most telling line of a Slurm stderr, without the ``cmd: error:`` prefix."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for line in lines:
        if _ERROR_LINE.search(line) or _UNREACHABLE.search(line) or _NOT_FOUND.search(line):
            return re.sub(r"^[\w.-]+:\s*(error:\s*)?", "", line, flags=re.I).strip() or line
    return lines[0] if lines else "no error message"


def classify(result: _proc.Completed) -> SlurmError:
    """Map a failed command to the error subclass its stderr points at."""
    stderr = result.stderr
    cmd = result.argv[0] if result.argv else "slurm"
    message = first_message(stderr)
    args = (list(result.argv), result.returncode, stderr)
    if _UNREACHABLE.search(stderr):
        what = "slurmdbd (accounting)" if cmd in ("sacct", "sacctmgr") else "slurmctld"
        return ControllerUnreachable(f"{cmd}: cannot reach {what}: {message}", *args)
    if _DENIED.search(stderr):
        return PermissionDenied(f"{cmd}: permission denied: {message}", *args)
    if _NOT_FOUND.search(stderr):
        return NotFound(f"{cmd}: {message}", *args)
    rc = f" (exit {result.returncode})" if result.returncode else ""
    return SlurmError(f"{cmd} failed{rc}: {message}", *args)
