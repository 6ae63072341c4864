"""Writing rendered scripts: atomically, and under names that never collide.

A script written in place can be half-written when sbatch (or a cron scheduler
globbing ``*.slurm``) reads it; a temporary file in the same folder renamed over the
target is either absent or complete.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from pathlib import Path

from slurmkit.files import write_atomic  # noqa: F401  (re-exported for callers)


def script_path(folder: Path, template_name: str, now: datetime | None = None) -> Path:
    """``<folder>/<template>-<YYYYmmdd-HHMMSS>-<4 hex>.slurm``: sortable, unique per submit."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return folder / f"{template_name}-{stamp}-{secrets.token_hex(2)}.slurm"
