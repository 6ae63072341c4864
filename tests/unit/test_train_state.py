"""A train's folder: record round trip, atomic writes, the current link, finding trains by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurmkit.errors import UsageError
from slurmkit.files import write_atomic
from slurmkit.train import killswitch
from slurmkit.train.state import (
    ArrayRecord,
    TrainDir,
    TrainState,
    check_name,
    find,
    root_dir,
    train_names,
)


def _state(name: str = "tr") -> TrainState:
    return TrainState(
        name=name,
        created="2026-01-01T00:00:00+00:00",
        workdir="/w d",
        script="/w d/a.slurm",
        header=["--nodes=2", "--output=x %j.out"],
        extra=["--partition=cpu"],
        arrays=[
            ArrayRecord("115", 5, "2026-01-01T00:00:00+00:00"),
            ArrayRecord("130", 3, "2026-01-02T00:00:00+00:00", after="115"),
        ],
    )


def _train(tmp_path: Path, name: str = "tr") -> TrainDir:
    train = TrainDir(tmp_path / name)
    train.path.mkdir(parents=True)
    return train


def test_record_round_trip(tmp_path: Path) -> None:
    train = _train(tmp_path)
    state = _state()
    state.note("hold", "arrays 115")
    train.save(state)
    loaded = train.load()
    assert loaded == state
    assert loaded.array_ids == ["115", "130"]
    assert loaded.events[0].what == "hold" and loaded.events[0].user
    data = json.loads(train.state_file.read_text())
    assert data["version"] == 1 and data["arrays"][1]["after"] == "115"


def test_save_leaves_no_temporary_files(tmp_path: Path) -> None:
    train = _train(tmp_path)
    train.save(_state())
    train.save(_state())
    assert sorted(p.name for p in train.path.iterdir()) == ["train.json"]


def test_failed_write_keeps_the_old_record(tmp_path: Path) -> None:
    train = _train(tmp_path)
    train.save(_state())
    with pytest.raises(UnicodeEncodeError):
        write_atomic(train.state_file, "half written \ud800 never lands")
    assert train.load() == _state()
    assert sorted(p.name for p in train.path.iterdir()) == ["train.json"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "damaged train record"),
        ('{"version": 99}', "not a slurmkit train record"),
        ('{"version": 1, "name": "x"}', "damaged train record"),
        ("[1, 2]", "not a slurmkit train record"),
    ],
)
def test_damaged_records_are_usage_errors(tmp_path: Path, content: str, message: str) -> None:
    train = _train(tmp_path)
    train.state_file.write_text(content)
    with pytest.raises(UsageError, match=message):
        train.load()


def test_point_to_replaces_the_link(tmp_path: Path) -> None:
    train = _train(tmp_path)
    a, b = tmp_path / "a.slurm", tmp_path / "b.slurm"
    a.write_text("echo a\n")
    b.write_text("echo b\n")
    train.point_to(a)
    assert train.target() == str(a)
    train.point_to(b)
    assert train.target() == str(b) and train.current.read_text() == "echo b\n"
    assert [p.name for p in train.path.iterdir()] == ["current"]


def test_target_of_a_train_without_link_is_none(tmp_path: Path) -> None:
    assert _train(tmp_path).target() is None


def test_find_by_name_and_the_only_train(tmp_path: Path) -> None:
    root = tmp_path / "trains"
    with pytest.raises(UsageError, match="no trains in"):
        find(root, None)
    first = _train(root, "alpha")
    first.save(_state("alpha"))
    (root / "not-a-train").mkdir()
    assert train_names(root) == ["alpha"]
    assert find(root, None) == first
    assert find(root, "alpha") == first
    _train(root, "beta").save(_state("beta"))
    with pytest.raises(UsageError, match=r"2 trains in .* \(alpha, beta\): name one"):
        find(root, None)
    with pytest.raises(UsageError, match="did you mean alpha"):
        find(root, "alpah")
    with pytest.raises(UsageError, match=r"unknown train 'zzz' .*trains: alpha, beta"):
        find(root, "zzz")


def test_root_dir_is_absolute_and_defaults_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert root_dir(None) == tmp_path / ".slurmkit" / "trains"
    assert root_dir("x") == tmp_path / "x"


@pytest.mark.parametrize("name", ["", "-x", "a/b", "a b", "x" * 65, "..", "a\nb"])
def test_bad_names(name: str) -> None:
    with pytest.raises(UsageError, match="bad train name"):
        check_name(name)


def test_kill_switch_on_off_is_idempotent(tmp_path: Path) -> None:
    train = _train(tmp_path)
    assert killswitch.turn_on(train, dry_run=True).startswith("would create")
    assert not killswitch.should_stop(train.kill_switch)
    assert killswitch.turn_on(train).startswith("created")
    assert killswitch.turn_on(train).startswith("kill switch already on")
    state = killswitch.state(train)
    assert state.on and state.since and "set by" in state.note
    assert killswitch.should_stop(train.kill_switch)
    assert killswitch.turn_off(train, dry_run=True).startswith("would remove")
    assert killswitch.should_stop(train.kill_switch)
    assert killswitch.turn_off(train).startswith("removed")
    assert killswitch.turn_off(train).startswith("kill switch already off")
    assert not killswitch.state(train).on


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("header", "--nodes=2"),
        ("extra", "--partition=cpu"),
        ("header", [["--nodes=2"]]),
        ("arrays", "115"),
        ("arrays", [["115", 5]]),
        ("events", [1]),
        ("name", ["tr"]),
    ],
)
def test_a_record_field_of_the_wrong_type_is_refused(
    tmp_path: Path, field: str, value: object
) -> None:
    """Issue 14: a ``header`` string was split into characters, one #SBATCH word each."""
    train = _train(tmp_path)
    data = _state().to_json()
    data[field] = value
    train.state_file.write_text(json.dumps(data))
    with pytest.raises(UsageError, match=f"damaged train record.*{field}"):
        train.load()


def test_a_non_utf8_record_is_a_usage_error(tmp_path: Path) -> None:
    """Issue 14: a non-UTF-8 train.json gave a UnicodeDecodeError traceback."""
    train = _train(tmp_path)
    train.state_file.write_bytes(json.dumps(_state().to_json()).encode().replace(b"w d", b"\xff"))
    with pytest.raises(UsageError, match="not UTF-8"):
        train.load()


def test_a_busy_train_lock_gives_up_with_a_clear_message(tmp_path: Path) -> None:
    """Issue 14: the train lock waited for ever behind a suspended holder."""
    import fcntl
    import os

    from slurmkit.locks import LockBusy

    train = _train(tmp_path)
    holder = os.open(train.path / ".lock", os.O_RDWR | os.O_CREAT, 0o600)  # another command
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        with (
            pytest.raises(LockBusy, match=r"train tr is busy.*nothing was done"),
            train.locked(wait=0.2),
        ):
            pass
    finally:
        os.close(holder)
    with train.locked(wait=0):
        pass


def test_the_train_lock_never_follows_a_symlink(tmp_path: Path) -> None:
    """Issue 14 finding 7: a teammate's ``.lock -> ~owner/.bashrc`` made the owner create it."""
    from slurmkit.errors import EnvironmentProblem

    train = _train(tmp_path)
    victim = tmp_path / "victim"
    (train.path / ".lock").symlink_to(victim)
    with pytest.raises(EnvironmentProblem, match="symbolic link"), train.locked(wait=0):
        pass
    assert not victim.exists()
