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
when it was created, its directory): a line is either whole or, after a crash
mid-write, an unparsable tail that :func:`read` skips and reports.

A journal tells the next command what to settle (adopt an array by its token,
re-check nodes), so it must be the caller's own (or root's) regular file that
nobody else can write: opened ``O_NOFOLLOW|O_NONBLOCK`` and checked on the open
descriptor (``fstat``), for reading (:func:`slurmkit.files.read_bounded`) and for
appending (:func:`open_append`). A FIFO, a device or a teammate's file in its
place is one line, exit 2 (issue 28: a FIFO was a traceback in every train command).
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from slurmkit.errors import EnvironmentProblem
from slurmkit.files import read_text_bounded
from slurmkit.trust import open_nofollow

TOKEN_PREFIX = "slurmkit:"
# a journal line must be written whole; refuse to act with less room than this
MIN_FREE_BYTES = 64 * 1024
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

    kind: str  # "intent" | "outcome"
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


@dataclass(frozen=True)
class Contents:
    """What :func:`read` found: whole entries, and how many torn lines it skipped."""

    entries: tuple[Entry, ...]
    torn_lines: int = 0


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def _parse(line: str) -> Entry | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    kind, token, action = (record.pop(key, None) for key in ("kind", "token", "action"))
    when = record.pop("time", "")
    if kind not in ("intent", "outcome"):
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
    lines = text.splitlines()
    entries, torn = [], 0
    for line in lines:
        if not line.strip():
            continue
        parsed = _parse(line)
        if parsed is None:
            torn += 1
        else:
            entries.append(parsed)
    return Contents(tuple(entries), torn)


class Journal:
    """An append-only journal file; each write is fsynced before the call returns."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def intent(self, action: str, token: str | None = None, **details: Any) -> str:
        """Record what is about to be done; returns its token. Raises before acting if it cannot."""
        token = token or new_token()
        self._append(Entry("intent", token, action, _now(), details))
        return token

    def outcome(self, token: str, action: str, result: str, **details: Any) -> None:
        """Record how the intent ``token`` ended (``done``, ``failed``, ``unknown``, ...)."""
        self._append(Entry("outcome", token, action, _now(), {"result": result, **details}))

    def open_intents(self) -> list[Entry]:
        """Intents with no outcome yet: work a killed or timed-out command left open."""
        entries = read(self.path).entries
        closed = {e.token for e in entries if e.kind == "outcome"}
        return [e for e in entries if e.kind == "intent" and e.token not in closed]

    def check_writable(self) -> None:
        """Refuse early (nothing done) when the journal could not take an intent."""
        directory = self.path.parent
        try:
            st = os.statvfs(directory)
        except OSError as exc:
            raise JournalProblem(
                f"cannot write journal {self.path}: {exc.strerror or exc}; nothing was done"
            ) from None
        if st.f_bavail * st.f_frsize < MIN_FREE_BYTES or (st.f_files and st.f_favail < 4):
            raise JournalProblem(
                f"cannot write journal {self.path}: no space left on {directory}; nothing was done"
            )
        if not os.access(directory, os.W_OK | os.X_OK):
            raise JournalProblem(
                f"cannot write journal {self.path}: {directory} is not writable; nothing was done"
            )

    def _append(self, entry: Entry) -> None:
        data = (entry.to_json() + "\n").encode()
        created = not os.path.lexists(self.path)
        try:
            fd = open_append(self.path)
        except OSError as exc:
            raise self._problem(exc) from None
        try:
            problem = not_ours(os.fstat(fd))
            if problem:
                raise JournalProblem(f"refusing journal {self.path}: {problem}")
            os.set_blocking(fd, True)
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
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


def open_append(path: Path, mode: int = 0o640) -> int:
    """A descriptor to append to ``path``: never through a symlink, never blocked by a FIFO
    (``O_NONBLOCK``: one nobody reads is ENXIO). Check it with :func:`not_ours`."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
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
