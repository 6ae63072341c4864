"""Stopping always works (issue 29, item 6, and two lesser ones).

The kill switch, ``train stop`` and ``train hold`` act even when their intent cannot be
journaled (the switch file is its own record, a stop is read back from the queue), and
say "not journaled"; the space check asks only for what the write needs. An intent is
closed only once its record is written. A start that waited for the lock of a start
that was refused says so plainly.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from slurmkit import faultpoint
from slurmkit.errors import EnvironmentProblem, SlurmkitError
from slurmkit.train import state as train_state
from slurmkit.train.state import TrainDir
from tests.unit.test_journal_torn import fill, leave_in_last_page, tiny_tmpfs
from tests.unit.test_train_cli import GOOD, Run, running_and_pending, script
from tests.unit.test_train_faults import (
    FOLDER,
    TokenCluster,
    clock,
    cluster,
    open_intents,
    start,
)

__all__ = ["clock", "cluster", "tiny_tmpfs"]  # fixtures, used by name


class Room:
    """statvfs of a file system with 40 KB free: a training filling it with checkpoints."""

    f_frsize = 4096
    f_bavail = 10
    f_files = 1000
    f_favail = 500


@pytest.mark.parametrize(
    ("args", "acted"),
    [
        (("kill-switch", "on", "--yes"), None),
        (("stop", "--now", "--yes"), ("scancel", "115")),
        (("hold", "--yes"), ("scontrol", "hold", "115")),
        (("switch", "b.slurm", "--yes"), None),
    ],
)
def test_with_40_kb_free_a_change_is_not_refused(
    run_cli: Run,
    cluster: TokenCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    acted: tuple[str, ...] | None,
) -> None:
    """One journal line is ~300 bytes; the check asked for 64 KB and refused them all."""
    start(run_cli, tmp_path)
    script(tmp_path, GOOD.replace("echo train", "echo two"), "b.slurm")
    cluster.queue = running_and_pending()
    monkeypatch.setattr("slurmkit.journal.os.statvfs", lambda path: Room())
    result = run_cli("train", *args)
    assert "no space left" not in result.stderr
    if acted:
        assert [c for c in cluster.calls if c[: len(acted)] == acted], cluster.calls
    if args[0] == "kill-switch":
        assert (tmp_path / FOLDER / "kill-switch").exists()
    if args[0] == "switch":
        assert (tmp_path / FOLDER / "current").readlink() == tmp_path / "b.slurm"
    assert open_intents(tmp_path) == []  # journaled: intent and outcome


def full_train_folder(run_cli: Run, tmp_path: Path, mnt: Path) -> tuple[Path, bytes]:
    """A started train on a tmpfs filled to the last byte, its journal ending on a page
    boundary: no record can be appended. Returns (folder, journal bytes)."""
    trains = mnt / "trains"
    start(run_cli, tmp_path, "--dir", str(trains))
    folder = trains / "tr"
    leave_in_last_page(folder / "journal", 0)
    fill(mnt)
    return folder, (folder / "journal").read_bytes()


def test_on_a_full_folder_the_kill_switch_stop_and_hold_act_and_say_not_journaled(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, tiny_tmpfs: Path
) -> None:
    folder, journal = full_train_folder(run_cli, tmp_path, tiny_tmpfs)
    cluster.queue = running_and_pending()
    where = ("--dir", str(folder.parent))

    switch = run_cli("train", "kill-switch", "on", "--yes", *where)
    assert (folder / "kill-switch").exists()
    assert "not journaled" in switch.stderr and "Traceback" not in switch.stderr

    hold = run_cli("train", "hold", "--yes", *where, exit_code=1)
    assert cluster.slurm_calls("scontrol") == [
        ("scontrol", "hold", "115"),
        ("scontrol", "show", "config"),  # train hold's queue-age check
    ]
    assert "not journaled" in hold.stderr and "held array 115" in hold.stdout
    release = run_cli("train", "release", "--yes", *where, exit_code=2)
    assert "nothing was done" in release.stderr  # not a stop: refused as before

    def cancelled(call: object) -> None:  # the queue after scancel --now: empty
        if getattr(call, "argv", ("",))[0] == "scancel":
            cluster.queue = ""

    cluster.watch.append(cancelled)
    stop = run_cli("train", "stop", "--now", "--yes", *where, exit_code=1)
    assert [c for c in cluster.calls if c[0] == "scancel"] == [("scancel", "115")]
    assert "not journaled" in stop.stderr and "Traceback" not in stop.stderr
    assert "the queue shows" in stop.stderr  # read back from the queue, not from a journal

    assert (folder / "journal").read_bytes() == journal  # no fragment of any intent


def test_on_a_read_only_folder_stop_takes_the_lock_and_acts(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, tiny_tmpfs: Path
) -> None:
    """flock needs no write access: a lock file that cannot be opened for writing on a
    read-only file system ("cannot open lock file: Read-only file system") kept the stop
    from acting."""
    trains = tiny_tmpfs / "trains"
    start(run_cli, tmp_path, "--dir", str(trains))
    cluster.queue = running_and_pending()
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_tmpfs)], check=True)
    try:
        stop = run_cli("train", "stop", "--now", "--yes", "--dir", str(trains), exit_code=1)
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(tiny_tmpfs)], check=True)
    assert [c for c in cluster.calls if c[0] == "scancel"] == [("scancel", "115")]
    assert "not journaled" in stop.stderr and "Read-only file system" in stop.stderr


def test_a_teammate_style_unwritable_journal_does_not_need_free_space_for_the_switch(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The switch file is its own record: a journal the caller may not write, on a full
    disk, still lets the kill switch on (it asked for free space first)."""
    start(run_cli, tmp_path)
    monkeypatch.setattr("slurmkit.train.killswitch.os.access", lambda path, mode: False)

    class Full:
        f_bavail, f_frsize, f_files, f_favail = 0, 4096, 100, 0

    monkeypatch.setattr("slurmkit.journal.os.statvfs", lambda path: Full())
    result = run_cli("train", "kill-switch", "on", "--yes")
    assert (tmp_path / FOLDER / "kill-switch").exists(), result.stderr


# ---------------------------------------------------------------- closed once recorded


def test_a_restart_whose_record_fails_stays_open_until_the_next_command_records_it(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills between restart-run's scancel and its record: the intent was closed,
    so train.json never got the event."""
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    real = TrainDir.save

    def full(self: TrainDir, state: object) -> None:
        raise EnvironmentProblem(f"cannot write {self.state_file}: No space left on device")

    monkeypatch.setattr(TrainDir, "save", full)
    result = run_cli("train", "restart-run", "--yes", exit_code=1)
    assert ("scancel", "115_2") in cluster.calls
    assert "not recorded" in result.stderr
    assert [e["action"] for e in open_intents(tmp_path)] == ["restart-run"]

    monkeypatch.setattr(TrainDir, "save", real)
    cluster.queue = running_and_pending().splitlines(keepends=True)[0]  # 115_2 has ended
    result = run_cli("train", "status")
    assert "now recorded" in result.stderr, result.stderr
    record = json.loads((tmp_path / FOLDER / "train.json").read_text())
    assert record["events"][-1]["what"] == "restart-run"
    assert open_intents(tmp_path) == []


# ---------------------------------------------------------------- a start that waited


def test_a_start_that_waited_for_a_refused_start_says_so_plainly(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first start is refused by sbatch and removes its folder; the second one, which
    waited for its lock, said "cannot write journal …: No such file or directory"."""
    from slurmkit.train.submit import start as start_train

    err = "sbatch: error: Batch job submission failed: Invalid partition name specified\n"
    cluster.answers[("sbatch",)] = (1, "", err)
    path = Path(script(tmp_path))
    said: list[str] = []
    second: list[BaseException] = []

    def run_second() -> None:
        try:
            start_train(path, tmp_path / FOLDER.parent, runs=5, name="tr", lock_wait=30)
        except BaseException as exc:
            second.append(exc)

    thread = threading.Thread(target=run_second)

    def reached(name: str) -> None:
        if name != "train.start.before-sbatch" or thread.is_alive():
            return
        train_state._progress.append(said.append)
        thread.start()
        deadline = time.monotonic() + 30
        while not any("waiting up to" in line for line in said):
            assert time.monotonic() < deadline, "the second start never waited for the lock"
            time.sleep(0.01)

    monkeypatch.setattr(faultpoint, "reached", reached)
    first = start(run_cli, tmp_path, exit_code=2)
    thread.join(timeout=60)
    assert "Invalid partition name" in first.stderr
    (exc,) = second
    assert isinstance(exc, SlurmkitError) and exc.exit_code == 2, repr(exc)
    assert "No such file" not in str(exc), exc
    assert "queued nothing" in str(exc) and "start" in str(exc), exc
    assert not (tmp_path / FOLDER).exists()
    assert not os.path.lexists(tmp_path / FOLDER)
