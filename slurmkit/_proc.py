"""The only module in slurmkit that starts processes.

Everything else (the Slurm layer, the remote-execution layer, the sandbox)
goes through :func:`run` or :func:`spawn`, so there is one place that refuses
shell strings, applies timeouts and captures stderr, and one seam for tests.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from slurmkit import stderr


@dataclass(frozen=True)
class Completed:
    """What a finished command left behind; ``timed_out`` means it was killed."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)


Runner = Callable[..., Completed]

_verbose = bool(os.environ.get("SLURMKIT_VERBOSE"))


def set_verbose(on: bool) -> None:
    """Echo every command to stderr (``-v``).

    Users of a tool that changes cluster state want to see exactly what it ran.
    """
    global _verbose
    _verbose = on


def is_verbose() -> bool:
    return _verbose


def echo_command(argv: Sequence[str]) -> None:
    if _verbose:
        stderr.line(f"+ {shlex.join(argv)}")


def _run_subprocess(
    argv: Sequence[str],
    *,
    timeout: float | None,
    input: str | None,
    env: Mapping[str, str] | None,
    cwd: str | None,
) -> Completed:
    start = time.monotonic()
    try:
        proc = subprocess.run(
            list(argv),
            input=input,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            stdin=None if input is not None else subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return Completed(
            tuple(argv),
            -9,
            _text(exc.stdout),
            _text(exc.stderr),
            time.monotonic() - start,
            timed_out=True,
        )
    return Completed(
        tuple(argv), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start
    )


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data


runner: Runner = _run_subprocess


def run(
    argv: Sequence[str],
    *,
    timeout: float | None = 60.0,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Completed:
    """Run ``argv`` (a list, never a shell string) and capture everything.

    Raises FileNotFoundError when the program does not exist, so callers can
    say *which* tool is missing; every other outcome is a :class:`Completed`.
    """
    if isinstance(argv, str):
        raise TypeError("argv must be a sequence of arguments, not a shell string")
    echo_command(argv)
    return runner(argv, timeout=timeout, input=input, env=env, cwd=cwd)


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    log_path: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start a long-lived daemon detached from our session and return its handle.

    Used by the sandbox: daemons must outlive the ``slurmkit`` process that
    started them and must not receive the terminal's Ctrl-C.
    """
    echo_command(argv)
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        if log_path:
            out.close()  # type: ignore[union-attr]
