"""What must hold of a train before a command acts on it, said as one line when it does not.

A folder is a train only once its start queued an array (or is settled as having done
so), and nothing is submitted on top of a start or extend whose array is not known:
a second submission could queue the same runs twice. The CLI asks these; the changes
in :mod:`.control` ask them again under the lock.
"""

from __future__ import annotations

from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.journal import Entry
from slurmkit.train.state import TrainDir


def must_exist(train: TrainDir) -> None:
    """A folder left by a start that queued nothing (or is not settled yet) is no train."""
    if train.has_record():
        return
    open_starts = [e for e in train.journal.open_intents() if e.action == "start"]
    if open_starts:
        raise UsageError(
            f"train {train.name}: its start of {open_starts[-1].time} is not settled yet "
            "(whether it queued an array is not known): `slurmkit train status "
            f"{train.name}` asks Slurm again; `slurmkit train settle {train.name}` answers "
            "for an array Slurm cannot prove"
        )
    raise UsageError(
        f"train {train.name}: never started (its start queued nothing); start it again "
        f"with `slurmkit train start SCRIPT --name {train.name}`"
    )


def _open_submissions(train: TrainDir) -> list[Entry]:
    return [e for e in train.journal.open_intents() if e.action in ("start", "extend")]


def no_unsettled_submission(train: TrainDir) -> None:
    """Extending while an earlier submission is unsettled could queue two extensions."""
    for entry in _open_submissions(train):
        raise EnvironmentProblem(
            f"train {train.name}: the `train {entry.action}` of {entry.time} may have queued "
            "an array and is not settled: nothing submitted. "
            f"`slurmkit train status {train.name}` says what is open and how to settle it"
        )


def open_extends(train: TrainDir) -> set[str]:
    """The tokens of the extends still open: one settled as queued is a retry's answer."""
    return {e.token for e in train.journal.open_intents() if e.action == "extend"}


def not_stopped_yet(train: TrainDir) -> list[str]:
    """Why a stop may not have stopped everything: an array an open submission may have
    queued is not known, so it was not cancelled (one warning per open start or extend)."""
    return [
        f"the `train {entry.action}` of {entry.time} is not settled (whether it queued an "
        f"array is not known): `slurmkit train status {train.name}` says what is open; run "
        "`slurmkit train stop` again once it is settled"
        for entry in _open_submissions(train)
    ]
