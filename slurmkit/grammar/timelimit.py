"""Slurm time limits: ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``.

The grammar of ``sbatch --time`` and of what ``scontrol``/``squeue``/``sacct``
print for TimeLimit, RunTime, TimeLeft, MaxTime and DefaultTime (Slurm's
``time_str2secs`` in src/common/parse_time.c): a bare number is *minutes*,
two fields are minutes and seconds, three are hours, minutes and seconds, and
a day prefix ``D-`` shifts what follows to hours (``2-03`` is 2 days 3 hours).
``UNLIMITED`` and ``INFINITE`` mean no limit; Slurm also prints
``Partition_Limit``, ``NOT_SET`` and ``N/A`` where a job or partition has none.

Two readers over one grammar: :func:`from_slurm` for what Slurm printed
(:class:`SlurmParseError` on anything else) and :func:`parse_limit` for what a
user typed (:class:`UsageError`, and the fields after the first must be in
range, so ``1:99:00`` is refused rather than read as 2h39m). One writer,
:func:`format_limit`, in the ``[D-]HH:MM:SS`` form Slurm prints and accepts.
"""

from __future__ import annotations

import re

from slurmkit.errors import SlurmParseError, UsageError

UNLIMITED_WORDS = ("UNLIMITED", "INFINITE")
# What Slurm prints where there is no limit to report; they read as None (no limit).
_NO_LIMIT = frozenset(
    {*UNLIMITED_WORDS, "Partition_Limit", "NOT_SET", "INVALID", "NONE", "N/A", ""}
)
_FIELDS = re.compile(r"(?:(\d{1,9})-)?(\d{1,9})(?::(\d{1,9}))?(?::(\d{1,9}))?")
FORMS = "MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED"


def _split(text: str) -> tuple[int, int, int, int, bool] | None:
    """(days, hours, minutes, seconds, minutes_lead) or None; minutes_lead: MM or MM:SS form."""
    match = _FIELDS.fullmatch(text)
    if not match:
        return None
    days, first, second, third = match.groups()
    if days is not None:
        return int(days), int(first), int(second or 0), int(third or 0), False
    if third is not None:
        return 0, int(first), int(second), int(third), False
    return 0, 0, int(first), int(second or 0), True


def _seconds(days: int, hours: int, minutes: int, seconds: int) -> int:
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def from_slurm(value: str | None) -> int | None:
    """Seconds in a time Slurm printed; None for ``UNLIMITED``, ``Partition_Limit`` and kin."""
    text = (value or "").strip()
    if text in _NO_LIMIT:
        return None
    parts = _split(text)
    if parts is None:
        raise SlurmParseError(f"not a Slurm duration: {text!r}")
    return _seconds(*parts[:4])


def is_unlimited(text: str) -> bool:
    """``UNLIMITED`` or ``INFINITE`` in any case: ``sbatch --time``'s words for no limit."""
    return text.strip().upper() in UNLIMITED_WORDS


def parse_limit(text: str, what: str = "time limit") -> int | None:
    """Seconds in a time limit a user typed; None for ``UNLIMITED``/``INFINITE``.

    Strict where Slurm would silently carry over: hours after a day count are
    0-23, minutes and seconds after the first field 0-59. Seconds are kept
    (``sbatch --time=1:30`` is 90 s, which Slurm rounds up to 2 minutes);
    callers that need whole minutes check ``% 60`` themselves.
    """
    value = text.strip()
    what = f"{what} " if what else ""
    if is_unlimited(value):
        return None
    parts = _split(value)
    if parts is None:
        raise UsageError(f"{what}{text!r} is not a Slurm time limit ({FORMS})")
    days, hours, minutes, seconds, minutes_lead = parts
    if days and hours > 23:
        raise UsageError(f"{what}{text!r}: hours after a day count must be 0-23")
    if (minutes > 59 and not minutes_lead) or seconds > 59:
        raise UsageError(f"{what}{text!r}: minutes and seconds must be 0-59")
    return _seconds(days, hours, minutes, seconds)


def format_limit(seconds: int | None) -> str:
    """Slurm's ``[D-]HH:MM:SS`` (``1-00:00:00``, ``00:05:00``); ``UNLIMITED`` for None."""
    if seconds is None:
        return "UNLIMITED"
    days, rest = divmod(max(seconds, 0), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}-{clock}" if days else clock
