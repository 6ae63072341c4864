"""The one audit log of node changes: JSON lines through :mod:`slurmkit.journal`.

Every node change (``node drain|resume|reboot``, ``undrain`` and its kills) writes here,
through :mod:`slurmkit.nodechange.change` only: one record per node for the intent
(``kind: intent``, ``action: will-<verb>``, with a token), fsynced before Slurm is asked,
and one for the outcome (``kind: outcome``, ``action: <verb>`` or ``<verb>-failed``...,
the same token). What a run left alone is a ``note`` (``action: skip``, with why). Each
record is a journal line: whole or skipped, with its checksum (:func:`journal.parse_line`).

``undrain --log`` files from before (``key=value`` words, shell-quoted) are still read
(:mod:`.legacy`), line by line beside JSON ones: a log a cron job has appended to for
years keeps its open intents, settled by the next run of any node command.

The file is opened and checked before anything is asked of Slurm (a bad path is one
line, exit 2, nothing done) and must be the caller's (or root's) regular file that
nobody else can write, checked on the open descriptor (:func:`slurmkit.journal.not_ours`):
the log decides what the next run re-checks, so a teammate's file would be a forged intent.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from slurmkit import journal
from slurmkit.errors import UsageError
from slurmkit.files import read_text_bounded, state_path
from slurmkit.journal import MIN_FREE_BYTES, Entry, not_ours, open_append
from slurmkit.nodechange import legacy
from slurmkit.trust import private_dir

# Where undrain and the node commands journal when no --log is given (issue 22: every
# state change leaves its intent somewhere a killed run can be settled from).
DEFAULT_NAME = "actions.log"
# Lines are written per node changed, not per run: years of a cron undrain fit in this.
MAX_BYTES = 64 * 1024 * 1024


def still_open(action: str) -> bool:
    """Outcomes that are no answer yet (``<verb>-unknown``, ``<verb>-sent``): the intent stays
    open for the next run to settle."""
    return action.endswith(("-unknown", "-sent"))


class LogProblem(UsageError):
    """``--log`` cannot be written (exit 2)."""


@dataclass(frozen=True)
class Record:
    """One line of the log, whichever format it was written in."""

    kind: str  # "intent" | "outcome" | "note"
    token: str
    node: str
    action: str
    time: str
    fields: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "time": self.time,
            "node": self.node,
            "action": self.action,
            "kind": self.kind,
            "token": self.token or None,
            **self.fields,
        }


@dataclass(frozen=True)
class Intent:
    """A ``will-...`` record whose outcome was never written (or is no answer yet)."""

    token: str
    action: str  # "will-undrain" | "will-kill" | "will-drain" | ...
    nodes: tuple[str, ...]
    time: str
    fields: dict[str, str] = field(default_factory=dict)


def entry(node: str, action: str, *, token: str = "", **fields: str) -> Entry:
    """The journal record of one node's intent, outcome or note."""
    kind = "intent" if action.startswith("will-") else "outcome" if token else "note"
    return Entry(kind, token, action, journal.now(), {"node": node, **fields})


def _of_entry(e: Entry) -> Record | None:
    node = e.details.get("node")
    if not isinstance(node, str):
        return None
    fields = {k: str(v) for k, v in e.details.items() if k != "node"}
    return Record(e.kind, e.token, node, e.action, e.time, fields)


def read(path: Path) -> list[Record]:
    """Every whole record in the log at ``path``, JSON or old ``key=value`` (missing: none).

    A torn JSON line (a crash mid-write) is skipped and named on stderr, as the journal does.
    """
    try:
        text = read_text_bounded(
            path,
            what="--log",
            max_bytes=MAX_BYTES,
            trusted_owner=True,
            error=LogProblem,
            errors="replace",
        )
    except FileNotFoundError:
        return []
    records: list[Record] = []
    torn: list[int] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            parsed = journal.parse_line(line)
            record = _of_entry(parsed) if parsed is not None else None
            if record is None:
                torn.append(number)
                continue
        else:
            old = legacy.parse(line)
            if old is None:
                continue  # an old line torn by a crash: skipped, as the old reader did
            record = Record(*old)
        records.append(record)
    journal.report_torn(path, torn)
    return records


def open_intents(path: Path) -> list[Intent]:
    """Intents in the log at ``path`` that no later record settled, oldest first, per token.

    Records without a token (old lines written before tokens existed) are not matched:
    their outcome, if any, cannot be told apart from another run's.
    """
    wanted: dict[tuple[str, str], Record] = {}
    for r in read(path):
        if not r.token or r.kind == "note":
            continue
        if r.kind == "intent":
            wanted[(r.token, r.node)] = r
        elif not still_open(r.action):
            wanted.pop((r.token, r.node), None)
    grouped: dict[tuple[str, str], list[Record]] = {}
    for (token, _), r in wanted.items():
        grouped.setdefault((token, r.action), []).append(r)
    return [
        Intent(token, action, tuple(r.node for r in rs), rs[0].time, dict(rs[0].fields))
        for (token, action), rs in grouped.items()
    ]


def _refuse(path: Path, why: str) -> LogProblem:
    return LogProblem(f"--log {path}: {why}; nothing was done")


def chosen(given: Path | None, *, keep: bool, dry_run: bool) -> Path | None:
    """The log a run writes: ``--log``, else the user's own (``--no-log``: ``keep`` False, none).

    Without a log a run killed between "Slurm changed" and "recorded" would leave no
    intent anywhere, so the default is ``$XDG_STATE_HOME/slurmkit/actions.log`` (root's
    in ``/root/.local/state``), its folder made private (0700) by a real run. A dry run
    creates nothing: with no folder yet there is nothing to check and nothing to settle.
    """
    if given is not None or not keep:
        return given
    path = default_path()
    if dry_run:
        return path if path.parent.is_dir() else None
    private_dir(path.parent, what="state directory")
    return path


def default_path() -> Path:
    """The log every node command writes when no --log is given (``log show`` reads it)."""
    return state_path(DEFAULT_NAME)


def check(path: Path) -> None:
    """For a dry run: would :meth:`AuditLog.open` succeed? Creates nothing."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = path.parent
        if not parent.is_dir():
            raise _refuse(path, f"directory {parent} does not exist") from None
        if not os.access(parent, os.W_OK | os.X_OK):
            raise _refuse(path, f"directory {parent} is not writable") from None
        return
    except OSError as exc:
        raise _refuse(path, exc.strerror or str(exc)) from None
    _check_mode(path, st)
    if not os.access(path, os.W_OK):
        raise _refuse(path, "not writable")


def _check_mode(path: Path, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, "is a symbolic link (never followed)")
    problem = not_ours(st)
    if problem:
        raise _refuse(path, problem)


def _check_space(path: Path, fd: int) -> None:
    """A log that cannot take the lines of this run refuses it before anything is done."""
    try:
        st = os.fstatvfs(fd)
    except OSError:
        return
    if st.f_bavail * st.f_frsize < MIN_FREE_BYTES:
        raise _refuse(path, "no space left on its file system")


class AuditLog:
    """An open, checked log file; a log opened on ``None`` writes nothing."""

    def __init__(self, path: Path | None, fd: int | None) -> None:
        self.path, self._fd = path, fd

    @classmethod
    def open(cls, path: Path | None) -> AuditLog:
        """Open for appending: our (or root's) regular file, never through a symlink or a FIFO.

        ``O_NONBLOCK`` keeps a FIFO at the path from blocking the open; it is
        refused right after by the regular-file check.
        """
        if path is None:
            return cls(None, None)
        try:
            fd = open_append(path, readable=True)
        except OSError as exc:
            raise _refuse(path, _why_not(path, exc)) from None
        try:
            _check_mode(path, os.fstat(fd))
            _check_space(path, fd)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd)

    def write(self, entries: Iterable[Entry]) -> None:
        """Append and fsync ``entries`` at once; an error is a :class:`LogProblem`."""
        entries = list(entries)
        if self._fd is None or not entries:
            return
        try:
            self._write(entries)
        except OSError as exc:
            raise LogProblem(f"--log {self.path}: cannot write: {exc.strerror or exc}") from None

    def _write(self, entries: list[Entry]) -> None:
        assert self._fd is not None
        journal.append_entries(self._fd, entries)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _why_not(path: Path, exc: OSError) -> str:
    return {
        errno.ELOOP: "is a symbolic link (never followed)",
        errno.ENOENT: f"directory {path.parent} does not exist",
        errno.ENXIO: "not a regular file",
    }.get(exc.errno or 0, exc.strerror or str(exc))


@dataclass(frozen=True)
class Shown:
    """A record as ``slurmkit log show`` lists it: ``open`` when it is an intent still open."""

    record: Record
    open: bool

    def to_json(self) -> dict[str, object]:
        return {**self.record.to_json(), "open": self.open}


def history(
    path: Path, *, nodes: Sequence[str] | None = None, since: datetime | None = None
) -> list[Shown]:
    """The records of ``path`` about ``nodes`` (all when None), written at or after ``since``,
    oldest first; an intent that no outcome settled yet is marked open (the next node command
    settles it). A record whose stamp does not parse is kept only without ``since``."""
    from slurmkit.nodechange.settle import parse_stamp

    still = {(i.token, n) for i in open_intents(path) for n in i.nodes}
    wanted = set(nodes) if nodes is not None else None
    shown = []
    for r in read(path):
        if wanted is not None and r.node not in wanted:
            continue
        if since is not None:
            when = parse_stamp(r.time)
            if when is None or when < since:
                continue
        shown.append(Shown(r, r.kind == "intent" and (r.token, r.node) in still))
    return shown
