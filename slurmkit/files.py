"""Writing files that other programs read: atomically, never half-written.

A hostfile, sbatch script or state file written in place can be read half-way by
the launcher, sbatch or a cron scheduler globbing ``*.slurm``; a temp file in the
same folder renamed over the target is either absent or complete.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from slurmkit.errors import EnvironmentProblem, UsageError


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
        raise EnvironmentProblem(f"cannot write {target}: {exc.strerror or exc}") from exc
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
            raise EnvironmentProblem(f"cannot write {target}: {exc.strerror or exc}") from exc
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
