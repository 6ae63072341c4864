"""One lock helper for every command that must not run twice at once.

An ``flock`` on a file: the kernel drops it when the holder exits, even on
``kill -9``, so a crashed run never leaves a stale lock. Every wait is bounded
(a suspended holder must not block an emergency ``train kill-switch`` for
ever), the file is opened with ``O_NOFOLLOW`` (a planted symlink cannot make
root create or truncate another file), and root's locks live in a root-owned
directory, so no local user can pre-create or hold them.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from slurmkit.errors import EnvironmentProblem, SlurmkitError
from slurmkit.trust import UntrustedPath, open_nofollow, private_dir

_POLL = 0.1
ROOT_LOCK_DIR = Path("/run/slurmkit")


class LockBusy(SlurmkitError):
    """Another slurmkit run holds the lock (exit 2): nothing was done."""


def default_lock_dir() -> Path:
    """Where this user's locks live: root-owned for root, private to the user otherwise."""
    if os.geteuid() == 0:
        return private_dir(ROOT_LOCK_DIR, mode=0o755, what="lock directory")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        try:
            return private_dir(runtime, what="lock directory")
        except (UntrustedPath, EnvironmentProblem):
            pass  # a stale or foreign XDG_RUNTIME_DIR: fall back to our own dir in /tmp
    return private_dir(Path("/tmp") / f"slurmkit-{os.getuid()}", what="lock directory")


def default_lock_path(name: str) -> Path:
    return default_lock_dir() / f"slurmkit-{name}.lock"


@contextmanager
def hold(
    path: Path,
    *,
    wait: float,
    what: str,
    shared_file: bool = False,
    notify: Callable[[str], None] | None = None,
) -> Iterator[Path]:
    """Hold an exclusive lock on ``path`` for the ``with`` body.

    Waits up to ``wait`` seconds, then raises :class:`LockBusy` naming ``what``
    and the holder's pid. ``shared_file`` is for a lock file that teammates
    share (a train folder): it is opened read-only when it already exists and
    belongs to someone else, and the holder's pid is not written into it.
    ``notify`` gets one line when the lock is busy: what slurmkit waits for, how long.
    """
    fd = _open(path, shared_file)
    try:
        _acquire(fd, path, wait, what, notify)
        if not shared_file:
            _note_holder(fd)
        yield path
    finally:
        os.close(fd)  # releases the flock


def _note_holder(fd: int) -> None:
    """Write our pid for the "busy" message; on a full file system the lock holds without it."""
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError:
        pass  # the pid is only a hint (issue 22: a full disk must be one line, not a traceback)


def _open(path: Path, shared_file: bool) -> int:
    try:
        if shared_file:
            try:
                return open_nofollow(path, os.O_RDONLY)
            except FileNotFoundError:
                return open_nofollow(path, os.O_RDONLY | os.O_CREAT, 0o664)
        return open_nofollow(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        hint = " (a symbolic link is never followed)" if exc.errno == 40 else ""
        raise EnvironmentProblem(f"cannot open lock file {path}: {exc.strerror}{hint}") from None


def _acquire(
    fd: int, path: Path, wait: float, what: str, notify: Callable[[str], None] | None = None
) -> None:
    deadline = time.monotonic() + max(0.0, wait)
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if notify is not None and not told and wait > 0:
                notify(f"waiting up to {wait:g} s for {what}: {path} is held{_holder(path)}")
                told = True
            if time.monotonic() >= deadline:
                raise LockBusy(
                    f"{what} is busy: another slurmkit run holds {path}{_holder(path)} "
                    f"and did not finish within {wait:g} s; nothing was done"
                ) from None
            time.sleep(_POLL)


def _holder(path: Path) -> str:
    try:
        pid = path.read_text().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
