"""Writing rendered scripts: atomically, and under names that never collide.

A script written in place can be half-written when sbatch (or a cron scheduler
globbing ``*.slurm``) reads it; a temporary file in the same folder renamed over the
target is either absent or complete.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from datetime import datetime
from pathlib import Path

from slurmkit.errors import UsageError


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file + rename; file mode follows the umask."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"cannot write {path}: folder {folder} does not exist")
    if path.is_dir():
        raise UsageError(f"cannot write {path}: it is a directory")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def script_path(folder: Path, template_name: str, now: datetime | None = None) -> Path:
    """``<folder>/<template>-<YYYYmmdd-HHMMSS>-<4 hex>.slurm``: sortable, unique per submit."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return folder / f"{template_name}-{stamp}-{secrets.token_hex(2)}.slurm"
