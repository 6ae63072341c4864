"""What must hold before a train command acts (slurmkit/train/rules.py), read from the journal:
a folder whose start is open or queued nothing is no train, and nothing is submitted, or
called stopped, past a start or extend whose array is not known."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.train import reconcile, rules
from slurmkit.train.state import TrainDir


@pytest.fixture
def train(tmp_path: Path) -> TrainDir:
    folder = tmp_path / "tr"
    folder.mkdir(mode=0o700)
    return TrainDir(folder, lock_wait=0)


def test_a_folder_without_a_record_is_no_train_and_says_why(train: TrainDir) -> None:
    with pytest.raises(UsageError, match="never started"):
        rules.must_exist(train)
    with train.locked():
        reconcile.begin(train, "start", runs=5)
    with pytest.raises(UsageError, match=r"start of .* is not settled yet.*train settle tr"):
        rules.must_exist(train)


def test_an_open_extend_holds_back_submissions_and_warns_a_stop(train: TrainDir) -> None:
    assert rules.open_extends(train) == set() and rules.not_stopped_yet(train) == []
    rules.no_unsettled_submission(train)
    with train.locked():
        token = reconcile.begin(train, "extend", runs=2, after="115")
    assert rules.open_extends(train) == {token}
    with pytest.raises(EnvironmentProblem, match=r"`train extend` of .* nothing submitted"):
        rules.no_unsettled_submission(train)
    (warning,) = rules.not_stopped_yet(train)
    assert "`train extend`" in warning and "`slurmkit train stop` again" in warning
    with train.locked():
        reconcile.finish(train, token, "extend", "failed", why="test")
    assert rules.not_stopped_yet(train) == []
