"""The end of a job's stdout and stderr, and the failure signatures users look for in it.

A log is the user's own file: it may be huge, binary, a FIFO, unreadable to the caller, or
gone. Each is read through the one bounded reader; anything it refuses, and a tail that is
not text, is skipped with a note, never a failure of ``why``. Only the last
:data:`TAIL_LINES` lines are searched: the error that ended a job is at its end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from slurmkit.errors import SlurmkitError
from slurmkit.files import read_bounded
from slurmkit.printable import printable

MAX_BYTES = 16 * 1024 * 1024
TAIL_LINES = 200
SHOWN_LINES = 5

# (label, pattern); the first match of each label in the tail is kept, the last line wins.
SIGNATURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("CUDA out of memory", re.compile(r"CUDA out of memory|OutOfMemoryError", re.I)),
    (
        "NCCL timeout",
        re.compile(r"NCCL.*(timeout|timed out)|Watchdog caught collective operation timeout"),
    ),
    ("NCCL connection failed", re.compile(r"Connect to \S+ failed")),
    ("bus error", re.compile(r"\bBus error\b")),
    ("segmentation fault", re.compile(r"\bSegmentation fault\b")),
    ("killed", re.compile(r"\bKilled\b\s*(\(core dumped\))?\s*$|\bKilled process\b")),
    ("Slurm time limit", re.compile(r"\*\*\* .* DUE TO TIME LIMIT \*\*\*")),
    ("Slurm preemption", re.compile(r"\*\*\* .* DUE TO PREEMPTION \*\*\*")),
    ("Slurm cancel", re.compile(r"\*\*\* .* CANCELLED AT \S+ (\*\*\*|by|BY)")),
    ("Slurm node failure", re.compile(r"\*\*\* .* DUE TO NODE FAILURE")),
    ("memory limit", re.compile(r"Exceeded (job|step) memory limit|oom[-_]kill", re.I)),
)
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)?)(: .*)?$")


@dataclass(frozen=True)
class Finding:
    label: str
    line: str
    path: str


@dataclass(frozen=True)
class LogReport:
    findings: tuple[Finding, ...]
    tails: dict[str, tuple[str, ...]]
    notes: tuple[str, ...]


def read_tail(path: str, notes: list[str]) -> list[str] | None:
    """The last lines of ``path`` as text, or None with a note saying why not."""
    try:
        data = read_bounded(path, what="job log", max_bytes=MAX_BYTES, follow_links=True)
    except FileNotFoundError:
        notes.append(f"log {printable(path)}: not found (gone, or on a node-local disk)")
        return None
    except SlurmkitError as exc:
        notes.append(f"log skipped: {exc}")
        return None
    tail = data[-256 * 1024 :]
    if b"\0" in tail:
        notes.append(f"log {printable(path)}: binary (NUL bytes), skipped")
        return None
    return tail.decode("utf-8", errors="replace").splitlines()[-TAIL_LINES:]


def last_exception(lines: list[str]) -> str | None:
    """The exception line of the last Python traceback in ``lines``."""
    starts = [i for i, line in enumerate(lines) if line.strip() == _TRACEBACK]
    if not starts:
        return None
    for line in lines[starts[-1] + 1 :]:
        if line[:1].isspace() or not line.strip():
            continue
        if _EXCEPTION.match(line.strip()):
            return line.strip()
    return None


def signatures(lines: Iterable[str], path: str) -> list[Finding]:
    found: dict[str, Finding] = {}
    for line in lines:
        for label, pattern in SIGNATURES:
            if pattern.search(line):
                found[label] = Finding(label, printable(line.strip())[:300], path)
    return list(found.values())


def scan(paths: Iterable[str]) -> LogReport:
    """Read each distinct log once; signatures and the last exception of each."""
    notes: list[str] = []
    findings: list[Finding] = []
    tails: dict[str, tuple[str, ...]] = {}
    for path in dict.fromkeys(p for p in paths if p and p != "/dev/null"):
        lines = read_tail(path, notes)
        if lines is None:
            continue
        tails[path] = tuple(printable(line) for line in lines[-SHOWN_LINES:])
        findings.extend(signatures(lines, path))
        exception = last_exception(lines)
        if exception:
            findings.append(Finding("Python exception", printable(exception)[:300], path))
    return LogReport(tuple(findings), tails, tuple(notes))
