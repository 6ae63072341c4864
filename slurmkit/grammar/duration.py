"""Human durations for slurmkit's own options: ``30s``, ``30m``, ``12h``, ``7d``, ``2w``, ``1h30m``.

One rule for every option that takes a length of time (``--since``, ``--stale``,
``--grace``, ``--realert``, ``--older-than``, ``--every``, a template's
``duration`` parameter): whole numbers, each with one unit, largest unit
first (``1d12h``, ``1h30m``). A bare number is refused, never guessed: ``--since 7``
meaning seven seconds (one command) while ``--stale 7`` was refused (another)
is the inconsistency this module ends; the message says which spellings
would be taken. Slurm's own time limits (``1:30:00``, ``2-00``, where a bare
number is minutes) are :mod:`.timelimit`'s, not this module's.
"""

from __future__ import annotations

import re

from slurmkit.errors import UsageError

UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_PART = r"(?:(?P<{0}>0|[1-9][0-9]{{0,9}}){0})?"
# About 317 years: longer is a typo, and every accepted length formats back to at most
# ten digits, which this grammar reads again.
LONGEST = 10**10 - 1
_DURATION = re.compile("".join(_PART.format(unit) for unit in UNITS), re.IGNORECASE)
_BARE = re.compile(r"[0-9]{1,12}")


def parse_duration(
    text: str, what: str = "duration", minimum: int = 1, maximum: int | None = None
) -> int:
    """Seconds in ``90s``, ``30m``, ``6h``, ``7d``, ``1w`` or ``1h30m``.

    ``what`` names the option in the one-line error (``--since '7': say 7s, 7m,
    7h or 7d``); ``minimum`` and ``maximum`` bound the result, in seconds.
    """
    value = text.strip() if isinstance(text, str) else ""
    what = f"{what} " if what else ""
    match = _DURATION.fullmatch(value) if value else None
    if not match or not any(match.groups()):
        if _BARE.fullmatch(value):
            raise UsageError(f"{what}{value!r}: say {value}s, {value}m, {value}h or {value}d")
        raise UsageError(
            f"{what}{text!r} is not a duration: a whole number and a unit s, m, h, d or w "
            "(90s, 30m, 6h, 7d, 1h30m)"
        )
    seconds = sum(int(match.group(u) or 0) * UNITS[u] for u in UNITS)
    if seconds > LONGEST:
        raise UsageError(f"{what}{text!r} is too long: at most {format_duration(LONGEST)}")
    if seconds < minimum:
        raise UsageError(f"{what}{text!r} is too short: at least {format_duration(minimum)}")
    if maximum is not None and seconds > maximum:
        raise UsageError(f"{what}{text!r} is too long: at most {format_duration(maximum)}")
    return seconds


def format_duration(seconds: int) -> str:
    """``1800`` -> ``30m``: one number in the largest unit that divides exactly (``0s`` for 0).

    Canonical, so ``60m`` and ``1h`` name the same thing (cron folder and job
    names rely on it), and :func:`parse_duration` reads it back exactly.
    """
    if seconds == 0:
        return "0s"
    for unit, length in UNITS.items():
        if seconds % length == 0:
            return f"{seconds // length}{unit}"
    raise AssertionError("unreachable: every integer divides by 1")


def human_duration(seconds: float) -> str:
    """``3725`` -> ``1h2m``: the two largest units, for messages (rounded down, not exact)."""
    left = max(0, int(seconds))
    parts: list[str] = []
    for unit in ("d", "h", "m", "s"):
        count, left = divmod(left, UNITS[unit])
        if count or (unit == "s" and not parts):
            parts.append(f"{count}{unit}")
        if len(parts) == 2:
            break
    return "".join(parts)
