"""When to send: first alert at once, reminders every ``--realert``, one recovery message.

State is a small JSON file shared by every watchdog of a user (keys like
``fs:/data`` or ``job:stas:tr8``), updated under an ``flock`` and replaced
atomically (:func:`slurmkit.files.write_atomic`), so watchdogs started by the same cron
run never lose each other's updates. A message that no target accepted is not counted
as sent: the next run tries again instead of waiting for the reminder period.

The lock is the shared one (:mod:`slurmkit.locks`): a bounded wait (:data:`LOCK_WAIT`),
never a symlink followed. A watchdog suspended while holding it must not silence
every other one: past the wait, the run alerts without rate limiting and says so.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from slurmkit import files, locks
from slurmkit.errors import EnvironmentProblem
from slurmkit.watch.finding import WatchFinding

VERSION = 1
LOCK_WAIT = 10.0  # seconds; a watchdog runs from cron every few minutes
MAX_BYTES = 16 * 1024 * 1024  # one small entry per alerting key


def default_state_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/slurmkit/watch-state.json`` (a relative XDG_STATE_HOME is ignored)."""
    return files.state_path("watch-state.json", environ)


@dataclass(frozen=True)
class KeyState:
    """An alerting key: since when, and when a message last went out (None: never)."""

    since: datetime
    last_sent: datetime | None = None
    message: str = ""

    def to_json(self) -> dict[str, str | None]:
        return {
            "since": self.since.isoformat(),
            "last_sent": self.last_sent.isoformat() if self.last_sent else None,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> KeyState | None:
        try:
            since = datetime.fromisoformat(str(data["since"]))
            sent = data.get("last_sent")
            return cls(
                since,
                datetime.fromisoformat(str(sent)) if sent else None,
                str(data.get("message", "")),
            )
        except (KeyError, ValueError):
            return None


def decide(prev: KeyState | None, finding: WatchFinding, now: datetime, realert: int) -> str | None:
    """``alert``, ``reminder``, ``recovery`` or None (nothing to send)."""
    if finding.healthy:
        return "recovery" if prev is not None and prev.last_sent is not None else None
    if prev is None or prev.last_sent is None:
        return "alert"
    if (now - prev.last_sent).total_seconds() >= realert:
        return "reminder"
    return None


def advance(
    prev: KeyState | None, finding: WatchFinding, now: datetime, kind: str | None, delivered: bool
) -> KeyState | None:
    """The key's next state (None: healthy, forgotten) after a run sent ``kind``."""
    if finding.healthy:
        if kind == "recovery" and not delivered:
            return prev  # announce the recovery on the next run
        return None
    since = prev.since if prev is not None else now
    last_sent = now if kind and delivered else (prev.last_sent if prev else None)
    return KeyState(since, last_sent, finding.message)


class StateFile:
    """The JSON state: :meth:`acquire` (lock + load), change ``keys``, :meth:`release` (save)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.keys: dict[str, KeyState] = {}
        self._held: contextlib.ExitStack | None = None

    @property
    def loaded(self) -> bool:
        """The state is locked and was read: this run's alerts are rate-limited."""
        return self._held is not None

    def acquire(self, wait: float | None = None) -> None:
        """Lock (bounded) and load; raises OSError or a SlurmkitError (LockBusy) when the
        state cannot be used at all: nothing is then held."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        stack = contextlib.ExitStack()
        stack.enter_context(
            locks.hold(
                lock_path,
                wait=LOCK_WAIT if wait is None else wait,
                what="the watchdogs' rate-limit state",
            )
        )
        try:
            self._load()
        except BaseException:
            stack.close()
            raise
        self._held = stack

    def release(self, save: bool = True) -> None:
        """Save (atomically) and unlock; the lock is dropped even when saving fails.

        Nothing is saved when the state was never loaded: an empty state written over
        one that could not be read would forget every alert in it.
        """
        try:
            if save and self._held is not None:
                self._save()
        finally:
            if self._held is not None:
                self._held.close()
                self._held = None

    def _load(self) -> None:
        try:
            text = files.read_text_bounded(
                self.path, what="rate-limit state", max_bytes=MAX_BYTES,
                error=EnvironmentProblem, errors="replace",
            )  # fmt: skip
            data = json.loads(text)
        except (FileNotFoundError, ValueError):
            data = {}
        keys = data.get("keys", {}) if isinstance(data, dict) else {}
        self.keys = {}
        for key, value in keys.items() if isinstance(keys, dict) else ():
            state = KeyState.from_json(value) if isinstance(value, dict) else None
            if state is not None:
                self.keys[key] = state

    def _save(self) -> None:
        data = {"version": VERSION, "keys": {k: v.to_json() for k, v in sorted(self.keys.items())}}
        try:
            # the shared writer (fsync'ed, so a crash cannot bring back the state before this
            # run's alerts); 0600 as before: the state is this user's business
            files.write_atomic(self.path, json.dumps(data, indent=2) + "\n", mode=0o600)
        except EnvironmentProblem as exc:
            # the caller reports an unusable state file from the system's own error
            raise exc.__cause__ if isinstance(exc.__cause__, OSError) else exc from None
