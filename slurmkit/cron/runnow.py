"""``cron run-now``: submit a period's jobs now, from this machine, leaving its chain alone.

The scheduler chain keeps its own rhythm: moving its queued run would shift every
later run (or, for a one-off scheduler run, wait behind the queued one because of
``--dependency=singleton``). So this submits the folder's ``*.slurm`` files the way
the scheduler does (sorted, scheduler files skipped, working folder = the period's
folder via ``--chdir``) and records nothing in the chain's state file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from slurmkit.cron.layout import CronDir
from slurmkit.cron.period import Period
from slurmkit.errors import SlurmkitError
from slurmkit.files import read_text_bounded

SCHEDULER_MARKER = "# slurmkit: cron-scheduler"
MAX_SCRIPT_BYTES = 10 * 1024 * 1024  # lint's limit for a batch script


@dataclass
class Submission:
    """One file of a period folder: submitted (job_id), refused (error) or skipped."""

    period: str
    file: str
    job_id: str | None = None
    error: str | None = None
    skipped: str | None = None

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)

    @property
    def line(self) -> str:
        """The scheduler's own log format, so one grep reads both."""
        if self.job_id:
            return f"SLURMKIT_CRON submitted job={self.job_id} file={self.file}"
        if self.skipped:
            return f"SLURMKIT_CRON skipped reason={self.skipped} file={self.file}"
        if self.error and not self.file:
            return f"SLURMKIT_CRON failed period={self.period} error={self.error}"
        return f"SLURMKIT_CRON failed file={self.file} error={self.error or 'dry run'}"


def is_scheduler(path: Path) -> bool:
    """Whether ``path`` is a scheduler script (never submitted by run-now); unreadable: not one."""
    try:
        text = read_text_bounded(path, what="job", max_bytes=MAX_SCRIPT_BYTES, errors="replace")
    except (OSError, SlurmkitError):
        return False
    return SCHEDULER_MARKER in text.splitlines()


def folder_jobs(folder: Path) -> list[Path]:
    """``*.slurm`` regular files of ``folder``, sorted like bash sorts its glob (C locale)."""
    return sorted((p for p in folder.glob("*.slurm") if p.is_file()), key=lambda p: p.name)


def run_now(cron: CronDir, periods: Sequence[Period], *, dry_run: bool = False) -> list[Submission]:
    from slurmkit.slurm.submit import submit

    results: list[Submission] = []
    for period in periods:
        folder = cron.folder(period)
        if not folder.is_dir():
            results.append(Submission(period.name, "", error=f"folder {folder} does not exist"))
            continue
        for path in folder_jobs(folder):
            result = Submission(period.name, path.name)
            if is_scheduler(path):
                result.skipped = "scheduler"
            elif not dry_run:
                try:
                    result.job_id = submit(path.resolve(), [f"--chdir={folder}"])
                except SlurmkitError as exc:
                    result.error = str(exc)
            results.append(result)
    return results
