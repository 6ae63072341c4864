"""The only module in slurmkit that starts processes.

Everything else (the Slurm layer, the remote-execution layer, the sandbox)
goes through :func:`run` or :func:`spawn`, so there is one place that refuses
shell strings, applies timeouts and captures stderr, and one seam for tests.
"""

from __future__ import annotations

import os
import shlex
import signal
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

# After a timeout's kill: how long the dead group's last output may take to arrive.
_DRAIN_SECONDS = 2.0
# After passing a Ctrl-C on: how long the group may take to stop by itself.
_INTERRUPT_GRACE = 2.0

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
    """Run ``argv`` in a process group of its own, and end the whole group on a timeout.

    Killing only the child left what it had put in the background (``sh -c 'slow &
    slow'`` in a health check) running after the timeout, for ever, holding our pipes.
    The group is also ended when we are interrupted, since it no longer gets the
    terminal's Ctrl-C itself.
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        stdout, stderr_text = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        _kill_group(proc)
        out, err = _leftovers(proc)
        return Completed(
            tuple(argv),
            -9,
            _text(exc.stdout) + out,
            _text(exc.stderr) + err,
            time.monotonic() - start,
            timed_out=True,
        )
    except KeyboardInterrupt:
        _interrupt_group(proc)
        raise
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    return Completed(tuple(argv), proc.returncode, stdout, stderr_text, time.monotonic() - start)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the child's process group (its pgid is its pid: start_new_session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the group is gone already
    except PermissionError:  # a setuid member of the group: at least the child
        proc.kill()


def _interrupt_group(proc: subprocess.Popen[str]) -> None:
    """Pass a Ctrl-C on, as the terminal did before the group had a session of its own
    (srun cancels its step on SIGINT), then end whatever is left of the group."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=_INTERRUPT_GRACE)
    except (OSError, subprocess.TimeoutExpired, KeyboardInterrupt):
        pass  # gone already, deaf to SIGINT, or a second Ctrl-C: no more waiting
    finally:
        _kill_group(proc)
        proc.wait()


def _leftovers(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """What the killed group wrote last; a grandchild that left the group may keep the pipes
    open, so this waits a moment at most and then lets go."""
    try:
        out, err = proc.communicate(timeout=_DRAIN_SECONDS)
    except subprocess.TimeoutExpired:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        proc.wait()
        return "", ""
    return out or "", err or ""


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
