"""``--log FILE``: the audit trail cron runs leave, one line per intent and per outcome.

Lines are ``key=value`` words (values shell-quoted), so ``grep node=node-3``
and ``shlex.split`` both work on them.

The file is opened and checked before undrain asks Slurm anything: a bad path
is one error line and nothing done, not a traceback after nodes were returned
(issue 14, finding 11). Each state change is preceded by a ``will-...`` line
and followed by its outcome, each written with ``fsync``: a run killed or a
machine crashed in between still leaves on disk what it had started. A write
that fails before an action stops the action.

Each ``will-...`` line and its outcome carry the same ``token=``. A run killed
between the two (``kill -9``, cron's SIGTERM, a power cut) leaves an intent with
no outcome; :func:`open_intents` finds them, and the next undrain with the same
``--log`` re-reads those nodes and appends what really happened (issue 22). An
outcome ``undrain-unknown`` (Slurm did not answer) keeps its intent open too.

The log decides what the next run re-checks, so it must be the caller's (or
root's) regular file that nobody else can write, checked on the open descriptor
(:func:`slurmkit.journal.not_ours`) both when it is read and when it is opened for
appending: a FIFO in its place was a traceback, a teammate's file a forged intent.
"""

from __future__ import annotations

import errno
import os
import shlex
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from slurmkit.errors import UsageError
from slurmkit.files import read_text_bounded, state_path
from slurmkit.journal import MIN_FREE_BYTES, not_ours, open_append
from slurmkit.trust import private_dir

# Where undrain and the node commands journal when no --log is given (issue 22: every
# state change leaves its intent somewhere a killed run can be settled from).
DEFAULT_NAME = "actions.log"

# Outcomes that are no answer yet: their intent stays open for the next run to settle.
STILL_OPEN = frozenset({"undrain-unknown", "undrain-sent"})
# Lines are written per node changed, not per run: years of a cron undrain fit in this.
MAX_BYTES = 64 * 1024 * 1024


class LogProblem(UsageError):
    """``--log`` cannot be written (exit 2)."""


def entry(node: str, action: str, **fields: str) -> str:
    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    words = [stamp, f"node={node}", f"action={action}"]
    words += [f"{key}={shlex.quote(value)}" for key, value in fields.items()]
    return " ".join(words)


@dataclass(frozen=True)
class Intent:
    """A ``will-...`` line of the log whose outcome was never written (or is unknown)."""

    token: str
    action: str  # "will-undrain" | "will-kill"
    nodes: tuple[str, ...]
    time: str
    fields: dict[str, str] = field(default_factory=dict)


def _words(line: str) -> tuple[str, dict[str, str]] | None:
    try:
        words = shlex.split(line)
    except ValueError:  # a line torn by a crash mid-write
        return None
    if len(words) < 3:
        return None
    pairs = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    return words[0], pairs


def open_intents(path: Path) -> list[Intent]:
    """Intents in the log at ``path`` that no later line settled, oldest first, per token.

    Lines without a token (written before tokens existed) are not matched: their
    outcome, if any, cannot be told apart from another run's.
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
    lines = text.splitlines()
    wanted: dict[tuple[str, str], tuple[str, str, dict[str, str]]] = {}
    for line in lines:
        parsed = _words(line)
        if parsed is None:
            continue
        stamp, pairs = parsed
        token, node, action = pairs.get("token"), pairs.get("node"), pairs.get("action", "")
        if not token or not node:
            continue
        if action.startswith("will-"):
            wanted[(token, node)] = (action, stamp, pairs)
        elif action not in STILL_OPEN:
            wanted.pop((token, node), None)
    grouped: dict[tuple[str, str], list[str]] = {}
    first: dict[tuple[str, str], tuple[str, dict[str, str]]] = {}
    for (token, node), (action, stamp, pairs) in wanted.items():
        grouped.setdefault((token, action), []).append(node)
        first.setdefault((token, action), (stamp, pairs))
    return [
        Intent(token, action, tuple(nodes), first[(token, action)][0], first[(token, action)][1])
        for (token, action), nodes in grouped.items()
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
    path = state_path(DEFAULT_NAME)
    if dry_run:
        return path if path.parent.is_dir() else None
    private_dir(path.parent, what="state directory")
    return path


def check(path: Path) -> None:
    """For a dry run: would :meth:`ActionLog.open` succeed? Creates nothing."""
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


class ActionLog:
    """An open, checked log file; :data:`NO_LOG` when there is none."""

    def __init__(self, path: Path | None, fd: int | None) -> None:
        self.path, self._fd = path, fd

    @classmethod
    def open(cls, path: Path | None) -> ActionLog:
        """Open for appending: our (or root's) regular file, never through a symlink or a FIFO.

        ``O_NONBLOCK`` keeps a FIFO at the path from blocking the open; it is
        refused right after by the regular-file check.
        """
        if path is None:
            return cls(None, None)
        try:
            fd = open_append(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refuse(path, "is a symbolic link (never followed)") from None
            if exc.errno == errno.ENOENT:
                raise _refuse(path, f"directory {path.parent} does not exist") from None
            if exc.errno == errno.ENXIO:
                raise _refuse(path, "not a regular file") from None
            raise _refuse(path, exc.strerror or str(exc)) from None
        try:
            _check_mode(path, os.fstat(fd))
            _check_space(path, fd)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd)

    def write(self, lines: Iterable[str]) -> None:
        """Append and fsync ``lines``; an error is a :class:`LogProblem` naming the file."""
        lines = list(lines)
        if self._fd is None or not lines:
            return
        try:
            self._write(lines)
        except OSError as exc:
            raise LogProblem(f"--log {self.path}: cannot write: {exc.strerror or exc}") from None

    def _write(self, lines: list[str]) -> None:
        assert self._fd is not None
        data = "".join(line + "\n" for line in lines).encode()
        while data:
            data = data[os.write(self._fd, data) :]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ActionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
