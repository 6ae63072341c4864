"""Files in and out: written atomically, never half; read bounded, never blocked.

A hostfile, sbatch script or state file written in place can be read half-way by
the launcher, sbatch or a cron scheduler globbing ``*.slurm``; a temp file in the
same folder renamed over the target is either absent or complete.

Reading is the mirror problem. Every path slurmkit reads can be something other
than the small text file it expects: a FIFO (``open`` blocks for ever, so a cron
run hangs), a link to ``/dev/zero`` (read without end), a 10 GB log, bytes that
are not UTF-8 (a traceback), or, for root, a file another user planted. One
reader, :func:`read_bounded`, handles all of them the same way, so a new caller
cannot forget one; ``tests/unit/test_bounded_reader_walk.py`` fails on any
``read_text``/``read_bytes``/``open(`` outside it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from slurmkit.errors import EnvironmentProblem, SlurmkitError, UsageError

#: Default cap: larger than any config, state file, journal or script slurmkit reads.
DEFAULT_MAX_BYTES = 4 * 1024 * 1024


def refused(exc: OSError, doing: str, error: type[SlurmkitError] = UsageError) -> SlurmkitError:
    """``cannot <doing>: <reason>``, the one line for an OSError the system gave on a path.

    The reason is the system's words (``Permission denied``), never Python's
    ``[Errno 13] ...`` form; an OSError made without them is shown as it is. Raise it
    ``from None``: the user's line is the whole story, no traceback behind it.
    """
    return error(f"cannot {doing}: {exc.strerror or exc}")


def read_bounded(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    max_bytes: int = DEFAULT_MAX_BYTES,
    follow_links: bool = False,
    trusted_owner: bool = False,
    error: type[SlurmkitError] = UsageError,
) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them, or ``error``.

    The file is opened ``O_NONBLOCK`` (a FIFO cannot hang us) and, unless
    ``follow_links``, ``O_NOFOLLOW``; everything else is decided on the open
    descriptor (``fstat``), so nothing can be swapped between the check and the
    read. ``follow_links`` is for paths the user named on the command line (a
    script that is a link is still a script); the regular-file check applies
    either way, so a link to ``/dev/zero`` is refused. ``trusted_owner`` adds the
    rule for files root acts on: owned by the caller or root, writable by nobody
    else. A missing file raises :class:`FileNotFoundError`, for callers to whom
    absence is normal.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        hint = " (it is a symbolic link)" if exc.errno == 40 else ""
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}{hint}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"cannot read {what} {path}: it is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise error(f"cannot read {what} {path}: not a regular file (a FIFO, device or socket)")
        if trusted_owner:
            _check_owner(path, info, what, error)
        if info.st_size > max_bytes:
            raise error(f"cannot read {what} {path}: larger than {max_bytes} bytes")
        chunks: list[bytes] = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as exc:
        raise refused(exc, f"read {what} {path}", error) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:  # grew while we read it (a log being written)
        raise error(f"cannot read {what} {path}: larger than {max_bytes} bytes")
    return data


def read_text_bounded(
    path: str | os.PathLike[str],
    *,
    what: str = "file",
    max_bytes: int = DEFAULT_MAX_BYTES,
    follow_links: bool = False,
    trusted_owner: bool = False,
    error: type[SlurmkitError] = UsageError,
    errors: str = "strict",
) -> str:
    """:func:`read_bounded`, decoded as UTF-8; with ``errors="strict"`` bad bytes are ``error``.

    ``errors="replace"`` is for text that is only shown or searched (a log, a
    cmdline), where one bad byte must not hide the rest.
    """
    data = read_bounded(
        path,
        what=what,
        max_bytes=max_bytes,
        follow_links=follow_links,
        trusted_owner=trusted_owner,
        error=error,
    )
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise error(
            f"cannot read {what} {path}: not UTF-8 text (byte {exc.start}: {exc.reason})"
        ) from None


def _check_owner(
    path: str | os.PathLike[str], info: os.stat_result, what: str, error: type[SlurmkitError]
) -> None:
    uid = os.geteuid()
    if info.st_uid not in (0, uid):
        raise error(
            f"refusing {what} {path}: owned by uid {info.st_uid}, not by you (uid {uid}) or root"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise error(
            f"refusing {what} {path}: writable by group or others "
            f"(mode {stat.S_IMODE(info.st_mode):04o}); fix it with: chmod go-w {path}"
        )


def write_atomic(path: str | os.PathLike[str], text: str, *, mode: int | None = None) -> Path:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half.

    A temporary file in the same directory (same file system) is written,
    flushed to disk and renamed over ``path``; on any failure it is removed
    and ``path`` is untouched. The new file gets the mode a plain ``open``
    would give it (0666 minus the umask), not mkstemp's 0600, or ``mode`` when
    given (a file that must never be group-writable, whatever the umask).
    """
    target = Path(path)
    directory = target.parent
    if target.is_dir():
        raise UsageError(f"cannot write {target}: it is a directory")
    if not directory.is_dir():
        raise UsageError(f"cannot write {target}: directory {directory} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise refused(exc, f"write {target}", EnvironmentProblem) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask() if mode is None else mode)
        os.replace(tmp, target)
        _fsync_dir(directory)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise refused(exc, f"write {target}", EnvironmentProblem) from exc
        raise
    return target


def state_path(name: str, env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/slurmkit/<name>`` (``~/.local/state`` when unset, empty or relative).

    Where a user's own slurmkit state lives (the exclude list, journals, the watch
    state): one rule for all of them. The XDG spec says a relative value is invalid
    and must be ignored; a state file that moved with the working directory would be
    forgotten by the next command run elsewhere.
    """
    env = os.environ if env is None else env
    state = env.get("XDG_STATE_HOME", "")
    base = Path(state) if state and os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "slurmkit" / name


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable: without it a crash can bring the old file back."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    """The process umask (reading it means setting it; set it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
