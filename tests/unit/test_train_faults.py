"""Trains survive faults (issue 22): intent first, then act, then outcome; nothing orphaned,
doubled or misreported. Slurm is faked at the argv seam (see ``test_train_cli``); a fake
sbatch can "time out" and still queue the array, as a hung slurmctld does once it wakes.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

from slurmkit import _proc, faultpoint
from slurmkit.slurm import recheck
from tests.fakes import Call
from tests.unit.train_fakes import (
    GOOD,
    Killed,
    Run,
    TokenCluster,
    cluster_fixture,
    running_and_pending,
    sacct_row,
    script,
    squeue_row,
)


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Asking Slurm again (``recheck.read_again``) on a fake clock: its real window and
    pause, measured, at no real cost; ``clock[0]`` is the seconds it waited."""
    now = [0.0]
    real = recheck.read_again

    def tick(seconds: float) -> None:
        now[0] += seconds

    def read_again(read, **kw):  # type: ignore[no-untyped-def]
        kw.setdefault("sleep", tick)
        kw.setdefault("clock", lambda: now[0])
        return real(read, **kw)

    monkeypatch.setattr(recheck, "read_again", read_again)
    return now


cluster = cluster_fixture(TokenCluster)


FOLDER = Path(".slurmkit") / "trains" / "tr"


def start(run_cli: Run, tmp_path: Path, *extra: str, exit_code: int = 0):
    return run_cli(
        "train", "start", script(tmp_path), "--runs", "5", "--name", "tr", *extra,
        exit_code=exit_code,
    )  # fmt: skip


def journal(tmp_path: Path) -> list[dict]:
    path = tmp_path / FOLDER / "journal"
    return [json.loads(line) for line in path.read_text().splitlines()]


def open_intents(tmp_path: Path) -> list[dict]:
    entries = journal(tmp_path)
    closed = {e["token"] for e in entries if e["kind"] == "outcome"}
    return [e for e in entries if e["kind"] == "intent" and e["token"] not in closed]


def arrays(tmp_path: Path) -> list[str]:
    record = json.loads((tmp_path / FOLDER / "train.json").read_text())
    return [a["job_id"] for a in record["arrays"]]


def kill_at(monkeypatch: pytest.MonkeyPatch, point: str) -> list[str]:
    reached: list[str] = []

    def fake(name: str) -> None:
        reached.append(name)
        if name == point:
            raise Killed(name)

    monkeypatch.setattr(faultpoint, "reached", fake)
    return reached


# ---------------------------------------------------------------- 1. the journal


def test_every_sbatch_carries_its_journal_token(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    run_cli("train", "extend", "--runs", "2", "--yes")
    tokens = [e["token"] for e in journal(tmp_path) if e["kind"] == "intent"]
    comments = [w for c in cluster.slurm_calls("sbatch") for w in c if w.startswith("--comment")]
    assert comments == [f"--comment=slurmkit:{t}" for t in tokens]
    assert [e["action"] for e in journal(tmp_path)] == ["start", "start", "extend", "extend"]
    assert open_intents(tmp_path) == []


@pytest.mark.parametrize(
    ("args", "acted"),
    [
        (("release", "--yes"), ("scontrol", "release", "115")),
        (("extend", "--runs", "2", "--yes"), ("sbatch",)),
        (("switch", "b.slurm", "--yes"), None),
        (("restart-run", "--yes"), ("scancel", "115_2")),
    ],
)  # hold, stop and the switches act all the same (issue 29): tests/unit/test_stop_always.py
def test_a_journal_that_cannot_take_the_intent_means_nothing_is_done(
    run_cli: Run,
    cluster: TokenCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    acted: tuple[str, ...] | None,
) -> None:
    start(run_cli, tmp_path)
    script(tmp_path, GOOD.replace("echo train", "echo two"), "b.slurm")
    cluster.queue = running_and_pending()
    before = list(cluster.calls)

    class Full:
        f_bavail, f_frsize, f_files, f_favail = 0, 4096, 100, 0

    monkeypatch.setattr("slurmkit.journal.os.statvfs", lambda path: Full())
    result = run_cli("train", *args, exit_code=2)
    assert "no space left" in result.stderr and "nothing was done" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    if acted:
        assert [c for c in cluster.calls[len(before) :] if c[: len(acted)] == acted] == []
    assert (tmp_path / FOLDER / "current").readlink() == tmp_path / "a.slurm"
    assert not (tmp_path / FOLDER / "kill-switch").exists()
    assert not (tmp_path / FOLDER / "save-switch").exists()


def test_start_with_an_unwritable_trains_folder_submits_nothing(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Full:
        f_bavail, f_frsize, f_files, f_favail = 0, 4096, 100, 0

    monkeypatch.setattr("slurmkit.journal.os.statvfs", lambda path: Full())
    result = start(run_cli, tmp_path, exit_code=2)
    assert "nothing was done" in result.stderr and "Traceback" not in result.stderr
    assert cluster.slurm_calls("sbatch") == []
    assert not (tmp_path / FOLDER).exists()


@pytest.mark.parametrize(
    ("args", "action"),
    [
        (("hold", "--yes"), "hold"),
        (("release", "--yes"), "release"),
        (("stop", "--yes"), "stop"),
        (("switch", "b.slurm", "--yes"), "switch"),
        (("kill-switch", "on", "--yes"), "kill-switch on"),
    ],
)
def test_each_change_journals_its_intent_then_its_outcome(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, args: tuple[str, ...], action: str
) -> None:
    start(run_cli, tmp_path)
    script(tmp_path, GOOD.replace("echo train", "echo two"), "b.slurm")
    cluster.queue = running_and_pending()
    run_cli("train", *args)
    *_, intent, outcome = journal(tmp_path)
    assert (intent["kind"], intent["action"]) == ("intent", action)
    assert (outcome["kind"], outcome["token"], outcome["result"]) == (
        "outcome",
        intent["token"],
        "done",
    )
    assert intent["pid"] and intent["host"] and intent["user"]


# ---------------------------------------------------------------- 2. no answer is not "not done"


def test_sbatch_without_an_answer_but_accepted_is_recorded_as_the_train(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    cluster.sbatch_silent = True
    result = start(run_cli, tmp_path)
    assert arrays(tmp_path) == ["115"]
    assert "queued although sbatch did not answer" in result.stderr
    assert "array 115" in result.stdout
    assert open_intents(tmp_path) == []


def test_sbatch_refused_leaves_no_train(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, clock: list[float]
) -> None:
    err = "sbatch: error: Batch job submission failed: Invalid partition name specified\n"
    cluster.answers[("sbatch",)] = (1, "", err)
    result = start(run_cli, tmp_path, exit_code=2)
    assert "Invalid partition name" in result.stderr
    assert len(cluster.slurm_calls("squeue")) == 1  # looked up by its token first
    assert not (tmp_path / FOLDER).exists()
    assert clock[0] == 0.0  # a refusal is an answer: no window of asking again


def token_reads(cluster: TokenCluster) -> int:
    """How many times the queue was asked for the train's jobs by their comment."""
    return len([c for c in cluster.slurm_calls("squeue") if any("%k" in w for w in c)])


def submit(run_cli: Run, tmp_path: Path, command: str, exit_code: int = 0):
    if command == "start":
        return start(run_cli, tmp_path, exit_code=exit_code)
    return run_cli("train", "extend", "--runs", "2", "--yes", exit_code=exit_code)


@pytest.mark.parametrize("command", ["start", "extend"])
def test_a_silent_sbatch_the_woken_queue_does_not_show_yet_is_found(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, clock: list[float], command: str
) -> None:
    """Seen on 25.11: slurmctld, woken from SIGSTOP, answered squeue before it ran the
    sbatch still in its backlog. Absent, absent, present: the array is the train's (one
    sbatch, recorded), not "nothing was queued" with the array then running unseen."""
    if command == "extend":
        start(run_cli, tmp_path)
        cluster.queue = running_and_pending()
    cluster.sbatch_silent = True
    cluster.backlog = 2
    reads = token_reads(cluster)
    result = submit(run_cli, tmp_path, command)
    assert token_reads(cluster) - reads == 3 and cluster.backlog == 0
    assert clock[0] == 2.0  # present ends the window at once
    assert arrays(tmp_path) == (["115"] if command == "start" else ["115", "130"])
    assert len(cluster.slurm_calls("sbatch")) == (1 if command == "start" else 2)
    assert "queued although sbatch did not answer" in result.stderr
    assert open_intents(tmp_path) == []


@pytest.mark.parametrize("command", ["start", "extend"])
def test_a_silent_sbatch_absent_for_the_whole_window_queued_nothing(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, clock: list[float], command: str
) -> None:
    """Absent is believed only after the whole window (``recheck.window()``: two
    MessageTimeouts); then the answer says it was checked, and a start leaves no folder behind."""
    if command == "extend":
        start(run_cli, tmp_path)
        cluster.queue = running_and_pending()
    cluster.sbatch_lost = True
    reads = token_reads(cluster)
    result = submit(run_cli, tmp_path, command, exit_code=2)
    assert clock[0] >= recheck.window() - 1
    assert token_reads(cluster) - reads == int(recheck.window())
    *progress, error = result.stderr.strip().splitlines()
    assert "nothing was queued" in error and "after 20 s of asking" in error
    assert "Traceback" not in result.stderr
    assert len(progress) == 2 and "no answer from Slurm" in progress[1]  # said what it waits for
    if command == "start":
        assert not (tmp_path / FOLDER).exists()
    else:
        assert arrays(tmp_path) == ["115"] and open_intents(tmp_path) == []
        (outcome,) = [e for e in journal(tmp_path) if e.get("action") == "extend"][1:]
        assert outcome["result"] == "failed"


def test_settling_on_a_still_silent_controller_is_one_look_not_the_window(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, clock: list[float]
) -> None:
    """The start itself keeps asking through silences for the window (slurmctld may wake
    during it); a later command settling the open start does not: silence is "unknown" at
    once, so `train status` on a hung controller costs one timeout, not the window."""
    cluster.sbatch_silent = True
    cluster.squeue_down = True
    start(run_cli, tmp_path, exit_code=2)
    assert clock[0] >= recheck.window() - 1
    assert token_reads(cluster) == int(recheck.window())
    clock[0] = 0.0
    result = run_cli("train", "status", "tr", exit_code=2)
    assert token_reads(cluster) == int(recheck.window()) + 1 and clock[0] == 0.0
    assert "may have queued" in result.stderr
    assert [e["action"] for e in open_intents(tmp_path)] == ["start"]


@pytest.mark.parametrize("then", ["start", "status"])
def test_an_open_start_settled_when_the_woken_queue_does_not_show_it_yet(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, clock: list[float], then: str
) -> None:
    """The retry (or status) after an unknown start meets the same woken controller: absent
    at first is read again for the window, so the retry adopts, never submits a second."""
    cluster.sbatch_silent = True
    cluster.squeue_down = True
    start(run_cli, tmp_path, exit_code=2)
    assert [e["action"] for e in open_intents(tmp_path)] == ["start"]
    cluster.sbatch_silent = cluster.squeue_down = False
    cluster.backlog = 2
    clock[0] = 0.0
    if then == "start":
        result = start(run_cli, tmp_path)
        assert "already queued" in result.stderr
    else:
        result = run_cli("train", "status", "tr")
        assert "adopted" in result.stderr
    assert len(cluster.slurm_calls("sbatch")) == 1
    assert arrays(tmp_path) == ["115"] and open_intents(tmp_path) == []
    assert clock[0] == 2.0


def test_sbatch_and_squeue_silent_keeps_the_folder_and_a_retry_never_doubles(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    """The issue's hung slurmctld: start failed, folder deleted, array ran; a retry made two."""
    cluster.sbatch_silent = True
    cluster.squeue_down = True
    result = start(run_cli, tmp_path, exit_code=2)
    assert "Traceback" not in result.stderr
    assert "may have been queued" in result.stderr and "train status tr" in result.stderr
    assert (tmp_path / FOLDER / "current").is_symlink()  # the queued runs need it
    assert [e["action"] for e in open_intents(tmp_path)] == ["start"]
    # slurmctld wakes up: the retry finds the first array by its token, submits nothing
    cluster.squeue_down = False
    cluster.sbatch_silent = False
    result = start(run_cli, tmp_path)
    assert len(cluster.slurm_calls("sbatch")) == 1
    assert arrays(tmp_path) == ["115"]
    assert "already queued" in result.stderr
    assert open_intents(tmp_path) == []
    # a third start with the name is a clash, in one line
    result = start(run_cli, tmp_path, exit_code=2)
    assert "already exists" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_an_extend_retried_after_no_answer_never_adds_a_second_extension(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    """The unknown extend's error says extending again never submits twice: a retry while
    Slurm is silent submits nothing; once it answers, the retry adopts the first
    extension and submits nothing more (as a retried start does)."""
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    cluster.sbatch_silent = True

    def hang_after_sbatch(call: Call) -> None:  # the controller stops answering from sbatch on
        if call.argv[0] == "sbatch":
            cluster.squeue_down = True

    cluster.watch.append(hang_after_sbatch)
    first = run_cli("train", "extend", "--runs", "2", "--yes", exit_code=2)
    assert "never submits twice" in first.stderr
    cluster.watch.clear()
    cluster.sbatch_silent = False
    refused = run_cli("train", "extend", "--runs", "2", "--yes", exit_code=2)
    assert "nothing submitted" in refused.stderr
    cluster.squeue_down = False
    retry = run_cli("train", "extend", "--runs", "2", "--yes")
    assert "adopted" in retry.stderr and "not extending again" in retry.stdout
    assert len(cluster.slurm_calls("sbatch")) == 2  # the start, the first extend
    assert arrays(tmp_path) == ["115", "130"] and open_intents(tmp_path) == []
    # a later extend is a new request: it extends
    cluster.queue = running_and_pending()
    run_cli("train", "extend", "--runs", "2", "--yes")
    assert len(cluster.slurm_calls("sbatch")) == 3


def test_a_start_nothing_queued_for_can_be_retried(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    cluster.sbatch_lost = True
    cluster.squeue_down = True
    start(run_cli, tmp_path, exit_code=2)
    cluster.sbatch_lost = cluster.squeue_down = False
    status = run_cli("train", "status", "tr", exit_code=2)
    assert "queued nothing" in status.stderr
    start(run_cli, tmp_path)
    assert arrays(tmp_path) == ["115"] and len(cluster.slurm_calls("sbatch")) == 2


def test_a_name_taken_by_something_else_is_one_line(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    (tmp_path / FOLDER).mkdir(parents=True)
    (tmp_path / FOLDER / "notes.txt").write_text("mine\n")
    result = start(run_cli, tmp_path, exit_code=2)
    assert "already exists" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert cluster.slurm_calls("sbatch") == []


# ---------------------------------------------------------------- 3. reconcile after a kill


@pytest.mark.parametrize("command", ["start", "extend"])
def test_killed_after_sbatch_the_next_status_adopts_and_stop_stops_it(
    run_cli: Run,
    cluster: TokenCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    if command == "extend":
        start(run_cli, tmp_path)
        cluster.queue = running_and_pending()
    reached = kill_at(monkeypatch, f"train.{command}.submitted")
    with pytest.raises(Killed):
        if command == "start":
            start(run_cli, tmp_path)
        else:
            run_cli("train", "extend", "--runs", "2", "--yes")
    assert reached[-1] == f"train.{command}.submitted"
    orphan = cluster.commented[-1][0]
    assert [e["action"] for e in open_intents(tmp_path)] == [command]
    kill_at(monkeypatch, "none")
    cluster.queue += squeue_row(
        job_id=orphan, array_job_id=orphan, array_task_id="1-2%1", name="tr", user="root",
        state="PENDING", reason="Dependency", time_limit="5:00",
    )  # fmt: skip
    result = run_cli("train", "status", "tr")
    assert f"array {orphan}" in result.stderr and "adopted" in result.stderr
    assert orphan in arrays(tmp_path)
    assert open_intents(tmp_path) == []
    run_cli("train", "stop", "--now", "--yes")
    (cancel,) = cluster.slurm_calls("scancel")
    assert orphan in cancel


def test_killed_after_sbatch_a_start_again_with_the_name_adopts_never_a_traceback(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue: after a kill -9 in start, starting again with the same name gave a
    FileExistsError traceback (or, worse, a second array)."""
    kill_at(monkeypatch, "train.start.submitted")
    with pytest.raises(Killed):
        start(run_cli, tmp_path)
    kill_at(monkeypatch, "none")
    result = start(run_cli, tmp_path)
    assert "already queued" in result.stderr and "Traceback" not in result.stderr
    assert len(cluster.slurm_calls("sbatch")) == 1 and arrays(tmp_path) == ["115"]
    assert open_intents(tmp_path) == []


def test_killed_after_extend_a_stop_now_at_once_cancels_the_orphan_too(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue: `train stop --now --yes` exited 0 while the array of a killed extend ran
    on, unseen. stop settles first: the orphan is adopted, then cancelled with the rest."""
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    kill_at(monkeypatch, "train.extend.submitted")
    with pytest.raises(Killed):
        run_cli("train", "extend", "--runs", "2", "--yes")
    kill_at(monkeypatch, "none")
    orphan = cluster.commented[-1][0]
    cluster.queue += squeue_row(
        job_id=orphan, array_job_id=orphan, array_task_id="1-2%1", name="tr", user="root",
        state="PENDING", reason="Dependency", time_limit="5:00",
    )  # fmt: skip
    result = run_cli("train", "stop", "--now", "--yes")
    assert "adopted" in result.stderr
    (cancel,) = cluster.slurm_calls("scancel")
    assert "115" in cancel and orphan in cancel and "--state=PENDING" not in cancel


def test_killed_after_switch_repointed_is_recorded_next_time(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    new = script(tmp_path, GOOD.replace("echo train", "echo two"), "b.slurm")
    kill_at(monkeypatch, "train.switch.repointed")
    with pytest.raises(Killed):
        run_cli("train", "switch", new, "--yes")
    kill_at(monkeypatch, "none")
    result = run_cli("train", "status", "tr")
    assert "switch" in result.stderr and "was done" in result.stderr
    events = json.loads((tmp_path / FOLDER / "train.json").read_text())["events"]
    assert events[-1]["what"] == "switch"
    assert open_intents(tmp_path) == []


def test_a_killed_hold_the_woken_queue_shows_late_is_settled_done_not_failed(
    run_cli: Run,
    cluster: TokenCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    clock: list[float],
) -> None:
    """Settling a young hold intent: the first reads may come before the woken controller
    ran the hold in its backlog; "not held yet" is read again for the window, so the journal
    says done, not "failed, run it again"."""
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    kill_at(monkeypatch, "train.hold.done")
    with pytest.raises(Killed):
        run_cli("train", "hold", "--yes")
    kill_at(monkeypatch, "none")
    clock[0] = 0.0
    cluster.queues = [running_and_pending()] * 2 + [running_and_pending(held=True)]
    result = run_cli("train", "status", "tr")
    assert "was done" in result.stderr and clock[0] == 2.0
    (outcome,) = [e for e in journal(tmp_path) if e["kind"] == "outcome" and e["action"] == "hold"]
    assert outcome["result"] == "done"


def test_killed_after_hold_is_checked_against_the_queue(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    kill_at(monkeypatch, "train.hold.done")
    with pytest.raises(Killed):
        run_cli("train", "hold", "--yes")
    kill_at(monkeypatch, "none")
    cluster.queue = running_and_pending(held=True)
    result = run_cli("train", "status", "tr")
    assert "hold" in result.stderr and "was done" in result.stderr
    (outcome,) = [e for e in journal(tmp_path) if e["kind"] == "outcome" and e["action"] == "hold"]
    assert outcome["result"] == "done"


# ---------------------------------------------------------------- 4. bounded waits


def test_a_held_lock_is_a_bounded_wait_naming_the_holder(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    lock = os.open(tmp_path / FOLDER / ".lock", os.O_RDONLY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        result = run_cli("train", "hold", "--yes", "--lock-wait", "0.3", exit_code=2)
        assert "busy" in result.stderr and "0.3 s" in result.stderr
        assert result.stderr.count("waiting up to 0.3 s") == 1  # one bounded wait, said so
        assert cluster.slurm_calls("scontrol") == []
        # status still answers, and says the open changes wait for the next command
        assert "not checked now" in run_cli("train", "status", "--lock-wait", "0").stderr
        # the kill switch never waits behind it
        result = run_cli("train", "kill-switch", "on", "--yes", "--lock-wait", "0.3")
        assert (tmp_path / FOLDER / "kill-switch").exists()
    finally:
        os.close(lock)


@pytest.mark.parametrize("switch", ["kill-switch", "save-switch"])
def test_a_switch_on_a_hung_controller_is_on_before_slurm_is_asked_anything(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, switch: str
) -> None:
    """The emergency switch never waits for Slurm: an open start on a hung controller is
    settled only after the switch file exists (settling it may take the whole window)."""
    cluster.sbatch_silent = True
    cluster.squeue_down = True
    start(run_cli, tmp_path, exit_code=2)
    assert [e["action"] for e in open_intents(tmp_path)] == ["start"]
    seen: list[bool] = []
    cluster.watch.append(lambda call: seen.append((tmp_path / FOLDER / switch).exists()))
    result = run_cli("train", switch, "on", "--yes")
    assert "created" in result.stdout and (tmp_path / FOLDER / switch).exists()
    assert seen and all(seen)  # squeue was asked (the open start), but only afterwards
    assert "may have queued" in result.stderr  # and the open start was still looked at
    assert [e["action"] for e in open_intents(tmp_path)] == ["start"]


# ---------------------------------------------------------------- 5. answers match what was done


@pytest.mark.parametrize("command", ["switch", "hold"])
def test_a_record_that_fails_after_the_change_is_reported_as_done(
    run_cli: Run,
    cluster: TokenCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    from slurmkit.errors import EnvironmentProblem
    from slurmkit.train.state import TrainDir

    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    new = script(tmp_path, GOOD.replace("echo train", "echo two"), "b.slurm")

    def full(self: TrainDir, state: object) -> None:
        raise EnvironmentProblem(f"cannot write {self.state_file}: No space left on device")

    monkeypatch.setattr(TrainDir, "save", full)
    args = ("switch", new) if command == "switch" else ("hold",)
    result = run_cli("train", *args, "--yes", exit_code=1)
    assert ("pointed" if command == "switch" else "held array 115") in result.stdout
    assert "not recorded" in result.stderr and "Traceback" not in result.stderr
    if command == "switch":
        assert (tmp_path / FOLDER / "current").readlink() == tmp_path / "b.slurm"


def test_no_free_inodes_for_the_switch_link_is_one_line(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    new = script(tmp_path, GOOD.replace("echo train", "echo two"), "b.slurm")

    def no_inode(self: Path, target: object, target_is_directory: bool = False) -> None:
        raise OSError(28, "No space left on device", str(self))

    monkeypatch.setattr(Path, "symlink_to", no_inode)
    result = run_cli("train", "switch", new, "--yes", exit_code=2)
    assert "No space left on device" in result.stderr and "Traceback" not in result.stderr
    assert (tmp_path / FOLDER / "current").readlink() == tmp_path / "a.slurm"


def test_hold_without_an_answer_is_checked_in_the_queue(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    cluster.answers[("scontrol", "hold", "115")] = (1, "", "scontrol: error: Socket timed out\n")

    def held_meanwhile(call: Call) -> _proc.Completed:
        result = cluster._answer(call)
        cluster.queue = running_and_pending(held=True)
        return result

    cluster.slurm.on(["scontrol", "hold", "115"], answer=held_meanwhile)
    result = run_cli("train", "hold", "--yes")
    assert "held array 115" in result.stdout and "no answer" in result.stderr


def only_first_task() -> str:
    return running_and_pending().splitlines(keepends=True)[0]


@pytest.mark.parametrize(
    ("args", "call", "before", "after", "said"),
    [
        (("hold",), ("scontrol", "hold", "115"), running_and_pending(),
         running_and_pending(held=True), "held array 115"),
        (("release",), ("scontrol", "release", "115"), running_and_pending(held=True),
         running_and_pending(), "released array 115"),
        (("stop", "--now"), ("scancel", "115"), running_and_pending(), "", "cancel"),
        (("restart-run",), ("scancel", "115_2"), running_and_pending(), only_first_task(),
         "cancelled run 115_2"),
    ],
)  # fmt: skip
def test_a_change_without_an_answer_the_woken_queue_does_not_show_yet_is_done(
    run_cli: Run,
    cluster: TokenCluster,
    tmp_path: Path,
    clock: list[float],
    args: tuple[str, ...],
    call: tuple[str, ...],
    before: str,
    after: str,
    said: str,
) -> None:
    """hold, release, scancel with no answer: the queue read right after may come before the
    controller ran the request in its backlog; "not done yet" is read again for the window,
    and the answer is the checked one (exit 0), not the timeout."""
    start(run_cli, tmp_path)
    cluster.queue = before
    cluster.answers[call] = (1, "", "slurm_error: Socket timed out on send/recv operation\n")
    plan_reads = len(cluster.slurm_calls("squeue"))
    run_cli("train", *args, "--dry-run")  # the reads the command makes before it acts
    plan_reads = len(cluster.slurm_calls("squeue")) - plan_reads
    cluster.queues = [before] * (plan_reads + 2) + [after]
    result = run_cli("train", *args, "--yes")
    assert said in result.stdout and "no answer from Slurm" in result.stderr
    assert clock[0] == 2.0
    assert open_intents(tmp_path) == []


def test_a_hold_the_queue_never_shows_is_reported_failed_after_the_window(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, clock: list[float]
) -> None:
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    cluster.answers[("scontrol", "hold", "115")] = (1, "", "slurm_error: Socket timed out\n")
    result = run_cli("train", "hold", "--yes", exit_code=2)
    assert "Socket timed out" in result.stderr and clock[0] >= recheck.window() - 1
    (outcome,) = [e for e in journal(tmp_path) if e["kind"] == "outcome" and e["action"] == "hold"]
    assert outcome["result"] == "failed"


# ---------------------------------------------------------------- 6. status tells the truth


def test_a_requeued_run_pending_again_is_counted_once(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    start(run_cli, tmp_path)
    cluster.queue = squeue_row(
        job_id="118", array_job_id="115", array_task_id="2", name="tr", user="root",
        state="PENDING", reason="BeginTime", time_limit="5:00",
    ) + squeue_row(
        job_id="115", array_job_id="115", array_task_id="3-5%1", name="tr", user="root",
        state="PENDING", reason="JobArrayTaskLimit", time_limit="5:00",
    )  # fmt: skip
    cluster.sacct = sacct_row(
        job_id="116", display_id="115_1", state="COMPLETED", exit_code="0:0"
    ) + sacct_row(job_id="118", display_id="115_2", state="NODE_FAIL", exit_code="0:0")
    status = json.loads(run_cli("train", "status", "--json").stdout)
    assert status["failed"] == [] and status["pending"] == 4
    assert [r["id"] for r in status["finished"]] == ["115_1"]


def test_a_requeued_run_inside_the_pending_range_is_counted_once(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    """22.05 lists a run requeued by NODE_FAIL inside the array's pending record,
    ``115_[2-3]``, not as a record of its own (issue 29, item 7): a 3-run train showed
    ``pending 2`` and ``finished 1 (1 failed)``."""
    start(run_cli, tmp_path)
    cluster.queue = squeue_row(
        job_id="115", array_job_id="115", array_task_id="2-3%1", name="tr", user="root",
        state="PENDING", reason="BeginTime", time_limit="5:00",
    )  # fmt: skip
    cluster.sacct = sacct_row(
        job_id="116", display_id="115_1", state="COMPLETED", exit_code="0:0"
    ) + sacct_row(job_id="117", display_id="115_2", state="NODE_FAIL", exit_code="0:0")
    status = json.loads(run_cli("train", "status", "--json").stdout)
    assert status["failed"] == [] and status["pending"] == 2
    assert [r["id"] for r in status["finished"]] == ["115_1"]


def test_status_with_accounting_down_does_not_claim_zero_finished(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    cluster.sacct_down = True
    result = run_cli("train", "status")
    assert "accounting" in result.stderr and "unavailable" in result.stderr
    finished = [line for line in result.stdout.splitlines() if line.startswith("finished")]
    assert finished and "0" not in finished[0].split()[1:2]
    assert "unknown" in finished[0]
    assert "115_2 on node-1" in result.stdout
    status = json.loads(run_cli("train", "status", "--json").stdout)
    assert status["finished"] is None and status["accounting"] == "unavailable"


def test_a_wrapper_that_cannot_be_written_queues_nothing_and_leaves_nothing(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slurmkit.errors import EnvironmentProblem

    def full(path: object, text: str, mode: int | None = None) -> None:
        raise EnvironmentProblem(f"cannot write {path}: No space left on device")

    monkeypatch.setattr("slurmkit.train.submit.write_atomic", full)
    result = start(run_cli, tmp_path, exit_code=2)
    assert "No space left on device" in result.stderr
    assert cluster.slurm_calls("sbatch") == []
    assert not (tmp_path / FOLDER).exists()  # the start's intent was closed as failed
