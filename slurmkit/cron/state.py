"""The state file each scheduler run leaves behind (``scheduler/<chain>.last-run``).

Written by the scheduler job itself (``cron/cron-scheduler.slurm.j2``), one ``key=value``
per line, replaced atomically: ``last_run`` (``date -Is``), ``job``, ``chain``,
``period``, ``submitted``, ``failed``, one ``launched=<id> <file>`` per job submitted,
one ``failed_file=<file>`` per job sbatch refused, ``error=<text>`` when the run could
not even look at its folder. It is how ``cron status`` and ``watch cron`` know when a
chain last ran and what it did, without asking slurmdbd.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from slurmkit.errors import SlurmkitError
from slurmkit.files import read_text_bounded

MAX_BYTES = 1024 * 1024  # a state file is a few lines per job of the period


@dataclass(frozen=True)
class Launched:
    job_id: str
    file: str


@dataclass(frozen=True)
class LastRun:
    """One scheduler run; ``problem`` is set when the file itself could not be read."""

    last_run: datetime | None = None
    job_id: str | None = None
    chain: str | None = None
    period: str | None = None
    submitted: int = 0
    failed: int = 0
    launched: tuple[Launched, ...] = ()
    failed_files: tuple[str, ...] = ()
    error: str | None = None
    problem: str | None = None


def parse_state(text: str) -> LastRun:
    """Parse a state file; unknown keys are ignored (older or newer schedulers)."""
    single: dict[str, str] = {}
    launched: list[Launched] = []
    failed_files: list[str] = []
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key == "launched":
            job_id, _, file = value.partition(" ")
            launched.append(Launched(job_id, file))
        elif key == "failed_file":
            failed_files.append(value)
        else:
            single[key] = value
    when = _time(single.get("last_run"))
    return LastRun(
        last_run=when,
        job_id=single.get("job") or None,
        chain=single.get("chain") or None,
        period=single.get("period") or None,
        submitted=_int(single.get("submitted")),
        failed=_int(single.get("failed")),
        launched=tuple(launched),
        failed_files=tuple(failed_files),
        error=single.get("error") or None,
        problem=None if when else "no last_run time in the state file",
    )


def read_state(path: Path) -> LastRun | None:
    """The last run recorded at ``path``; None when no run has recorded anything yet."""
    try:
        text = read_text_bounded(path, what="state file", max_bytes=MAX_BYTES, errors="replace")
    except FileNotFoundError:
        return None
    except SlurmkitError as exc:
        return LastRun(problem=str(exc))
    return parse_state(text)


def _time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.astimezone()


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0
