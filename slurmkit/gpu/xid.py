"""NVRM Xid events in kernel log lines (``dmesg``, ``dmesg -T``, ``journalctl -k``) -> verdict.

Each Xid code gets its meaning and NVIDIA's action (the Xid catalog in NVIDIA's
"XID Errors" document): Xid 13, 31 and 43 are most often the application's own
fault (bad address, page fault, a channel it broke) and only warn; a memory or bus
error (48, 63, 64, 74, 79, 92, 94, 95, 119, ...) fails the node with reset or
replace. An Xid code the table does not know fails the node too, with the advice to
look it up: an event we cannot judge is not a pass.

``since`` keeps events at or after that moment; a line whose time cannot be read
(``dmesg`` without ``--time-format``: seconds since boot) is kept, since leaving it
out could hide the one that matters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from slurmkit.gpu.findings import PASS, Action, GpuFinding, Verdict, from_findings

CHECK = "xid"
_XID = re.compile(r"NVRM: Xid \((?P<pci>[^)]{1,40})\): (?P<code>\d{1,4})(?:, (?P<rest>.*))?")
_ISO = re.compile(
    r"(?P<t>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2})(?:[.,]\d+)?(?P<tz>Z|[+-]\d{2}:?\d{2})?"
)
_CTIME = re.compile(r"\[(?P<t>\w{3} \w{3} +\d{1,2} \d{2}:\d{2}:\d{2} \d{4})\]")
_PROC = re.compile(r"pid=(?P<pid>'?[^,]*'?), name=(?P<name>[^,]*)")


@dataclass(frozen=True)
class XidInfo:
    meaning: str
    action: Action
    fatal: bool


XIDS: dict[int, XidInfo] = {
    8: XidInfo("GPU stopped processing (timeout)", Action.INVESTIGATE_APP, False),
    13: XidInfo(
        "graphics engine exception (often an out-of-range address)", Action.INVESTIGATE_APP, False
    ),
    31: XidInfo("GPU memory page fault (often an illegal address)", Action.INVESTIGATE_APP, False),
    32: XidInfo("invalid or corrupted push buffer stream", Action.RESET, True),
    43: XidInfo(
        "GPU stopped processing: a channel was reset (the application's fault)",
        Action.INVESTIGATE_APP,
        False,
    ),
    45: XidInfo(
        "preemptive cleanup after earlier errors (read the Xids before it)", Action.WATCH, False
    ),
    48: XidInfo("double bit (uncorrectable) ECC error", Action.RESET, True),
    61: XidInfo("internal micro-controller breakpoint/warning", Action.RESET, True),
    62: XidInfo("internal micro-controller halt", Action.RESET, True),
    63: XidInfo(
        "ECC page retirement or row remapping recorded: reset to activate", Action.RESET, True
    ),
    64: XidInfo("ECC page retirement or row remapper recording failure", Action.REPLACE, True),
    68: XidInfo("video processor (NVDEC) exception", Action.INVESTIGATE_APP, False),
    69: XidInfo("graphics engine class error", Action.INVESTIGATE_APP, False),
    74: XidInfo("NVLink error", Action.RESET, True),
    79: XidInfo("GPU has fallen off the bus", Action.RESET, True),
    92: XidInfo("high single-bit ECC error rate", Action.WATCH, False),
    94: XidInfo(
        "contained ECC error (the affected application must restart; reset the GPU when idle)",
        Action.RESET,
        True,
    ),
    95: XidInfo(
        "uncontained ECC error (every application on the GPU is affected)", Action.RESET, True
    ),
    109: XidInfo("context switch timeout", Action.INVESTIGATE_APP, False),
    119: XidInfo(
        "GSP RPC timeout (the GPU's system processor stopped answering)", Action.RESET, True
    ),
    120: XidInfo("GSP error", Action.RESET, True),
    121: XidInfo("C2C link error", Action.RESET, True),
    140: XidInfo("unrecovered ECC error", Action.RESET, True),
}


@dataclass(frozen=True)
class XidEvent:
    pci: str
    code: int
    when: datetime | None
    process: str
    text: str


def events(text: str, since: datetime | None = None) -> list[XidEvent]:
    """Every Xid event in ``text`` at or after ``since`` (lines without a time are kept)."""
    found = []
    for line in text.splitlines():
        match = _XID.search(line)
        if match is None:
            continue
        when = _time(line[: match.start()])
        if since is not None and when is not None and when < _comparable(since, when):
            continue
        rest = match["rest"] or ""
        proc = _PROC.match(rest)
        process = proc["name"].strip() if proc else ""
        found.append(XidEvent(match["pci"], int(match["code"]), when, process, rest[:200]))
    return found


def parse(text: str, since: datetime | None = None) -> Verdict:
    """One finding per (GPU, Xid code): count, first and last time, meaning, action."""
    found = events(text, since)
    if not found:
        when = f" since {since.isoformat(timespec='seconds')}" if since else ""
        return Verdict(CHECK, PASS, f"no Xid event in the kernel log{when}")
    groups: dict[tuple[str, int], list[XidEvent]] = {}
    for event in found:
        groups.setdefault((event.pci, event.code), []).append(event)
    findings = []
    for (pci, code), group in groups.items():
        info = XIDS.get(code) or XidInfo(
            f"Xid {code} is not in slurmkit's table: look it up in NVIDIA's Xid catalog",
            Action.RESET,
            True,
        )
        times = [e.when for e in group if e.when is not None]
        span = ""
        if times:
            first, last = (t.isoformat(timespec="seconds") for t in (min(times), max(times)))
            span = f", {first}..{last}"
        names = sorted({e.process for e in group if e.process and "unknown" not in e.process})
        who = f", process {', '.join(names[:3])}" if names else ""
        detail = f"{len(group)} event(s){span}{who}: {info.meaning}"
        findings.append(GpuFinding(pci, f"Xid {code}", detail, info.action, info.fatal))
    gpus = len({pci for pci, _ in groups})
    return from_findings(CHECK, findings, gpus, f"{len(found)} Xid event(s)")


def _time(prefix: str) -> datetime | None:
    iso = _ISO.search(prefix)
    if iso:
        tz = iso["tz"] or ""
        if tz and tz != "Z" and ":" not in tz:
            tz = tz[:3] + ":" + tz[3:]
        try:
            return datetime.fromisoformat(
                iso["t"].replace(" ", "T") + ("+00:00" if tz == "Z" else tz)
            )
        except ValueError:
            return None
    ctime = _CTIME.search(prefix)
    if ctime:
        try:
            return datetime.strptime(ctime["t"], "%a %b %d %H:%M:%S %Y")
        except ValueError:
            return None
    return None


def _comparable(since: datetime, when: datetime) -> datetime:
    """``since`` in ``when``'s kind: aware vs naive (``dmesg -T`` prints local time)."""
    if when.tzinfo is None and since.tzinfo is not None:
        return since.astimezone().replace(tzinfo=None)
    if when.tzinfo is not None and since.tzinfo is None:
        return since.astimezone()
    return since
