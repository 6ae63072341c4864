"""One lock helper for every command that must not run twice at once.

An ``flock`` on a file: the kernel drops it when the holder exits, even on
``kill -9``, so a crashed run never leaves a stale lock. Every wait is bounded
(a suspended holder must not block an emergency ``train kill-switch`` for
ever), the file is opened with ``O_NOFOLLOW`` (a planted symlink cannot make
root create or truncate another file), and root's locks live in a root-owned
directory, so no local user can pre-create or hold them.

A lock file is the caller's alone (mode 0600, owned by the caller): ``flock``
needs no write access, so anyone who can *open* the file, even read-only, can
hold the lock and block its owner (issue 28: any reader of a train folder could
stall the owner's ``train stop``). A lock file that someone else owns or can
open (one another user planted, or one made before this rule, 0644) is replaced
by a private one, never used; the lock is taken on the file the path names
*after* the flock, so a replacement in between is noticed and taken again.
A non-root account's locks live under its own state directory
(``$XDG_STATE_HOME/slurmkit/locks``) when it has no ``$XDG_RUNTIME_DIR``: a
shared name such as ``/tmp/slurmkit-<uid>`` can be made first by anyone.
"""

from __future__ import annotations

import errno
import fcntl
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from slurmkit.errors import EnvironmentProblem, SlurmkitError
from slurmkit.files import read_text_bounded, state_path
from slurmkit.trust import UntrustedPath, open_nofollow, private_dir

_POLL = 0.1
ROOT_LOCK_DIR = Path("/run/slurmkit")
LOCK_MODE = 0o600
# A path replaced this often while we take the lock is being fought over: give up, say so.
_ATTEMPTS = 5


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
            pass  # a stale or foreign XDG_RUNTIME_DIR: fall back to our own state dir
    return private_dir(state_path("locks"), what="lock directory")


def default_lock_path(name: str) -> Path:
    return default_lock_dir() / f"slurmkit-{name}.lock"


@contextmanager
def hold(
    path: Path,
    *,
    wait: float,
    what: str,
    notify: Callable[[str], None] | None = None,
) -> Iterator[Path]:
    """Hold an exclusive lock on ``path`` for the ``with`` body.

    Waits up to ``wait`` seconds, then raises :class:`LockBusy` naming ``what``
    and the holder's pid. ``notify`` gets one line when the lock is busy: what
    slurmkit waits for, how long.
    """
    fd = _lock(path, wait, what, notify)
    try:
        _note_holder(fd)
        yield path
    finally:
        os.close(fd)  # releases the flock


def _lock(path: Path, wait: float, what: str, notify: Callable[[str], None] | None) -> int:
    """A descriptor of the private file at ``path``, flocked, still the file ``path`` names."""
    deadline = time.monotonic() + max(0.0, wait)
    told = False
    for _ in range(_ATTEMPTS):
        fd = _open_private(path)
        try:
            told = _acquire(fd, path, deadline, wait, what, notify, told)
            if _still_at(path, fd):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # replaced while we waited: lock the file that is there now
    raise EnvironmentProblem(f"cannot lock {path}: it keeps being replaced; nothing was done")


def _note_holder(fd: int) -> None:
    """Write our pid for the "busy" message; on a full file system the lock holds without it."""
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError:
        pass  # the pid is only a hint (issue 22: a full disk must be one line, not a traceback)


def _open_private(path: Path) -> int:
    """Open (or create, 0600) the lock file; one that is not ours alone is replaced first."""
    fd = _open(path)
    problem = _not_private(fd)
    if problem is None:
        return fd
    os.close(fd)
    _replace(path, problem)
    fd = _open(path)
    problem = _not_private(fd)
    if problem is not None:
        os.close(fd)
        raise EnvironmentProblem(f"lock file {path} {problem}; nothing was done")
    return fd


def _open(path: Path) -> int:
    try:
        return open_nofollow(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, LOCK_MODE)
    except OSError as exc:
        if exc.errno == errno.EROFS:
            with suppress(OSError):
                return _open_read_only(path)
        hint = " (a symbolic link is never followed)" if exc.errno == 40 else ""
        raise EnvironmentProblem(f"cannot open lock file {path}: {exc.strerror}{hint}") from None


def _open_read_only(path: Path) -> int:
    """The lock file of a read-only file system, opened for reading.

    ``flock`` needs no write access, and nobody can replace or change the file, so the
    same checks hold; a train folder remounted read-only must not keep ``train stop``
    from acting (issue 29: stopping always works).
    """
    return open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK, LOCK_MODE)


def _not_private(fd: int) -> str | None:
    """Why the open file cannot be a lock only we can hold, or None."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_uid != os.geteuid():
        return f"belongs to uid {info.st_uid}, not to you (uid {os.geteuid()})"
    if stat.S_IMODE(info.st_mode) & 0o077:
        return f"can be opened by others (mode {stat.S_IMODE(info.st_mode):04o})"
    return None


def _replace(path: Path, problem: str) -> None:
    """Put a new private file at ``path`` (rename over: holders of the old one hold nothing)."""
    fresh = path.with_name(f".{path.name}.{secrets.token_hex(6)}")
    try:
        os.close(open_nofollow(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, LOCK_MODE))
        os.replace(fresh, path)
    except OSError as exc:
        with suppress(OSError):
            os.unlink(fresh)
        raise EnvironmentProblem(
            f"lock file {path} {problem} and cannot be replaced ({exc.strerror or exc}): "
            f"remove it; nothing was done"
        ) from None


def _still_at(path: Path, fd: int) -> bool:
    try:
        named = os.lstat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _acquire(
    fd: int,
    path: Path,
    deadline: float,
    wait: float,
    what: str,
    notify: Callable[[str], None] | None = None,
    told: bool = False,
) -> bool:
    """Flock ``fd`` before ``deadline``; returns whether the busy line was said."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return told
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
        pid = read_text_bounded(path, what="lock file", max_bytes=64).strip()
    except (OSError, SlurmkitError):
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
