"""NVRM Xid records of the kernel log -> verdict, counting only what the NVIDIA driver logged.

Each Xid code gets its meaning and NVIDIA's action (the Xid catalog in NVIDIA's
"XID Errors" document): Xid 13, 31 and 43 are most often the application's own
fault (bad address, page fault, a channel it broke) and only warn; a memory or bus
error (48, 63, 64, 74, 79, 92, 94, 95, 119, ...) fails the node with reset or
replace. An Xid code the table does not know fails the node too, with the advice to
look it up: an event we cannot judge is not a pass.

**Evidence rule.** Users write into the kernel log: the segfault line names the
crashing program (its process name first, the file it ran from after `` in ``), so a
program named ``NVRM: Xid (PCI:0000:ff:00): 79, x`` puts that text in a kernel line.
A record counts only when

* the kernel logged it (facility ``kern`` in ``/dev/kmsg`` and ``dmesg --decode``, the
  kernel transport in the journal),
* its message *starts* with the driver's text, ``NVRM: Xid (PCI:dddd:bb:dd): code``
  (with `` GPU-I:n`` / `` GPU-CI:n`` on a MIG GPU), once the source's own prefix is
  stripped exactly as that source prints it (:func:`kmsg_record`,
  :func:`journal_record`, :func:`text_records`),
* and the PCI address is one of this node's GPUs (``gpus``; a node without one
  accepts none, and the verdict is *skipped*). ``gpus=None`` is only for a log read
  away from its node (``faulty xid --from``).

A file name can hold a newline. ``/dev/kmsg`` escapes it (``\\x0a``) and the
journal keeps it inside one message, and the text forms indent a message's next
lines under its prefix (``dmesg`` reading ``/dev/kmsg``, ``journalctl``), so such a
line never parses as a record. Only ``dmesg`` through ``syslog(2)`` (``dmesg -S``,
busybox, a kernel without ``/dev/kmsg``) prefixes every line: that text cannot tell
a driver line from a file name, which is why ``slurmkit health`` reads ``/dev/kmsg``.

``since`` (``faulty xid --since``, ``faulty scan --xid-since``: days, hours) keeps
events at or after that moment; a record whose time cannot be read is kept, since
leaving it out could hide the one that matters. ``slurmkit health`` does not use
times at all: it reads from a position (:mod:`slurmkit.health.kernlog`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from slurmkit.gpu import pci
from slurmkit.gpu.findings import PASS, SKIPPED, Action, GpuFinding, Verdict, from_findings

CHECK = "xid"
MENTION = "NVRM: Xid"
NO_GPU = "no GPU bound to the NVIDIA driver on this node: no Xid record can be one of its GPUs'"
_DRIVER = re.compile(
    r"NVRM: Xid \(PCI:(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
    r"(?: GPU-I:\d{1,3})?(?: GPU-CI:\d{1,3})?\): (?P<code>\d{1,4})(?:, (?P<rest>.*))?"
)
_PROC = re.compile(r"pid=(?P<pid>'?[^,]*'?), name=(?P<name>[^,]*)")

# dmesg (util-linux): [--decode prefix] then one time prefix, then the message.
_DECODE = r"(?:(?P<facility>[a-z]+) *:[a-z]+ *: )?"
_DMESG = re.compile(
    _DECODE + r"(?:\[ *\d+\.\d+\]"  # default: seconds since boot
    r"|\[(?P<ctime>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})\]"  # -T
    r"|(?P<iso>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2},\d{6}[+-]\d{2}:\d{2})) "  # iso
)
# journalctl -k: time, host, the kernel's identifier (no [pid]), then the message.
_JOURNAL = re.compile(
    r"(?:(?P<jiso>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{6})?(?:Z|[+-]\d{2}:?\d{2}))"
    r"|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d{6})?"  # short, short-precise
    r"|\[ *\d+\.\d+\])"  # short-monotonic
    r" \S+ kernel: "
)
_SOURCE = re.compile(r"^# source: (?P<source>dmesg|journalctl)\s*$", re.M)
_GPUS = re.compile(r"^# gpus:(?P<list>[^\n]*)$", re.M)


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
class Record:
    """One kernel log record: its message with the source's prefix stripped, and its time."""

    message: str
    when: datetime | None = None


@dataclass(frozen=True)
class XidEvent:
    pci: str
    code: int
    when: datetime | None
    process: str
    text: str


@dataclass
class Scan:
    """The accepted events, and what was refused (shown, never counted)."""

    events: list[XidEvent] = field(default_factory=list)
    foreign: dict[str, int] = field(default_factory=dict)  # PCI address -> records
    stray: int = 0  # lines or messages naming "NVRM: Xid" that are not a driver record

    def refused(self) -> str:
        parts = []
        if self.stray:
            parts.append(f"{self.stray} line(s) with {MENTION!r} not from the driver")
        if self.foreign:
            ids = ", ".join(sorted(self.foreign)[:3])
            parts.append(
                f"{sum(self.foreign.values())} record(s) for PCI {ids}, not a GPU of this node"
            )
        return f" (ignored: {'; '.join(parts)})" if parts else ""


# ---------------------------------------------------------------- sources


def kmsg_record(line: str, boot: datetime | None = None) -> tuple[int, Record | None] | None:
    """``pri,seq,usec,flags;message`` (one ``/dev/kmsg`` read) -> (seq, record).

    The record is None when userspace wrote it (a facility other than ``kern``): its
    sequence number still counts as read. None for a line that is not a record.
    """
    head, sep, rest = line.partition(";")
    fields = head.split(",")
    if not sep or len(fields) < 4:
        return None
    try:
        pri, seq, usec = int(fields[0]), int(fields[1]), int(fields[2])
    except ValueError:
        return None
    if pri < 0 or seq < 0 or usec < 0:
        return None
    message = rest.split("\n", 1)[0]  # the lines after it are the record's " KEY=value" pairs
    if pri >> 3 != 0:
        return seq, None
    when = boot + timedelta(microseconds=usec) if boot is not None else None
    return seq, Record(message, when)


def journal_record(entry: Mapping[str, object]) -> Record | None:
    """A ``journalctl -o json`` entry -> its record, or None when the kernel did not log it."""
    if entry.get("_TRANSPORT") != "kernel":
        return None
    message = entry.get("MESSAGE")
    if isinstance(message, list) and all(isinstance(b, int) and 0 <= b < 256 for b in message):
        message = bytes(message).decode("utf-8", errors="replace")  # not UTF-8: bytes
    if not isinstance(message, str):
        return None
    when = None
    stamp = entry.get("__REALTIME_TIMESTAMP")
    if isinstance(stamp, str) and stamp.isdigit():
        when = datetime.fromtimestamp(int(stamp) / 1e6, timezone.utc)
    return Record(message, when)


def text_records(text: str, source: str | None = None) -> tuple[list[Record], int]:
    """The records of ``dmesg`` or ``journalctl -k`` text, and how many lines name
    ``NVRM: Xid`` without being a kernel record (an indented next line, another format).

    ``source`` (``dmesg``, ``journalctl``; a capture's ``# source:`` line, read here
    when not given) allows only that source's prefixes; None allows both.
    """
    if source is None:
        found = _SOURCE.search(text[:4096])
        source = found["source"] if found else None
    patterns = {"dmesg": (_DMESG,), "journalctl": (_JOURNAL,)}.get(source or "", (_DMESG, _JOURNAL))
    records: list[Record] = []
    stray = 0
    for line in text.splitlines():
        record = _text_record(line, patterns)
        if record is not None:
            records.append(record)
        elif MENTION in line:
            stray += 1
    return records, stray


def _text_record(line: str, patterns: Iterable[re.Pattern[str]]) -> Record | None:
    for pattern in patterns:
        match = pattern.match(line)
        if match is None:
            continue
        groups = match.groupdict()
        if groups.get("facility") not in (None, "kern"):
            return None  # dmesg --decode: userspace wrote it to /dev/kmsg
        return Record(line[match.end() :], _time(groups))
    return None


def capture_gpus(text: str) -> frozenset[pci.Address] | None:
    """A capture's ``# gpus: 0000:3b:00.0 ...`` line (the node's GPUs), or None without one."""
    found = _GPUS.search(text[:4096])
    if found is None:
        return None
    addresses = [pci.address(word) for word in found["list"].split()]
    return frozenset(a for a in addresses if a is not None)


# ---------------------------------------------------------------- judging


def scan(
    records: Iterable[Record],
    *,
    gpus: Set[pci.Address] | None,
    since: datetime | None = None,
    stray: int = 0,
) -> Scan:
    """The driver's Xid records on ``gpus`` (None: any address) at or after ``since``."""
    found = Scan(stray=stray)
    for record in records:
        match = _DRIVER.match(record.message)
        if match is None:
            found.stray += MENTION in record.message
            continue
        when = record.when
        if since is not None and when is not None and when < _comparable(since, when):
            continue
        address = pci.address(match["pci"])
        shown = pci.show(address) if address else match["pci"]
        if gpus is not None and address not in gpus:
            found.foreign[shown] = found.foreign.get(shown, 0) + 1
            continue
        rest = match["rest"] or ""
        proc = _PROC.match(rest)
        process = proc["name"].strip() if proc else ""
        event = XidEvent(f"PCI:{shown}", int(match["code"]), when, process, rest[:200])
        found.events.append(event)
    return found


def events(
    text: str, since: datetime | None = None, *, gpus: Set[pci.Address] | None = None
) -> list[XidEvent]:
    """Every accepted Xid event in ``dmesg``/``journalctl -k`` text."""
    records, stray = text_records(text)
    return scan(records, gpus=gpus, since=since, stray=stray).events


def parse(
    text: str, since: datetime | None = None, *, gpus: Set[pci.Address] | None = None
) -> Verdict:
    """The verdict for ``dmesg``/``journalctl -k`` text (a capture: its ``# gpus:`` too)."""
    if gpus is None:
        gpus = capture_gpus(text)
    if gpus is not None and not gpus:
        return Verdict(CHECK, SKIPPED, NO_GPU)
    records, stray = text_records(text)
    return verdict(scan(records, gpus=gpus, since=since, stray=stray), since)


def verdict(found: Scan, since: datetime | None = None, where: str = "") -> Verdict:
    """One finding per (GPU, Xid code): count, first and last time, meaning, action."""
    if not found.events:
        when = f" since {since.isoformat(timespec='seconds')}" if since else ""
        return Verdict(CHECK, PASS, f"no Xid event in the kernel log{when}{where}{found.refused()}")
    groups: dict[tuple[str, int], list[XidEvent]] = {}
    for event in found.events:
        groups.setdefault((event.pci, event.code), []).append(event)
    findings = [_finding(pci_id, code, group) for (pci_id, code), group in groups.items()]
    gpus = len({pci_id for pci_id, _ in groups})
    summary = f"{len(found.events)} Xid event(s){where}{found.refused()}"
    return from_findings(CHECK, findings, gpus, summary)


def _finding(pci_id: str, code: int, group: list[XidEvent]) -> GpuFinding:
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
    return GpuFinding(pci_id, f"Xid {code}", detail, info.action, info.fatal)


def _time(groups: Mapping[str, str | None]) -> datetime | None:
    iso = groups.get("iso") or groups.get("jiso")
    try:
        if iso:
            iso = iso.replace(",", ".").replace("Z", "+00:00")
            if iso[-5] in "+-" and ":" not in iso[-5:]:  # +0000 (journalctl short-iso)
                iso = iso[:-2] + ":" + iso[-2:]
            return datetime.fromisoformat(iso)
        ctime = groups.get("ctime")
        if ctime:
            return datetime.strptime(ctime, "%a %b %d %H:%M:%S %Y")  # dmesg -T: local time
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
