"""``watch fs``: free space and free inodes against thresholds, with the 80 % caveat.

Distributed file systems rebalance over physical disks, so some of them fail writes
well before ``df`` says 100 % (IDEFICS-80B: "80 % is the new 100 %"). ``--usable 80%``
makes that the capacity: free space is what is left below the usable line, and a
percentage threshold is a percentage of the usable capacity. Inodes have their own
threshold (a venv is tens of thousands of tiny files); file systems that report no
inode count (btrfs, many network file systems) skip that check and say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurmkit.errors import UsageError
from slurmkit.watch.finding import WatchFinding
from slurmkit.watch.probe import DEFAULT_TIMEOUT, probe

_BINARY = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_DECIMAL = {"": 1, "K": 1000, "M": 1000**2, "G": 1000**3}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGTP]?)(?:i?B)?", re.I)
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)%")


@dataclass(frozen=True)
class Amount:
    """A threshold: an absolute number (bytes or inodes) or a percentage."""

    value: float
    percent: bool = False

    def of(self, total: float) -> float:
        return total * self.value / 100 if self.percent else self.value

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.percent else human(self.value)


def parse_percent(text: str, what: str) -> float:
    match = _PERCENT.fullmatch(text.strip())
    if not match or not 0 < float(match.group(1)) <= 100:
        raise UsageError(f"{what} {text!r}: expected a percentage such as 80%")
    return float(match.group(1))


def parse_size(text: str, what: str = "--min-free") -> Amount:
    """``2T``, ``500G``, ``1.5TiB`` (powers of 1024, like df -h) or ``10%``."""
    if text.strip().endswith("%"):
        return Amount(parse_percent(text, what), percent=True)
    match = _SIZE.fullmatch(text.strip())
    if not match:
        raise UsageError(f"{what} {text!r}: expected a size such as 2T, 500G, 10%")
    return Amount(float(match.group(1)) * _BINARY[match.group(2).upper()])


def parse_count(text: str, what: str = "--min-free-inodes") -> Amount:
    """``100000``, ``100k``, ``2M`` (powers of 1000) or ``5%``."""
    if text.strip().endswith("%"):
        return Amount(parse_percent(text, what), percent=True)
    match = re.fullmatch(r"(\d{1,30})\s*([KMG]?)", text.strip(), re.I)
    if not match:
        raise UsageError(f"{what} {text!r}: expected a count such as 100000, 100k, 5%")
    return Amount(float(int(match.group(1)) * _DECIMAL[match.group(2).upper()]))


def human(value: float) -> str:
    for unit in ("P", "T", "G", "M", "K"):
        if abs(value) >= _BINARY[unit]:
            return f"{value / _BINARY[unit]:.1f}{unit}"
    return f"{value:.0f}B"


@dataclass(frozen=True)
class Usage:
    """statvfs numbers in bytes and inodes, as an unprivileged user sees them."""

    total: float
    avail: float
    files: float
    favail: float

    @classmethod
    def from_probe(cls, values: dict[str, float]) -> Usage:
        size = values["frsize"]
        return cls(
            values["blocks"] * size, values["bavail"] * size, values["files"], values["favail"]
        )


def assess_fs(
    path: str,
    usage: Usage,
    min_free: Amount | None,
    min_free_inodes: Amount | None,
    usable: float = 100.0,
) -> WatchFinding:
    """Compare one file system's usage with the thresholds; all numbers in the message."""
    capacity = usage.total * usable / 100
    free = max(0.0, usage.avail - (usage.total - capacity))
    problems: list[str] = []
    cap_text = human(capacity) + (
        f" usable ({usable:g}% of {human(usage.total)})" if usable < 100 else ""
    )
    parts = [f"{human(free)} free of {cap_text}"]
    if min_free is not None and free < min_free.of(capacity):
        problems.append(f"free space below {min_free}")
    if usage.files > 0:
        inode_pct = 100 * usage.favail / usage.files
        parts.append(f"{usage.favail:.0f} of {usage.files:.0f} inodes free ({inode_pct:.1f}%)")
        if min_free_inodes is not None and usage.favail < min_free_inodes.of(usage.files):
            problems.append(f"free inodes below {min_free_inodes}")
    elif min_free_inodes is not None:
        parts.append("inode check skipped: the file system reports no inode count")
    message = ", ".join(parts) + (f": {'; '.join(problems)}" if problems else "")
    details = {
        "total": usage.total,
        "usable": capacity,
        "free": free,
        "inodes": usage.files,
        "inodes_free": usage.favail,
        "problems": problems,
    }
    return WatchFinding("fs", f"fs:{path}", f"fs {path}", not problems, message, details)


def check_fs(
    path: str,
    min_free: Amount | None,
    min_free_inodes: Amount | None,
    usable: float = 100.0,
    timeout: float = DEFAULT_TIMEOUT,
) -> WatchFinding:
    answer = probe("statvfs", path, timeout)
    if answer.error:
        return WatchFinding("fs", f"fs:{path}", f"fs {path}", False, f"cannot stat: {answer.error}")
    return assess_fs(path, Usage.from_probe(answer.values), min_free, min_free_inodes, usable)
