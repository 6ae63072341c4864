"""The kill switch (a file whose existence stops a train, whoever started it) and the save switch.

Slurm lets only a job's owner (or an admin) hold or cancel it; a file in the
shared train folder can be created by any teammate. The wrapper checks it before
sourcing the training script, so queued runs exit at once (status 0, which
burns through the rest of the array quickly); training loops check it between
steps through ``$SLURMKIT_KILL_SWITCH`` or ``slurmkit train should-stop``.

The save switch (``save-switch``, ``$SLURMKIT_SAVE_SWITCH``) is the seed's cousin: the
training loop that finds it saves a checkpoint, removes it and trains on.

Turning either on or off never waits for the train's lock (a suspended command holding
it must not delay an emergency stop): the change is journaled (intent, file, outcome)
without it, and only the note in ``train.json`` waits, boundedly.

Nor does it need the journal (issue 29: a disk a training filled refused the emergency
switch): the switch file is its own record, so a switch whose intent cannot be written
(no space, a read-only or foreign journal) is flipped all the same, and says "not
journaled".
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from slurmkit import faultpoint
from slurmkit.errors import EnvironmentProblem, SlurmkitError
from slurmkit.files import read_text_bounded, refused
from slurmkit.train.state import TrainDir, current_user, now_text, progress

ENV_VAR = "SLURMKIT_KILL_SWITCH"
SAVE_ENV_VAR = "SLURMKIT_SAVE_SWITCH"
NOTE_MAX_BYTES = 64 * 1024  # only its first 200 characters are shown


@dataclass(frozen=True)
class SwitchState:
    path: Path
    on: bool
    since: str | None = None
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return {"path": str(self.path), "on": self.on, "since": self.since, "note": self.note}


def state(train: TrainDir) -> SwitchState:
    return state_of(train.kill_switch)


def state_of(path: Path) -> SwitchState:
    try:
        stat = path.stat()
    except OSError:
        return SwitchState(path, False)
    since = datetime.fromtimestamp(stat.st_mtime).astimezone().isoformat(timespec="seconds")
    note = ""
    with contextlib.suppress(OSError, SlurmkitError):  # a note that cannot be read: none
        note = read_text_bounded(path, what="kill switch", max_bytes=NOTE_MAX_BYTES).strip()[:200]
    return SwitchState(path, True, since, note)


def turn_on(train: TrainDir, dry_run: bool = False) -> str:
    """Create the switch file (idempotent); returns what was (or would be) done."""
    return _create(
        train,
        train.kill_switch,
        "kill-switch",
        "every remaining run exits at once without training",
        dry_run,
    )


def _create(train: TrainDir, path: Path, switch: str, effect: str, dry_run: bool) -> str:
    """Create ``path`` for ``<switch> on``: intent, O_EXCL create, faultpoint, outcome."""
    label = switch.replace("-", " ")
    if path.exists():
        return f"{label} already on: {path}"
    if dry_run:
        return f"would create {path}"
    action = f"{switch} on"
    token = _begin(train, action)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o664)
    except FileExistsError:
        _finish(train, token, action, "done")
        return f"{label} already on: {path}"
    except OSError as exc:
        _finish(train, token, action, "failed")
        raise refused(exc, f"create the {label} {path}", EnvironmentProblem) from None
    _note_who(fd)
    faultpoint.reached(f"train.{switch}.on.done")
    _finish(train, token, action, "done")
    return f"created {path}: {effect}"


def _note_who(fd: int) -> None:
    """Say in the switch who set it; on a full disk the (empty) file is the switch all the same."""
    try:
        os.write(fd, f"set by {current_user()} at {now_text()}\n".encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def _begin(train: TrainDir, action: str) -> str | None:
    """The intent, or None when it cannot be journaled: the switch is flipped all the same.

    A teammate may flip the switch but not write the owner's journal; a full disk, a
    read-only folder or a journal that is not the caller's cannot take the intent. The
    switch file is its own record (it says who set it), so none of these stops the
    change; each is said in one line ("not journaled").
    """
    from slurmkit.train import reconcile  # the Slurm layer: not for should-stop's imports

    journal = train.journal.path
    if os.path.exists(journal) and not os.access(journal, os.W_OK):
        progress(f"note: {journal} is not yours to write; the switch file says who set it")
        return None
    token, why = reconcile.begin_anyway(train, action)
    if token is None:
        progress(f"note: {action}, not journaled ({why}): the switch file is its own record")
    return token


def _finish(train: TrainDir, token: str | None, action: str, result: str) -> None:
    from slurmkit.train import reconcile

    if token is not None:
        note = reconcile.finish(train, token, action, result)
        if note:
            progress(f"note: {note}")


def turn_off(train: TrainDir, dry_run: bool = False) -> str:
    return _remove(
        train, train.kill_switch, "kill-switch", "runs that start from now on train again", dry_run
    )


def _remove(train: TrainDir, path: Path, switch: str, effect: str, dry_run: bool) -> str:
    label = switch.replace("-", " ")
    if not path.exists():
        return f"{label} already off: {path} does not exist"
    if dry_run:
        return f"would remove {path}"
    action = f"{switch} off"
    token = _begin(train, action)
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        _finish(train, token, action, "failed")
        raise refused(exc, f"remove the {label} {path}", EnvironmentProblem) from None
    faultpoint.reached(f"train.{switch}.off.done")
    _finish(train, token, action, "done")
    return f"removed {path}: {effect}"


# ---------------------------------------------------------------- save switch
# The seed's cousin of the kill switch: the training loop finds the file, saves a
# checkpoint, removes the file and goes on training. Same journaling, same "anyone who
# can write the train folder" rule; nothing in Slurm changes.


def save_state(train: TrainDir) -> SwitchState:
    return state_of(train.save_switch)


def save_on(train: TrainDir, dry_run: bool = False) -> str:
    """Ask the running training for a checkpoint: it saves, removes the file, goes on."""
    return _create(
        train,
        train.save_switch,
        "save-switch",
        f"the training saves a checkpoint at its next check of ${SAVE_ENV_VAR} "
        "and removes the file",
        dry_run,
    )


def save_off(train: TrainDir, dry_run: bool = False) -> str:
    """Withdraw a save request the training has not acted on yet."""
    return _remove(
        train, train.save_switch, "save-switch", "no checkpoint will be asked for", dry_run
    )


def should_stop(path: Path) -> bool:
    """The check training loops make: what the wrapper tests (`[[ -e ]]`), cheap enough per step."""
    return os.path.exists(path)


def record(train: TrainDir, action: str, switch: str = "kill-switch") -> str | None:
    """Note the switch in the train's record; a notice instead when that is not ours to write.

    A teammate's switch is not written to ``train.json``: the record must stay the
    owner's (a replaced record is refused at the owner's next change), and the
    switch file itself says who set it.
    """
    try:
        with train.locked():
            state = train.load_trusted()
            state.note(f"{switch} {action}")
            train.save(state)
    except (OSError, SlurmkitError) as exc:
        path = train.kill_switch if switch == "kill-switch" else train.save_switch
        return (
            f"{switch.replace('-', ' ')} {action}, but not recorded in {train.state_file} "
            f"({exc}); the switch file {path} says who set it"
        )
    return None
