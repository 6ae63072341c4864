"""One undrain at a time on this machine, so two runs (cron and a person) never act twice.

An ``flock`` on a file: the kernel drops it when the holder exits, even on
``kill -9``, so a crashed run never leaves a stale lock behind. The holder's
pid is written into the file to name it in the message of the run that waits.
Runs on different machines are not serialised by this: use one admin host.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from slurmkit.errors import SlurmkitError

_POLL = 0.2


class LockBusy(SlurmkitError):
    """Another undrain holds the lock (exit 2)."""


def default_lock_path() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "slurmkit-undrain.lock"
    return Path("/tmp") / f"slurmkit-undrain-{os.getuid()}.lock"


@contextmanager
def hold(path: Path | None = None, wait: float = 10.0) -> Iterator[Path]:
    """Hold the lock for the ``with`` body; wait up to ``wait`` s, then raise LockBusy."""
    path = path or default_lock_path()
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise SlurmkitError(f"cannot open lock file {path}: {exc.strerror}") from exc
    try:
        _acquire(fd, path, wait)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield path
    finally:
        os.close(fd)  # releases the flock


def _acquire(fd: int, path: Path, wait: float) -> None:
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockBusy(
                    f"another undrain is running (pid {_holder(path)}, lock {path}); "
                    "nothing was done"
                ) from None
            time.sleep(_POLL)


def _holder(path: Path) -> str:
    try:
        return path.read_text().strip() or "?"
    except OSError:
        return "?"
