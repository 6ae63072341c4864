"""This node's kernel log from a position on: ``/dev/kmsg`` by sequence number, or the journal.

Why positions, not times: the kernel stamps a record with its own clock, which drifts
from wall time (0.4-1.2 s measured, more after a long uptime or a migration), so "the
records since the last run's start" misses a record logged inside the drift. Every
``/dev/kmsg`` record carries a sequence number, and every journal entry a cursor:
a run reads the records after the last one the previous run read, and hands on the
last one it read itself (:class:`Position`, kept in the node's state file).

Sources, in order: ``/dev/kmsg`` (``pri,seq,usec,flags;message``: control characters
escaped, the facility given, so :mod:`slurmkit.gpu.xid` can tell the kernel's records
from a crashing program's name), then ``journalctl -k -b -o json`` with
``--after-cursor`` where ``/dev/kmsg`` cannot be opened (a container). ``dmesg`` is
not used: it has no position, and without ``/dev/kmsg`` it reads ``syslog(2)``, whose
text cannot tell a driver line from a file name holding a newline.

A position from another boot (``/proc/sys/kernel/random/boot_id``) or another source
is no position: every record of this boot is read again, which can only count more.
So is a ``/dev/kmsg`` position past the newest record (the log restarted).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from slurmkit import _proc, files
from slurmkit.errors import SlurmkitError
from slurmkit.gpu import xid

KMSG = "/dev/kmsg"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
MAX_RECORDS = 2_000_000  # a 256 MiB ring of short records; bounds a run whatever the kernel keeps
_READ = 16384  # one read returns one record; a record is at most ~1 KiB plus its dictionary
_JOURNAL_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"


class Unreadable(Exception):
    """Neither source could be read: the xid check is unknown, with this text."""


@dataclass(frozen=True)
class Position:
    """The last record a run read: ``seq`` in ``/dev/kmsg``, or a journal ``cursor``."""

    source: str  # "kmsg" or "journal"
    boot_id: str
    seq: int | None = None
    cursor: str | None = None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"source": self.source, "boot_id": self.boot_id}
        if self.seq is not None:
            data["seq"] = self.seq
        if self.cursor is not None:
            data["cursor"] = self.cursor
        return data

    @classmethod
    def from_json(cls, data: object) -> Position | None:
        """None for anything but a position this module wrote (read again from the start)."""
        if not isinstance(data, dict):
            return None
        source, boot, seq, cursor = (data.get(k) for k in ("source", "boot_id", "seq", "cursor"))
        if not isinstance(boot, str):
            return None
        if source == "kmsg" and isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0:
            return cls("kmsg", boot, seq=seq)
        if source == "journal" and isinstance(cursor, str) and cursor:
            return cls("journal", boot, cursor=cursor)
        return None


@dataclass
class KernelLog:
    """The records after a position, and the position to hand on."""

    records: list[xid.Record]
    position: Position | None
    source: str
    notes: list[str] = field(default_factory=list)


def read(after: Position | None, *, timeout: float, kmsg: str = KMSG) -> KernelLog:
    """The records after ``after``; :class:`Unreadable` when no source can be read."""
    boot = boot_id()
    try:
        return read_kmsg(after, boot, path=kmsg)
    except Unreadable as exc:
        kmsg_why = str(exc)
    try:
        return read_journal(after, boot, timeout=timeout)
    except Unreadable as exc:
        raise Unreadable(f"{kmsg_why}; {exc}") from None


def boot_id() -> str:
    """This boot's id, or "" (then a position is trusted only while its seq exists)."""
    try:
        return files.read_text_bounded(BOOT_ID, what="boot id", max_bytes=64).strip()
    except (OSError, SlurmkitError):
        return ""


# ---------------------------------------------------------------- /dev/kmsg


def read_kmsg(after: Position | None, boot: str, *, path: str = KMSG) -> KernelLog:
    """Every ``/dev/kmsg`` record after ``after``'s seq (of this boot), in one pass."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        raise Unreadable(f"{path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISCHR(os.fstat(fd).st_mode):
            raise Unreadable(f"{path}: not a character device")
        return from_kmsg(_reads(fd, path), after, boot, _boot_time())
    finally:
        os.close(fd)


def _reads(fd: int, path: str) -> Iterator[bytes | None]:
    """One record per read, without blocking: EAGAIN is the end; None a record
    overwritten under us (EPIPE: the next read goes on with the oldest one left)."""
    for _ in range(MAX_RECORDS):
        try:
            chunk = os.read(fd, _READ)
        except BlockingIOError:
            return
        except BrokenPipeError:
            yield None
            continue
        except OSError as exc:
            raise Unreadable(f"{path}: {exc.strerror or exc}") from None
        if not chunk:
            return
        yield chunk


def from_kmsg(
    reads: Iterable[bytes | None],
    after: Position | None,
    boot: str,
    boot_time: datetime | None = None,
) -> KernelLog:
    """The records of ``/dev/kmsg`` reads after ``after``'s seq, and the last seq read.

    Only the kernel's records that name an Xid are kept (the rest is read for its
    sequence number only), so a full ring costs no memory.
    """
    start = after.seq if after and after.source == "kmsg" and after.boot_id == boot else None
    first = last = None
    kept: list[tuple[int, xid.Record]] = []
    gaps = count = 0
    for chunk in reads:
        count += 1
        if chunk is None:
            gaps += 1
            continue
        parsed = xid.kmsg_record(chunk.decode("utf-8", errors="replace"), boot_time)
        if parsed is None:
            continue
        seq, record = parsed
        first = seq if first is None else first
        last = seq
        if record is not None and xid.MENTION in record.message:
            kept.append((seq, record))
    notes = [f"{gaps} record(s) overwritten while this run read them"] if gaps else []
    if count >= MAX_RECORDS:
        notes.append(f"stopped after {MAX_RECORDS} records; the next run reads on from there")
    if first is None or last is None:  # nothing to read: keep the position we had
        return KernelLog([], after if start is not None else None, "kmsg", notes)
    if start is not None and last < start:
        notes.append(f"the kernel log restarted (seq {last} < {start}): read from its start")
        start = None
    if start is not None and first > start + 1:
        notes.append(f"{first - start - 1} record(s) overwritten before this run read them")
    records = [record for seq, record in kept if start is None or seq > start]
    return KernelLog(records, Position("kmsg", boot, seq=last), "kmsg", notes)


def _boot_time() -> datetime:
    """When the kernel's clock read 0, as dmesg reckons it: near enough to show a record's
    time, never to filter by it (the drift this module exists for)."""
    since_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
    return datetime.now(timezone.utc) - timedelta(seconds=since_boot)


# ---------------------------------------------------------------- the journal


def read_journal(after: Position | None, boot: str, *, timeout: float) -> KernelLog:
    """This boot's kernel entries after ``after``'s cursor, from ``journalctl -o json``."""
    program = shutil.which("journalctl") or shutil.which("journalctl", path=_JOURNAL_PATH)
    if program is None:
        raise Unreadable("journalctl not found")
    cursor = after.cursor if after and after.source == "journal" and after.boot_id == boot else None
    argv = [program, "-k", "-b", "-o", "json", "--no-pager"]
    if cursor:
        argv.append(f"--after-cursor={cursor}")
    done = _proc.run(argv, timeout=timeout)
    if done.timed_out or done.returncode != 0:
        why = "timed out" if done.timed_out else _last_line(done.stderr) or "no message"
        raise Unreadable(f"journalctl -k failed: {why}")
    records: list[xid.Record] = []
    last = cursor
    bad = 0
    for line in done.stdout.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if not isinstance(entry, dict):
            bad += 1
            continue
        last = entry.get("__CURSOR") if isinstance(entry.get("__CURSOR"), str) else last
        record = xid.journal_record(entry)
        if record is not None:
            records.append(record)
    if last is None:  # a whole boot without one kernel entry: no journal, not a clean log
        said = _last_line(done.stderr) or "no journal?"
        raise Unreadable(f"journalctl -k lists no kernel entry of this boot: {said}")
    notes = [f"{bad} journal line(s) that are not JSON"] if bad else []
    return KernelLog(records, Position("journal", boot, cursor=last), "journal", notes)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:120] if lines else ""
