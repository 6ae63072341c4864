"""A train on disk: one directory per train under the trains folder.

Layout of ``<dir>/<name>/`` (``<dir>`` defaults to ``./.slurmkit/trains``, so a team
sharing a working directory shares its trains and their kill switches)::

    train.json      the record: header as submitted, array job ids, events (atomic writes)
    wrapper.slurm   the rendered array script (template train-wrapper)
    current         symlink to the script the next run sources
    kill-switch     exists while the kill switch is on
    .lock           flock'ed while a command changes the train

Slurm is the truth about jobs; ``train.json`` only remembers which job ids belong
to the train and what was submitted, which Slurm forgets after MinJobAge.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import getpass
import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from slurmkit.errors import UsageError
from slurmkit.files import write_atomic

DEFAULT_DIR = Path(".slurmkit") / "trains"
STATE_FILE = "train.json"
WRAPPER_FILE = "wrapper.slurm"
CURRENT_LINK = "current"
KILL_SWITCH_FILE = "kill-switch"
LOCK_FILE = ".lock"
FORMAT_VERSION = 1
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def now_text() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def current_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


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
                name=str(data["name"]),
                created=str(data["created"]),
                workdir=str(data["workdir"]),
                script=str(data["script"]),
                header=[str(w) for w in data["header"]],
                extra=[str(w) for w in data.get("extra", [])],
                arrays=[ArrayRecord(**a) for a in data.get("arrays", [])],
                events=[Event(**e) for e in data.get("events", [])],
            )
        except (KeyError, TypeError) as exc:
            raise UsageError(f"{where}: damaged train record ({exc})") from None


@dataclass(frozen=True)
class TrainDir:
    """Paths of one train; the directory's name is the train's name."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

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

    def load(self) -> TrainState:
        try:
            text = self.state_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UsageError(f"{self.path}: no {STATE_FILE}: not a train") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{self.state_file}: damaged train record ({exc})") from None
        return TrainState.from_json(data, str(self.state_file))

    def save(self, state: TrainState) -> None:
        write_atomic(self.state_file, json.dumps(state.to_json(), indent=2) + "\n")

    def target(self) -> str | None:
        """Where ``current`` points (the script the next run sources), None if missing."""
        try:
            return os.readlink(self.current)
        except OSError:
            return None

    def point_to(self, script: Path) -> None:
        """Re-point ``current`` atomically: a run starting now sees the old or the new target."""
        tmp = self.path / f".{CURRENT_LINK}.{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        tmp.symlink_to(script)
        os.replace(tmp, self.current)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Serialise commands that change this train (two ``extend`` at once, a hold mid-stop)."""
        # Read-only is enough for flock, and works for a teammate on the starter's lock file.
        fd = os.open(self.path / LOCK_FILE, os.O_RDONLY | os.O_CREAT, 0o664)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def root_dir(directory: Path | str | None) -> Path:
    return (Path(directory) if directory is not None else DEFAULT_DIR).absolute()


def train_names(root: Path) -> list[str]:
    """Names of the trains under ``root`` (folders holding a record), sorted."""
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / STATE_FILE).is_file())


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
