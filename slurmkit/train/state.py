"""A train on disk: one directory per train under the trains folder.

Layout of ``<dir>/<name>/`` (``<dir>`` defaults to ``./.slurmkit/trains``, so a team
sharing a working directory shares its trains and their kill switches)::

    train.json      the record: header as submitted, array job ids, events (atomic writes)
    wrapper.slurm   the rendered array script (template train-wrapper)
    current         symlink to the script the next run sources
    kill-switch     exists while the kill switch is on
    save-switch     exists until the training saves a checkpoint and removes it
    journal         intent/outcome lines of every change (:mod:`slurmkit.journal`): what a
                    killed or unanswered command left open, reconciled by the next one;
                    the owner's (a journal anyone else owns is refused)
    .lock           flock'ed while a command changes the train: 0600, the owner's, so
                    nobody else can hold it

Slurm is the truth about jobs; ``train.json`` only remembers which job ids belong
to the train and what was submitted, which Slurm forgets after MinJobAge.

Trust: the folder may be writable by teammates (so they can use the kill switch),
so anything in it may have been replaced by one of them. A file a command *acts
on* (the record whose job ids it holds or cancels, the wrapper ``extend``
submits) must belong to the caller or root and be writable by nobody else, read
through one ``O_NOFOLLOW`` descriptor (:meth:`TrainDir.load_trusted`); the script
``current`` points to is checked the same way by ``start``, ``switch`` and, at run
time, by the wrapper itself before it sources it. A teammate can stop runs, never
choose what they execute.
"""

from __future__ import annotations

import contextlib
import difflib
import getpass
import json
import os
import pwd
import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.files import read_bounded, refused, write_atomic
from slurmkit.journal import Journal
from slurmkit.journal import read as read_journal
from slurmkit.locks import LockBusy, hold
from slurmkit.trust import UntrustedPath

DEFAULT_DIR = Path(".slurmkit") / "trains"
STATE_FILE = "train.json"
WRAPPER_FILE = "wrapper.slurm"
CURRENT_LINK = "current"
KILL_SWITCH_FILE = "kill-switch"
SAVE_SWITCH_FILE = "save-switch"
LOCK_FILE = ".lock"
JOURNAL_FILE = "journal"
FORMAT_VERSION = 1
# How long a command waits for another one changing the same train (a suspended
# holder must not block an emergency `train stop` for ever); `--lock-wait` changes it.
LOCK_WAIT = 5.0
# train.json and wrapper.slurm: readable by the team, writable by the owner only,
# whatever the umask (a group-writable record would be refused at the next change).
FILE_MODE = 0o644
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class NotTrainOwner(LockBusy):
    """A teammate's command that needs the owner's lock (exit 2; ``status`` goes on without
    settling, as when the lock is busy)."""


_progress: list[Callable[[str], None]] = []


def set_progress(report: Callable[[str], None]) -> None:
    """Where progress lines go (the CLI: stderr): what a train command is waiting for."""
    _progress[:] = [report]


def progress(line: str) -> None:
    for report in _progress:
        report(line)


def now_text() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_name(name: str) -> str:
    """A train name is a directory and a Slurm job name: plain characters only."""
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"bad train name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


@dataclass
class ArrayRecord:
    """One submitted array: the first from ``start``, one more per ``extend``."""

    job_id: str
    runs: int
    submitted: str
    after: str | None = None


@dataclass
class Event:
    at: str
    user: str
    what: str
    detail: str = ""


@dataclass
class TrainState:
    name: str
    created: str
    workdir: str
    script: str
    header: list[str]
    extra: list[str] = field(default_factory=list)
    arrays: list[ArrayRecord] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    version: int = FORMAT_VERSION

    @property
    def array_ids(self) -> list[str]:
        return [a.job_id for a in self.arrays]

    def note(self, what: str, detail: str = "") -> None:
        self.events.append(Event(now_text(), current_user(), what, detail))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any, where: str) -> TrainState:
        """Read a record, refusing anything that is not what this version wrote."""
        if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
            raise UsageError(f"{where}: not a slurmkit train record (version {FORMAT_VERSION})")
        try:
            return cls(
                name=_text(data, "name"),
                created=_text(data, "created"),
                workdir=_text(data, "workdir"),
                script=_text(data, "script"),
                header=_words(data, "header"),
                extra=_words(data, "extra", []),
                arrays=[_array(a) for a in _records(data, "arrays")],
                events=[Event(**e) for e in _records(data, "events")],
            )
        except (KeyError, TypeError) as exc:
            raise UsageError(f"{where}: damaged train record ({exc})") from None


def _text(data: dict[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise TypeError(f"{key!r} is {type(value).__name__}, not text")
    return value


def _words(data: dict[str, Any], key: str, default: list[str] | None = None) -> list[str]:
    """A list of strings: a bare string would be split into one word per character."""
    value = data.get(key, default) if default is not None else data[key]
    if not isinstance(value, list) or not all(isinstance(w, str) for w in value):
        raise TypeError(f"{key!r} is not a list of words")
    return list(value)


def _array(data: dict[str, Any]) -> ArrayRecord:
    array = ArrayRecord(**data)
    if not isinstance(array.job_id, str) or not isinstance(array.runs, int):
        raise TypeError("'arrays' holds a record without a text job_id and a number of runs")
    return array


def _records(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise TypeError(f"{key!r} is not a list of records")
    for record in value:
        if not all(v is None or isinstance(v, str | int) for v in record.values()):
            raise TypeError(f"{key!r} holds a value that is neither text nor a number")
    return value


@dataclass(frozen=True)
class TrainDir:
    """Paths of one train; the directory's name is the train's name."""

    path: Path
    lock_wait: float = field(default=LOCK_WAIT, compare=False)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def journal(self) -> Journal:
        """The train's intent/outcome journal (``journal`` in its folder); a change's space
        check counts the record it rewrites (``train.json``)."""
        return Journal(self.path / JOURNAL_FILE, record=self.state_file)

    def torn_journal(self) -> str | None:
        """A warning when the journal has torn lines: one may have been an intent.

        A torn record is skipped (each is named on stderr as it is read); if it was the
        intent of a start or an extend killed after sbatch, the array it queued is not
        adopted, and ``stop`` would not cancel it.
        """
        try:
            torn = read_journal(self.journal.path).torn
        except EnvironmentProblem:
            return None
        if not torn:
            return None
        lines = ", ".join(map(str, torn[:5])) + (", ..." if len(torn) > 5 else "")
        return (
            f"{len(torn)} torn line(s) in {self.journal.path} (line {lines}): an intent may "
            "be missing, so an array a killed start or extend queued may not be in this "
            f"train's record; `squeue --me --name={self.name}` shows every job of its name "
            "(another folder's train may share the name)"
        )

    def has_record(self) -> bool:
        return os.path.lexists(self.state_file)

    @property
    def state_file(self) -> Path:
        return self.path / STATE_FILE

    @property
    def wrapper(self) -> Path:
        return self.path / WRAPPER_FILE

    @property
    def current(self) -> Path:
        return self.path / CURRENT_LINK

    @property
    def kill_switch(self) -> Path:
        return self.path / KILL_SWITCH_FILE

    @property
    def save_switch(self) -> Path:
        return self.path / SAVE_SWITCH_FILE

    def load(self) -> TrainState:
        """The record, for reading (``status``); see :meth:`load_trusted` before acting on it."""
        try:
            data = read_bounded(self.state_file, what="train record")
        except FileNotFoundError:
            raise UsageError(f"{self.path}: no {STATE_FILE}: not a train") from None
        return self._parse(data)

    def load_trusted(self) -> TrainState:
        """The record, when the caller may act on the job ids in it.

        It must belong to the caller or root and be writable by nobody else: in a
        folder teammates can write, anyone else's ``train.json`` could name jobs of
        the caller's that are not the train's (a ``stop`` would cancel them).
        """
        return self._parse(read_trusted(self.state_file, "train record"))

    def _parse(self, raw: bytes) -> TrainState:
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"{self.state_file}: damaged train record (not UTF-8 at byte {exc.start})"
            ) from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"{self.state_file}: damaged train record ({exc})") from None
        return TrainState.from_json(data, str(self.state_file))

    def save(self, state: TrainState) -> None:
        write_atomic(self.state_file, json.dumps(state.to_json(), indent=2) + "\n", mode=FILE_MODE)

    def owner(self) -> int:
        """The uid that started the train: the owner of its folder (teammates cannot change it)."""
        try:
            return os.lstat(self.path).st_uid
        except OSError as exc:
            raise refused(exc, f"read {self.path}") from None

    def target(self) -> str | None:
        """Where ``current`` points (the script the next run sources), None if missing."""
        try:
            return os.readlink(self.current)
        except OSError:
            return None

    def current_changed(self) -> tuple[int, float] | None:
        """(uid, mtime) of the ``current`` link: who last pointed it, and when."""
        try:
            st = os.lstat(self.current)
        except OSError:
            return None
        return st.st_uid, st.st_mtime

    def point_to(self, script: Path) -> None:
        """Re-point ``current`` atomically: a run starting now sees the old or the new target.

        The temporary link has an unpredictable name: teammates may write the folder.
        """
        tmp = self.path / f".{CURRENT_LINK}.{secrets.token_hex(8)}"
        try:
            tmp.symlink_to(script)
        except OSError as exc:  # no space or no free inode: nothing changed
            raise EnvironmentProblem(
                f"cannot point {self.current} to {script}: {exc.strerror or exc}; nothing changed"
            ) from None
        try:
            os.replace(tmp, self.current)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            if isinstance(exc, OSError):
                raise EnvironmentProblem(
                    f"cannot point {self.current} to {script}: {exc.strerror or exc}; "
                    "nothing changed"
                ) from None
            raise

    @contextlib.contextmanager
    def locked(self, wait: float | None = None) -> Iterator[None]:
        """Serialise commands that change this train (two ``extend`` at once, a hold mid-stop).

        Bounded (``LockBusy``, exit 2, after ``wait`` seconds, default ``--lock-wait``),
        never following a symlink at ``.lock``. Only the train's owner (whoever owns its
        folder) takes it, on a file only they can open: a teammate who could open it
        could hold it and stall the owner's ``train stop`` (issue 28). A teammate gets
        :class:`NotTrainOwner`; what they may do, the kill switch, needs no lock. While
        it waits, progress names the command holding it (from the journal).
        """
        self._check_owner()
        wait = self.lock_wait if wait is None else wait
        path = self.path / LOCK_FILE
        what = f"train {self.name}"
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(hold(path, wait=0, what=what))
        except LockBusy:
            holder = self.holder()
            if wait <= 0:
                raise LockBusy(f"{what} is busy: {holder}; nothing was done") from None
            progress(f"waiting up to {wait:g} s for train {self.name}: {holder}")
            try:
                stack.enter_context(hold(path, wait=wait, what=what))
            except LockBusy:
                raise LockBusy(
                    f"{what} is busy: {holder}, still after {wait:g} s (--lock-wait); "
                    "nothing was done"
                ) from None
        with stack:
            yield

    def _check_owner(self) -> None:
        try:
            owner = os.stat(self.path).st_uid
        except OSError as exc:
            raise EnvironmentProblem(f"cannot look at {self.path}: {exc.strerror}") from None
        if owner != os.geteuid():
            raise NotTrainOwner(
                f"train {self.name} belongs to {user_name(owner)} (uid {owner}), not to you: "
                "only its owner changes it or settles its journal (anyone may stop it: "
                "`slurmkit train kill-switch on`)"
            )

    def holder(self) -> str:
        """Who holds the lock, as far as the journal says (its newest open intent)."""
        try:
            open_intents = self.journal.open_intents()
        except EnvironmentProblem:
            open_intents = []
        if not open_intents:
            return f"another slurmkit command holds {self.path / LOCK_FILE}"
        last = open_intents[-1]
        who = last.details.get("user", "?")
        pid = last.details.get("pid", "?")
        host = last.details.get("host", "?")
        return (
            f"`train {last.action}` by {who} (pid {pid} on {host}, since {last.time}) holds "
            f"{self.path / LOCK_FILE}"
        )


def read_trusted(path: Path, what: str) -> bytes:
    """The bytes of ``path`` if it belongs to the caller or root and nobody else can write it.

    One ``O_NOFOLLOW`` descriptor is checked (``fstat``) and read, so the file cannot
    be swapped between the check and the read. Its folder is not checked: a train
    folder may be shared with the team, and a file replaced in it belongs to whoever
    replaced it, which is refused here.
    """
    try:
        return read_bounded(path, what=what, trusted_owner=True, error=UntrustedPath)
    except FileNotFoundError:
        raise UsageError(f"{path.parent}: no {path.name}: not a train") from None
    except UntrustedPath as exc:
        raise UntrustedPath(
            f"{exc}; only the train's owner can change it "
            "(anyone may stop it: `slurmkit train kill-switch on`)"
        ) from None


def root_dir(directory: Path | str | None) -> Path:
    return (Path(directory) if directory is not None else DEFAULT_DIR).absolute()


def train_names(root: Path) -> list[str]:
    """Names of the trains under ``root``, sorted.

    A folder with a record, or with a journal only: a ``train start`` killed (or not
    answered) after sbatch leaves no record yet, and the next command must find it to
    reconcile it (adopt the array it may have queued).
    """
    if not root.is_dir():
        return []
    return sorted(
        p.name for p in root.iterdir() if (p / STATE_FILE).is_file() or (p / JOURNAL_FILE).is_file()
    )


def find(root: Path, name: str | None) -> TrainDir:
    """The train called ``name``, or the only train under ``root`` when no name is given."""
    names = train_names(root)
    if name is None:
        if len(names) == 1:
            return TrainDir(root / names[0])
        if not names:
            raise UsageError(
                f"no trains in {root} (start one with `slurmkit train start SCRIPT`, or pass --dir)"
            )
        raise UsageError(f"{len(names)} trains in {root} ({', '.join(names)}): name one")
    if name in names:
        return TrainDir(root / name)
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"; did you mean {close[0]}?" if close else f" (trains: {', '.join(names) or 'none'})"
    raise UsageError(f"unknown train {name!r} in {root}{hint}")
