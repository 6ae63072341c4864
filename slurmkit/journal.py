"""Intent first, then act, then outcome: the record that survives a killed command.

slurmkit used to write its own record after the cluster had changed, so a
``kill -9``, cron's SIGTERM or a full disk in between left a change nobody knew
of: an array running outside its train, a node returned with no log line. Every
state-changing command now appends an *intent* (what it will do, to which jobs or
nodes, with a unique token) and fsyncs it before acting, then appends the
*outcome*. The next command that opens the same journal finds intents with no
outcome (:meth:`Journal.open_intents`), asks Slurm what really happened (the
token travels with the submission, e.g. ``--comment=slurmkit:<token>``) and
records that with :meth:`Journal.outcome`.

One JSON object per line, appended with ``O_APPEND`` and fsynced (the file and,
when it was created, its directory). A line must be whole or skipped, never glued
to another or half-read (issue 29: a fragment a full disk left swallowed the next
record, the intent of an extend whose array nobody then adopted): every record
starts on a line of its own (a newline first when the file does not end with one),
a short write is cut back to the old size, and each record ends with a checksum of
the rest (``"sum"``), so a cut or glued line is caught by :func:`read`, skipped and
reported on stderr with its file and line (see :func:`parse_line` for records written
before checksums).

A journal tells the next command what to settle (adopt an array by its token,
re-check nodes), so it must be the caller's own (or root's) regular file that
nobody else can write: opened ``O_NOFOLLOW|O_NONBLOCK`` and checked on the open
descriptor (``fstat``), for reading (:func:`slurmkit.files.read_bounded`) and for
appending (:func:`open_append`). A FIFO, a device or a teammate's file in its
place is one line, exit 2 (issue 28: a FIFO was a traceback in every train command).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from slurmkit import stderr
from slurmkit.errors import EnvironmentProblem
from slurmkit.files import read_text_bounded
from slurmkit.trust import open_nofollow

TOKEN_PREFIX = "slurmkit:"
# the node-change audit log (slurmkit.nodechange.auditlog) refuses with less room than this
MIN_FREE_BYTES = 64 * 1024
# One journal line is ~300 bytes; a start's, with its header and script path, more.
LINE_ROOM = 1024
# The record a change rewrites beside its journal (train.json, through a temporary
# copy): at least this much, or its size and one line more (see Journal.check_writable).
RECORD_ROOM = 16 * 1024
# Inodes a change may need beside the journal: the journal itself, temporary copies of
# the record, the wrapper and the ``current`` link (a start).
INODE_ROOM = 4
# tens of thousands of commands' lines; a bigger one is not a journal slurmkit wrote
MAX_BYTES = 16 * 1024 * 1024


class JournalProblem(EnvironmentProblem):
    """The journal cannot be written, so nothing was (or will be) done (exit 2)."""


def new_token() -> str:
    """A short id unique enough to find one submission among a cluster's jobs."""
    return secrets.token_hex(8)


def comment_for(token: str) -> str:
    """The ``--comment`` an sbatch carries so a timed-out submission can be found."""
    return f"{TOKEN_PREFIX}{token}"


@dataclass(frozen=True)
class Entry:
    """One journal line: an intent, or the outcome of the intent with the same token."""

    kind: str  # "intent" | "outcome" | "note" (what was left alone, and why: closes nothing)
    token: str
    action: str
    time: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        record = {
            "kind": self.kind,
            "token": self.token,
            "action": self.action,
            "time": self.time,
            **self.details,
        }
        return json.dumps(record, sort_keys=True, separators=(",", ":"))

    def to_line(self) -> bytes:
        """The record as written: its JSON with a checksum of that JSON as the last key."""
        body = self.to_json()
        return f'{body[:-1]},"{SUM_KEY}":"{_digest(body)}"}}\n'.encode()


SUM_KEY = "sum"
_SUMMED = re.compile(r'(?P<body>\{.*),"sum":"(?P<sum>[0-9a-f]{16})"\}')


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Contents:
    """What :func:`read` found: whole entries, and the torn lines it skipped (numbered from 1)."""

    entries: tuple[Entry, ...]
    torn: tuple[int, ...] = ()

    @property
    def torn_lines(self) -> int:
        return len(self.torn)


def now() -> str:
    """A record's stamp: whole seconds with the local offset (settle dates intents by it)."""
    return datetime.now().astimezone().isoformat(timespec="seconds")


KINDS = ("intent", "outcome", "note")


def parse_line(line: str) -> Entry | None:
    """The entry on ``line``, or None when it is not a whole record.

    A record ends with the checksum of the JSON before it; a line whose checksum does
    not match (a fragment glued to a record, a changed byte) is torn. A record without
    a checksum, as slurmkit wrote before issue 29, is accepted as before: a line cut
    short is never a whole JSON object, so it is still caught (only a glue or a change
    could pass, and slurmkit no longer writes such records).
    """
    summed = _SUMMED.fullmatch(line)
    if summed:
        line = summed["body"] + "}"
        if _digest(line) != summed["sum"]:
            return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    kind, token, action = (record.pop(key, None) for key in ("kind", "token", "action"))
    when = record.pop("time", "")
    if kind not in KINDS:
        return None
    if not isinstance(token, str) or not isinstance(action, str):
        return None
    return Entry(kind, token, action, str(when), record)


def read(path: Path) -> Contents:
    """Every whole entry of the journal at ``path`` (missing file: none)."""
    try:
        text = read_text_bounded(
            path,
            what="journal",
            max_bytes=MAX_BYTES,
            trusted_owner=True,
            error=JournalProblem,
            errors="replace",
        )
    except FileNotFoundError:
        return Contents(())
    entries, torn = [], []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        parsed = parse_line(line)
        if parsed is None:
            torn.append(number)
        else:
            entries.append(parsed)
    report_torn(path, torn)
    return Contents(tuple(entries), tuple(torn))


_told: set[tuple[str, int]] = set()


def report_torn(path: Path, torn: list[int]) -> None:
    """One stderr line per torn line, once per command (the journal is read many times)."""
    for number in torn:
        if (str(path), number) in _told:
            continue
        _told.add((str(path), number))
        stderr.say(
            f"warning: {path}:{number}: torn journal line skipped (a write cut short by a "
            "crash or a full disk, or changed since): the record on it is lost"
        )


class Journal:
    """An append-only journal file; each write is fsynced before the call returns."""

    def __init__(self, path: Path, record: Path | None = None) -> None:
        self.path = Path(path)
        self.record = record  # the file a change rewrites beside the journal, if any

    def _record_room(self) -> int:
        """Bytes a new copy of the record needs: its size and one line more, at least
        RECORD_ROOM (a start writes its wrapper and its first record)."""
        size = 0
        if self.record is not None:
            with contextlib.suppress(OSError):
                size = os.lstat(self.record).st_size
        return max(RECORD_ROOM, size + LINE_ROOM)

    def intent(self, action: str, token: str | None = None, **details: Any) -> str:
        """Record what is about to be done; returns its token. Raises before acting if it cannot."""
        token = token or new_token()
        self._append(Entry("intent", token, action, now(), details))
        return token

    def outcome(self, token: str, action: str, result: str, **details: Any) -> None:
        """Record how the intent ``token`` ended (``done``, ``failed``, ``unknown``, ...)."""
        self._append(Entry("outcome", token, action, now(), {"result": result, **details}))

    def open_intents(self) -> list[Entry]:
        """Intents with no outcome yet: work a killed or timed-out command left open."""
        entries = read(self.path).entries
        closed = {e.token for e in entries if e.kind == "outcome"}
        return [e for e in entries if e.kind == "intent" and e.token not in closed]

    def check_writable(self) -> None:
        """Refuse early (nothing done) when the change could not be journaled and recorded.

        It asks for what the change writes (issue 29: it asked for 64 KB, and refused an
        emergency stop on a disk a training was filling): its intent and outcome lines,
        and a new copy of the record beside the journal (``record``), in whole blocks.
        A stop, a hold or a kill switch does not ask at all: they act without a journal
        (see :mod:`slurmkit.train.reconcile`, ``begin_anyway``).
        """
        directory = self.path.parent
        try:
            st = os.statvfs(directory)
        except OSError as exc:
            raise JournalProblem(
                f"cannot write journal {self.path}: {exc.strerror or exc}; nothing was done"
            ) from None
        block = st.f_frsize or 4096
        blocks = -(-(2 * LINE_ROOM) // block) + -(-self._record_room() // block)
        if st.f_bavail < blocks or (st.f_files and st.f_favail < INODE_ROOM):
            raise JournalProblem(
                f"cannot write journal {self.path}: no space left on {directory}; nothing was done"
            )
        if not os.access(directory, os.W_OK | os.X_OK):
            raise JournalProblem(
                f"cannot write journal {self.path}: {directory} is not writable; nothing was done"
            )

    def _append(self, entry: Entry) -> None:
        created = not os.path.lexists(self.path)
        try:
            fd = open_append(self.path, readable=True)
        except OSError as exc:
            raise self._problem(exc) from None
        try:
            problem = not_ours(os.fstat(fd))
            if problem:
                raise JournalProblem(f"refusing journal {self.path}: {problem}")
            os.set_blocking(fd, True)
            _write_line(fd, entry.to_line())
        except OSError as exc:
            raise self._problem(exc) from None
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.path.parent)

    def _problem(self, exc: OSError) -> JournalProblem:
        why = {
            errno.ELOOP: "is a symbolic link (never followed)",
            errno.ENXIO: "not a regular file (a FIFO no one reads)",
        }.get(exc.errno or 0)
        return JournalProblem(f"cannot write journal {self.path}: {why or exc.strerror or exc}")


def append_entries(fd: int, entries: list[Entry]) -> None:
    """Append several records at once, one write and one fsync (a batch's intents)."""
    if entries:
        _write_line(fd, b"".join(e.to_line() for e in entries))


def _write_line(fd: int, line: bytes) -> None:
    """Append ``line`` on a line of its own, fsynced, or leave the file as it was.

    A file not ending with a newline (a crash mid-write) gets one first, so the record
    is not glued to the fragment. A short write (a full disk) or a failed fsync is cut
    back to the old size, unless another writer appended meanwhile: then the fragment
    stays, on its own line, and readers skip it as torn.
    """
    size = os.fstat(fd).st_size
    data = line if size == 0 or os.pread(fd, 1, size - 1) == b"\n" else b"\n" + line
    written = 0
    try:
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    except OSError:
        _cut_back(fd, size, written)
        raise


def _cut_back(fd: int, size: int, written: int) -> None:
    if not written:
        return
    try:
        if os.fstat(fd).st_size == size + written:
            os.ftruncate(fd, size)
            os.fsync(fd)
    except OSError:
        pass  # the fragment stays: readers skip it as torn, and say so


def open_append(path: Path, mode: int = 0o640, *, readable: bool = False) -> int:
    """A descriptor to append to ``path``: never through a symlink, never blocked by a FIFO
    (``O_NONBLOCK``: one nobody reads is ENXIO; ``readable`` opens it for reading too, so
    its last byte can be read, and a FIFO opens but is refused by :func:`not_ours`).
    Check it with :func:`not_ours`."""
    access = os.O_RDWR | os.O_NOCTTY if readable else os.O_WRONLY
    flags = access | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
    return open_nofollow(path, flags, mode)


def not_ours(info: os.stat_result) -> str | None:
    """Why a journal or log with this ``fstat`` may not be appended to, or None.

    It must be a regular file of the caller's (or root's) that nobody else can write:
    whoever can write it can forge the intents the next run settles.
    """
    uid = os.geteuid()
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file (a FIFO, device or socket)"
    if info.st_uid not in (0, uid):
        return f"owned by uid {info.st_uid}, not by you (uid {uid}) or root"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        mode = stat.S_IMODE(info.st_mode)
        return f"writable by group or others (mode {mode:04o})"
    return None


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` survive a crash (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
