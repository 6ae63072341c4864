"""Cron periods (``20s``, ``30m``, ``12h``, ``2d``, ``hourly``) and ``HH:MM`` times of day.

Strict on purpose: a period names a folder (``cron.30m``) and a job (``cron-30m``), so
``30 min``, ``1.5h`` or ``30`` are refused instead of guessed at (the duration grammar is
:mod:`slurmkit.grammar.duration`'s), and every spelling of one length maps to one
canonical name (``60m``, ``1h`` and ``hourly`` are all ``hourly``), so the same period
can never get two chains.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from slurmkit.errors import UsageError
from slurmkit.grammar.duration import format_duration, parse_duration

# The seed's two folders keep their names: cron.hourly and cron.daily.
NAMED = {"hourly": 3600, "daily": 86400}
# Below this a chain would mostly be Slurm scheduling overhead and controller load.
MIN_PERIOD_SECONDS = 10
MAX_PERIOD_SECONDS = 366 * 86400

_AT = re.compile(r"([0-9]{1,2}):([0-9]{2})")


@dataclass(frozen=True, order=True)
class Period:
    """A chain's period: its length and the canonical name used in folder and job names."""

    seconds: int
    name: str

    @classmethod
    def of(cls, seconds: int) -> Period:
        return cls(seconds, canonical_name(seconds))

    @property
    def folder(self) -> str:
        return f"cron.{self.name}"

    @property
    def spelled(self) -> str:
        """The length in the largest exact unit (``1h`` for hourly), for --begin and templates."""
        return format_duration(self.seconds)


def canonical_name(seconds: int) -> str:
    for name, length in NAMED.items():
        if seconds == length:
            return name
    return format_duration(seconds)


def parse_period(text: str) -> Period:
    """``hourly``, ``daily`` or a duration of at least 10s: the period of a cron chain."""
    if isinstance(text, str) and text.strip() in NAMED:
        return Period.of(NAMED[text.strip()])
    seconds = parse_duration(text, "period", minimum=MIN_PERIOD_SECONDS)
    if seconds > MAX_PERIOD_SECONDS:
        raise UsageError(f"period {text!r} is longer than a year")
    return Period.of(seconds)


def parse_at(text: str) -> str:
    """``3:05`` or ``03:05`` -> ``03:05``: a time of day, 24-hour clock, local time."""
    match = _AT.fullmatch(text.strip())
    if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise UsageError(f"--at {text!r} is not a time of day HH:MM (00:00 to 23:59)")
    return f"{int(match.group(1)):02d}:{match.group(2)}"


def next_at(at: str, now: datetime) -> datetime:
    """The first ``at`` (HH:MM) strictly after ``now``: today's when still ahead, else tomorrow's.

    ``now`` is a naive local time, like the ``--begin`` value sbatch reads; the scheduler
    job computes the same thing with ``date -d "today HH:MM"`` for each next run.
    """
    hour, minute = (int(part) for part in parse_at(at).split(":"))
    today = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if today > now:
        return today
    return (now + timedelta(days=1)).replace(hour=hour, minute=minute, second=0, microsecond=0)


def begin_value(moment: datetime) -> str:
    """A local time as sbatch's ``--begin`` wants it: ``2026-01-31T03:00:00``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S")
