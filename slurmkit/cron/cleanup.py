"""``cron cleanup``: delete job logs older than N days under the cron dir (the seed's ``find``).

Every scheduler run and every cron job leaves a log; they are tiny but there can be
tens of thousands, and inodes run out before bytes do. Only ``*.out`` and ``*.err``
regular files are candidates; symlinks are never followed nor removed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

PATTERNS = (".out", ".err")


@dataclass
class Removal:
    path: Path
    age_seconds: int
    error: str | None = None


def old_logs(root: Path, older_than: int, now: float) -> list[Removal]:
    """Log files under ``root`` last modified more than ``older_than`` seconds before ``now``."""
    found: list[Removal] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(PATTERNS):
                continue
            path = Path(folder) / name
            try:
                info = path.lstat()
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            age = int(now - info.st_mtime)
            if age > older_than:
                found.append(Removal(path, age))
    return found


def remove(removals: list[Removal]) -> list[Removal]:
    """Delete each file; a file that cannot be deleted keeps its error, the rest go on."""
    for removal in removals:
        try:
            removal.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            removal.error = exc.strerror or str(exc)
    return removals
