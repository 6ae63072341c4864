"""Trains survive real faults on the sandbox (issue 22): nothing orphaned, doubled or misreported.

- slurmkit killed with ``-9`` at each faultpoint of start/extend/switch/hold/stop (between
  "Slurm changed" and "recorded"): the next ``train status`` settles it (adopts the array),
  and ``train stop --now --yes`` really leaves nothing of the train in the queue.
- slurmctld hung (SIGSTOP) during ``train start``: sbatch gets no answer, yet the array is
  queued once slurmctld wakes; the start and its retries end with exactly one array.
- the train folder on a small tmpfs, filled (bytes, then inodes) or remounted read-only:
  ``switch`` and ``hold`` refuse before changing anything, and say so truthfully.

Each run waits for a ``go`` file that no test creates, so runs never finish on their own;
every train is cancelled in ``finally``. slurmctld is always resumed (SIGCONT in ``finally``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from slurmkit import _proc, sandbox
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll, recorded_pid, slurmd_pid

VENV = Path(__file__).resolve().parents[2] / ".venv" / "bin"
SLURMKIT = VENV / "slurmkit"


def training_script(work: Path) -> str:
    """One node, one CPU; waits (at most 3 min, its time limit) for a file nobody creates."""
    return (
        "#!/bin/bash\n"
        "#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=1 --time=3\n"
        "#SBATCH --output=/dev/null\n"
        f"for _ in $(seq 1800); do [[ -e {work}/go ]] && break; sleep 0.1; done\n"
    )


@dataclass
class Train:
    name: str
    work: Path
    trains: Path

    @property
    def folder(self) -> Path:
        return self.trains / self.name

    def cli(
        self, *args: str, point: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """``slurmkit train ARGS --dir TRAINS`` as its own process (so it can be killed)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURMKIT_FAULT")}
        if point:
            env["SLURMKIT_FAULT_POINT"] = point
        return subprocess.run(
            [str(SLURMKIT), "train", *args, "--dir", str(self.trains)],
            cwd=self.work,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def ok(self, *args: str) -> subprocess.CompletedProcess[str]:
        result = self.cli(*args)
        assert result.returncode == 0, f"{args}: {result.returncode}\n{result.stderr}"
        return result

    def record(self) -> dict:
        return json.loads((self.folder / "train.json").read_text())

    @property
    def arrays(self) -> list[str]:
        return [a["job_id"] for a in self.record()["arrays"]]

    def in_queue(self) -> list[tuple[str, str, str]]:
        """(array id, state, reason) of every job of the train's name in the queue now."""
        out = run_slurm(["squeue", "--noheader", f"--name={self.name}", "--format=%F|%T|%r"]).stdout
        return [tuple(line.split("|")) for line in out.splitlines() if line.strip()]  # type: ignore[misc]

    def journal_open(self) -> list[str]:
        entries = [json.loads(line) for line in (self.folder / "journal").read_text().splitlines()]
        closed = {e["token"] for e in entries if e["kind"] == "outcome"}
        return [e["action"] for e in entries if e["kind"] == "intent" and e["token"] not in closed]

    def stop_everything(self) -> None:
        """``train stop --now --yes``, then the queue must hold nothing of the train."""
        result = self.cli("stop", self.name, "--now", "--yes")
        assert result.returncode == 0, result.stderr
        poll(lambda: not self.in_queue(), 60, f"nothing of {self.name} in the queue")


@pytest.fixture
def make_train(cluster: sandbox.SandboxSpec, tmp_path: Path) -> Iterator:
    made: list[Train] = []

    def make(label: str, trains: Path | None = None) -> Train:
        name = f"sk-fault-{label}-{uuid.uuid4().hex[:6]}"
        train = Train(name, tmp_path, trains or tmp_path / "trains")
        (tmp_path / "a.slurm").write_text(training_script(tmp_path))
        (tmp_path / "b.slurm").write_text(training_script(tmp_path) + "echo two\n")
        made.append(train)
        return train

    try:
        yield make
    finally:
        for train in made:  # whatever a failed assertion left: cancel by name
            run_slurm(["scancel", f"--name={train.name}"], check=False)


def started(train: Train, runs: int = 3) -> str:
    train.ok("start", str(train.work / "a.slurm"), "--runs", str(runs), "--name", train.name)
    (array,) = train.arrays
    return array


# ---------------------------------------------------------------- kill -9 at each faultpoint


@pytest.mark.parametrize(
    ("command", "point"),
    [
        ("start", "train.start.submitted"),
        ("extend", "train.extend.submitted"),
        ("switch", "train.switch.repointed"),
        ("hold", "train.hold.done"),
        ("release", "train.release.done"),
        ("stop", "train.stop.cancelled"),
        ("restart-run", "train.restart-run.cancelled"),
    ],
)
def test_killed_at_a_faultpoint_is_settled_and_stop_stops_everything(
    make_train, command: str, point: str
) -> None:
    train = make_train(command)
    if command == "start":
        args = ["start", str(train.work / "a.slurm"), "--runs", "3", "--name", train.name]
    else:
        started(train)
        args = {
            "extend": ["extend", train.name, "--runs", "2", "--yes"],
            "switch": ["switch", str(train.work / "b.slurm"), train.name, "--yes"],
            "hold": ["hold", train.name, "--yes"],
            "release": ["release", train.name, "--yes"],
            "stop": ["stop", train.name, "--yes"],
            "restart-run": ["restart-run", train.name, "--yes"],
        }[command]
    if command == "release":
        poll(lambda: [s for _, s, _ in train.in_queue() if s == "PENDING"], 30, "pending runs")
        train.ok("hold", train.name, "--yes")
    if command == "restart-run":
        poll(lambda: _running_task(train), 60, "run 1 to run")
    running = _running_task(train)
    killed = train.cli(*args, point=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert train.journal_open() == [command]  # the intent was written before acting

    status = train.cli("status", train.name, "--json")
    assert status.returncode == 0, status.stderr
    assert f"`train {command}`" in status.stderr  # one line says what was settled
    assert train.journal_open() == []
    queued = {array for array, _, _ in train.in_queue()}
    if command in ("start", "extend"):
        assert "adopted" in status.stderr
        assert queued <= set(train.arrays) and len(train.arrays) == (1 if command == "start" else 2)
        assert len(queued) == len(train.arrays)  # the orphan is in the queue, now in the record
    if command == "switch":
        assert (train.folder / "current").readlink() == train.work / "b.slurm"
        assert train.record()["events"][-1]["what"] == "switch"
    if command == "hold":
        assert train.record()["events"][-1]["what"] == "hold"
        pending = [r for _, s, r in train.in_queue() if s == "PENDING"]
        assert pending and all(r.startswith("JobHeld") for r in pending)  # Admin for root
    if command == "release":
        assert train.record()["events"][-1]["what"] == "release"
        assert not _held(train)
    if command == "restart-run":
        assert train.record()["events"][-1]["what"] == "restart-run"
        assert _running_task(train) != running  # the cancelled run is not running
    if command == "stop":
        assert train.record()["events"][-1]["what"] == "stop"
        assert not [s for _, s, _ in train.in_queue() if s == "PENDING"]
    train.stop_everything()


def _running_task(train: Train) -> str:
    """The train's running task (``ARRAY_N``), or ""."""
    out = run_slurm(
        ["squeue", "--noheader", f"--name={train.name}", "--states=RUNNING", "--format=%i"]
    ).stdout
    return next((line.strip() for line in out.splitlines() if line.strip()), "")


# ---------------------------------------------------------------- a hung slurmctld


def _answers() -> bool:
    return run_slurm(["squeue", "--noheader"], check=False, timeout=30).returncode == 0


def test_a_hung_slurmctld_during_start_leaves_exactly_one_array(
    make_train, cluster: sandbox.SandboxSpec
) -> None:
    """The issue: sbatch timed out, start deleted the folder, the array ran; a retry made two."""
    train = make_train("hung")
    args = ["start", str(train.work / "a.slurm"), "--runs", "2", "--name", train.name]
    pid = recorded_pid(cluster, "slurmctld")  # this version's sandbox, not the default dir
    os.kill(pid, signal.SIGSTOP)
    try:
        took = time.monotonic()
        first = train.cli(*args)
        took, retry_took = time.monotonic() - took, time.monotonic()
        retry = train.cli(*args)  # still hung: must not submit again
        retry_took = time.monotonic() - retry_took
    finally:
        os.kill(pid, signal.SIGCONT)
    print(
        f"hung slurmctld: start exit {first.returncode} after {took:.1f} s, retry exit "
        f"{retry.returncode} after {retry_took:.1f} s"
    )  # fmt: skip  (measured, not asserted)
    poll(_answers, 60, "slurmctld to answer again")
    assert first.returncode == 2 and "Traceback" not in first.stderr
    assert "may have been queued" in first.stderr, first.stderr
    assert (train.folder / "current").is_symlink()  # kept: the array needs it
    assert retry.returncode == 2 and "nothing submitted again" in retry.stderr, retry.stderr
    poll(lambda: train.in_queue(), 60, "the array sbatch got no answer for to be queued")
    again = train.cli(*args)
    assert again.returncode == 0, again.stderr
    assert "already queued" in again.stderr
    arrays = {array for array, _, _ in train.in_queue()}
    assert len(arrays) == 1 and train.arrays == sorted(arrays)
    assert train.journal_open() == []
    train.stop_everything()


def test_slurmctld_woken_while_start_looks_for_its_array_answers_truthfully(
    make_train, cluster: sandbox.SandboxSpec
) -> None:
    """sbatch got no answer; slurmctld wakes while start asks the queue for the token. On
    25.11 a woken slurmctld answered squeue before it ran the sbatch in its backlog, so the
    first "not there" is no proof: start reads again for the window. Either truthful outcome
    is accepted (the request may never have been fully sent), never a silent or a doubled
    one: exit 0 with the one array recorded, or "nothing was queued" with nothing queued."""
    train = make_train("woken")
    args = ["start", str(train.work / "a.slurm"), "--runs", "2", "--name", train.name]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURMKIT_FAULT")}
    err = train.work / "start.err"
    pid = recorded_pid(cluster, "slurmctld")
    os.kill(pid, signal.SIGSTOP)
    try:
        began = time.monotonic()
        with err.open("w") as handle:
            proc = subprocess.Popen(
                [str(SLURMKIT), "train", *args, "--dir", str(train.trains)],
                cwd=train.work, env=env, stdout=subprocess.DEVNULL, stderr=handle,
            )  # fmt: skip
        gave_up = "looking for the array by its token"
        poll(lambda: gave_up in err.read_text() or proc.poll() is not None, 120, "sbatch's timeout")
        assert proc.poll() is None, err.read_text()  # still asking the queue
    finally:
        os.kill(pid, signal.SIGCONT)
    woken = time.monotonic() - began
    proc.wait(timeout=180)
    took = time.monotonic() - began
    text = err.read_text()
    print(
        f"woken slurmctld: start exit {proc.returncode} after {took:.1f} s "
        f"(slurmctld woken at {woken:.1f} s)"
    )  # fmt: skip  (measured, not asserted)
    assert "Traceback" not in text
    poll(_answers, 60, "slurmctld to answer again")
    if proc.returncode == 0:
        assert "queued although sbatch did not answer" in text, text
        (array,) = train.arrays
        assert {a for a, _, _ in train.in_queue()} == {array}
        assert train.journal_open() == []
        train.stop_everything()
    else:
        assert proc.returncode == 2 and "nothing was queued" in text, text
        assert not train.folder.exists() and not train.in_queue()


# ---------------------------------------------------------------- status tells the truth


def _status(train: Train) -> dict:
    result = train.cli("status", train.name, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_requeued_run_is_counted_once_never_failed(make_train) -> None:
    """The issue: a run requeued (its node went down) and pending again was counted both
    failed and pending. ``scontrol requeue`` makes the same records: accounting has the
    first attempt (REQUEUED), the queue has the run again."""
    train = make_train("requeue")
    array = started(train, runs=2)
    poll(lambda: "RUNNING" in {s for _, s, _ in train.in_queue()}, 60, "run 1 to run")
    run_slurm(["scontrol", "requeue", f"{array}_1"])

    def requeued() -> bool:
        out = run_slurm(
            ["sacct", "-D", "-n", "-X", "-P", "-j", f"{array}_1", "-o", "State"], check=False
        ).stdout
        again = run_slurm(["squeue", "-h", "-j", f"{array}_1", "-o", "%T"], check=False).stdout
        return "REQUEUED" in out and bool(again.strip())

    poll(requeued, 60, f"{array}_1 requeued in accounting and back in the queue")
    seen: list[dict] = []

    def counted_once() -> bool:
        """Each run once, none finished yet; read again while the requeued task passes a
        state squeue lists but status counts as neither (seen once with every version's
        session running at once)."""
        seen.append(_status(train))
        running = 1 if seen[-1]["running"] else 0
        return seen[-1]["pending"] + running == 2

    poll(counted_once, 30, "the requeued run counted once, none finished")
    status = seen[-1]
    assert status["failed"] == [], status
    assert f"{array}_1" not in [r["id"] for r in status["finished"]]
    train.stop_everything()


def test_a_run_requeued_by_a_real_node_failure_is_counted_once(
    make_train, cluster: sandbox.SandboxSpec
) -> None:
    """Issue 29, item 7: the node under run 1 stops answering (its slurmd frozen), Slurm
    ends the run NODE_FAIL after SlurmdTimeout and requeues it. For a second or two
    (seen on 22.05) accounting's latest record of the run is NODE_FAIL while squeue lists
    it inside the array's pending record, ``A_[1-3]``, which ``scontrol requeue`` never
    shows. The status is read at once when accounting shows NODE_FAIL, inside that
    window: matched by record id only, the run was counted pending and failed."""
    train = make_train("nodefail")
    array = started(train, runs=3)
    run1 = f"{array}_1"

    def node_of_run_1() -> str:
        out = run_slurm(["squeue", "-h", "-j", run1, "-t", "R", "-o", "%N"], check=False)
        return out.stdout.strip()

    poll(lambda: bool(node_of_run_1()), 60, "run 1 to run")
    node = node_of_run_1()
    slurmd = slurmd_pid(cluster, node)
    seen: list[dict] = []
    os.kill(slurmd, signal.SIGSTOP)
    try:

        def node_failed() -> bool:
            # -D: every attempt. The latest record alone shows NODE_FAIL only until the
            # requeued attempt's record arrives (1-2 s on 22.05; never seen on 24.11, 26.05).
            argv = ["sacct", "-D", "-n", "-X", "-P", "-j", run1, "-o", "State"]
            if "NODE_FAIL" not in run_slurm(argv, check=False).stdout:
                return False
            seen.append(_status(train))
            return True

        poll(node_failed, 120, f"{run1} to end NODE_FAIL on frozen {node}")
    finally:
        os.kill(slurmd, signal.SIGCONT)
    for status in (seen[-1], _status(train)):  # inside the window, then once settled
        assert status["failed"] == [], status
        assert run1 not in [r["id"] for r in status["finished"]], status
        assert status["pending"] + (1 if status["running"] else 0) == 3, status
    train.stop_everything()
    poll(lambda: node_answers(node), 120, f"{node} to answer again once thawed")


def node_answers(node: str) -> bool:
    out = run_slurm(["sinfo", "-h", "-n", node, "-o", "%T"], check=False).stdout.strip()
    return out in ("idle", "mixed", "allocated", "completing")


def test_status_with_slurmdbd_hung_does_not_claim_zero_finished(
    make_train, cluster: sandbox.SandboxSpec
) -> None:
    """The issue: `train status` printed `finished 0` on stdout while slurmdbd was down."""
    train = make_train("dbd")
    started(train, runs=2)
    dbd = recorded_pid(cluster, "slurmdbd")
    os.kill(dbd, signal.SIGSTOP)
    try:
        result = train.cli("status", train.name)
    finally:
        os.kill(dbd, signal.SIGCONT)
    assert result.returncode == 0, result.stderr
    assert "accounting unavailable" in result.stderr and "Traceback" not in result.stderr
    (finished,) = [line for line in result.stdout.splitlines() if line.startswith("finished")]
    assert "unknown" in finished and " 0" not in finished, finished
    train.stop_everything()


# ---------------------------------------------------------------- a full or read-only folder


@contextlib.contextmanager
def small_tmpfs(where: Path, inodes: int = 200) -> Iterator[Path]:
    """A 1 MiB tmpfs at ``where``; unmounted (lazily, whatever happens) at the end."""
    where.mkdir()
    _proc.run(
        [
            "mount",
            "-t",
            "tmpfs",
            "-o",
            f"size=1m,nr_inodes={inodes},mode=0755",
            "tmpfs",
            str(where),
        ],
        timeout=30,
    )
    try:
        assert os.path.ismount(where)
        yield where
    finally:
        _proc.run(["umount", "-l", str(where)], timeout=30)


@contextlib.contextmanager
def train_folder_on_tmpfs(train: Train, inodes: int = 200) -> Iterator[Path]:
    """The started train's folder moved onto a 1 MiB tmpfs at the same path, for this
    test's processes only; unmounted (lazily) at the end.

    The nodes' mount namespaces are private: a tmpfs mounted once the sandbox is up is
    not seen there, so a train started on one has runs that find no ``current`` and fail
    at once. Mounted over a started train's folder (its files copied in), the nodes keep
    seeing the folder as it was and the runs go on, while slurmkit here writes to a file
    system the test can fill.
    """
    saved = train.work / f"{train.name}.saved"
    shutil.copytree(train.folder, saved, symlinks=True)
    options = f"size=1m,nr_inodes={inodes},mode=0755"
    _proc.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(train.folder)], timeout=30)
    try:
        assert os.path.ismount(train.folder)
        _proc.run(["cp", "-a", f"{saved}/.", str(train.folder)], timeout=30)
        yield train.folder
    finally:
        _proc.run(["umount", "-l", str(train.folder)], timeout=30)


def _fill_bytes(folder: Path) -> Path:
    filler = folder / "filler"
    with filler.open("wb") as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 65536)
            handle.flush()
    return filler


def _fill_inodes(folder: Path) -> list[Path]:
    made = []
    for i in range(10_000):
        path = folder / f"i{i}"
        try:
            path.touch()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
            return made
        made.append(path)
    pytest.fail("the tmpfs never ran out of inodes")


def _held(train: Train) -> bool:
    return any(r.startswith("JobHeld") for _, s, r in train.in_queue() if s == "PENDING")


@pytest.mark.parametrize("fault", ["full", "no-inodes", "read-only"])
def test_on_a_full_or_read_only_folder_switch_changes_nothing_and_hold_and_stop_act(
    make_train, fault: str
) -> None:
    """A switch refuses before changing anything. A hold and a stop act all the same
    (issue 29: stopping always works), exit 1 and say what could not be written."""
    train = make_train(fault)
    started(train)
    poll(lambda: [s for _, s, _ in train.in_queue() if s == "PENDING"], 30, "pending runs")
    with train_folder_on_tmpfs(train) as mnt:
        try:
            before = (train.folder / "current").readlink()
            record = (train.folder / "train.json").read_bytes()
            filled: list[Path] = []
            if fault == "full":
                filled = [_fill_bytes(mnt)]
            elif fault == "no-inodes":
                filled = _fill_inodes(mnt)
            else:
                _proc.run(["mount", "-o", "remount,ro", str(mnt)], timeout=30)
            try:
                switch = train.cli("switch", str(train.work / "b.slurm"), train.name, "--yes")
                hold = train.cli("hold", train.name, "--yes")
                held = _held(train)
                stop = train.cli("stop", train.name, "--now", "--yes")
            finally:
                if fault == "read-only":
                    _proc.run(["mount", "-o", "remount,rw", str(mnt)], timeout=30)
                for path in filled:
                    path.unlink()
            assert switch.returncode == 2, switch.stderr
            assert "nothing was done" in switch.stderr and "Traceback" not in switch.stderr
            assert len(switch.stderr.strip().splitlines()) == 1, switch.stderr
            assert (train.folder / "current").readlink() == before  # not repointed
            for result in (hold, stop):
                assert result.returncode == 1, result.stderr
                assert "not recorded" in result.stderr and "Traceback" not in result.stderr
            assert held
            poll(lambda: not train.in_queue(), 60, f"nothing of {train.name} in the queue")
            assert (train.folder / "train.json").read_bytes() == record
            # with room again, the next command settles what could not be recorded
            status = train.cli("status", train.name)
            assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
            assert train.journal_open() == []
        finally:
            train.stop_everything()


# ------------------------------------------------------- another project's train (issue 29)


def test_another_folders_train_of_the_same_name_is_never_adopted_nor_stopped(make_train) -> None:
    """Issue 29, item 1: project A's `train start` is killed after its intent, before
    sbatch; project B, in another folder, starts a train of the same name. A minute later
    (past squeue-only settling: accounting is asked too, and the sandbox, like Slurm's
    default, stores no job comments) A's `status` adopted B's array by its name, and A's
    `stop --now --yes` cancelled it. B's array carries B's token (squeue's comment,
    accounting's submit line): A must leave it alone."""
    a = make_train("twin")
    b = Train(a.name, a.work / "b-project", a.work / "b-project" / "trains")
    b.work.mkdir()
    (b.work / "a.slurm").write_text(training_script(a.work))
    killed = a.cli(
        "start", str(a.work / "a.slurm"), "--runs", "2", "--name", a.name,
        point="train.start.before-sbatch",
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    intent_at = time.monotonic()
    assert a.journal_open() == ["start"] and not a.in_queue()  # nothing was queued
    theirs = started(b, runs=2)
    remembered = 60.0  # reconcile.SQUEUE_REMEMBERS: younger intents ask squeue only
    time.sleep(max(0.0, intent_at + remembered + 2 - time.monotonic()))
    before = {array: state for array, state, _ in b.in_queue()}

    status = a.cli("status", a.name)
    assert "adopted" not in status.stderr, status.stderr
    assert "queued nothing" in status.stderr and "Traceback" not in status.stderr
    assert not (a.folder / "train.json").exists() and a.journal_open() == []
    stop = a.cli("stop", a.name, "--now", "--yes")
    assert stop.returncode == 2 and "never started" in stop.stderr, stop.stderr
    assert b.arrays == [theirs]
    after = {array: state for array, state, _ in b.in_queue()}
    assert theirs in after and after[theirs] in ("PENDING", "RUNNING"), (before, after)
    b.stop_everything()


# ------------------------------------------------------- two commands racing (issue 29)


def _slow_squeue(folder: Path, seconds: float = 2.0) -> dict[str, str]:
    """The environment of a client whose squeue answers ``seconds`` late, as on a busy
    controller: a script on PATH that sleeps, then runs the real squeue."""
    real = shutil.which("squeue")
    assert real, "no squeue on PATH"
    folder.mkdir()
    shim = folder / "squeue"
    shim.write_text(f'#!/bin/sh\nsleep {seconds}\nexec {shlex.quote(real)} "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURMKIT_FAULT")}
    env["PATH"] = f"{folder}:{env.get('PATH', '')}"
    return env


def test_two_extends_at_once_with_a_slow_squeue_chain_their_arrays(make_train) -> None:
    """Issue 29, item 2: with squeue answering 2 s late, two `train extend --runs 1` at
    once both read the queue before taking the train's lock and queued two arrays waiting
    on the same one (both ran the training at the same second). Planned under the lock,
    the second waits for the first and queues its array after the first one's.
    (--lock-wait 30: the first holds the lock for one slow squeue and its sbatch.)"""
    train = make_train("race")
    first = started(train, runs=1)
    env = _slow_squeue(train.work / "slow-bin")
    argv = [str(SLURMKIT), "train", "extend", train.name, "--runs", "1", "--yes",
            "--lock-wait", "30", "--dir", str(train.trains)]  # fmt: skip
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    procs = [subprocess.Popen(argv, cwd=train.work, env=env, text=True, **pipes) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
    arrays = train.record()["arrays"]
    assert arrays[0]["job_id"] == first and len(arrays) == 3
    afters = [a["after"] for a in arrays[1:]]
    assert afters == [first, arrays[1]["job_id"]], arrays  # chained, not both after `first`
    out = run_slurm(
        ["squeue", "-h", "-j", ",".join(a["job_id"] for a in arrays[1:]), "-o", "%F|%E"]
    ).stdout
    waits = {
        array: re.findall(r"afterany:(\d+)", dependency)
        for array, _, dependency in (line.partition("|") for line in out.splitlines())
    }
    assert waits == {arrays[1]["job_id"]: [first], arrays[2]["job_id"]: [arrays[1]["job_id"]]}
    train.stop_everything()


# ------------------------------------------------------- a torn journal, a full disk (issue 29)


def _leave_in_last_page(journal: Path, room: int) -> None:
    """Pad the journal with blank lines (readers skip them) so ``room`` bytes remain in its
    last page: a longer record needs a page a full tmpfs no longer has (a short write)."""
    page = os.statvfs(journal.parent).f_frsize
    with journal.open("ab") as handle:
        handle.write(b"\n" * ((-journal.stat().st_size - room) % page))


def _leave_free(mnt: Path, free: int) -> Path:
    """Fill the tmpfs at ``mnt`` but ``free`` bytes (0: to the last page); the filler."""
    filler = mnt / "filler"
    st = os.statvfs(mnt)
    size = max(0, st.f_bavail * st.f_frsize - free)
    with filler.open("wb", buffering=0) as handle, contextlib.suppress(OSError):
        handle.write(b"\0" * size)
        while not free:  # to the very last page
            handle.write(b"\0" * 4096)
    return filler


def _open_intents(train: Train) -> list[str]:
    """The train's open intents, as slurmkit reads them (torn lines skipped)."""
    from slurmkit.journal import Journal

    return [e.action for e in Journal(train.folder / "journal").open_intents()]


def _filling(program: str, folder: Path, mnt: Path) -> tuple[dict[str, str], Path]:
    """(environment, marker): ``program`` on PATH fills the tmpfs at ``mnt`` to the last
    page, then runs the real client, once (while the marker exists): the disk fills between
    the command's Slurm call and its record, as under a training writing checkpoints."""
    real = shutil.which(program)
    assert real, f"no {program} on PATH"
    folder.mkdir()
    marker = folder / "fill-once"
    marker.touch()
    shim = folder / program
    shim.write_text(
        "#!/bin/sh\n"
        f"if rm {shlex.quote(str(marker))} 2>/dev/null && mountpoint -q {shlex.quote(str(mnt))}"
        f"; then dd if=/dev/zero of={shlex.quote(str(mnt / 'filler'))} bs=4096 2>/dev/null; fi\n"
        f'exec {shlex.quote(real)} "$@"\n'
    )
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURMKIT_FAULT")}
    env["PATH"] = f"{folder}:{env.get('PATH', '')}"
    return env, marker


def test_a_torn_line_never_swallows_the_next_intent_and_a_short_write_is_cut_back(
    make_train,
) -> None:
    """Issue 29, item 3. A crash mid-append leaves a fragment without a newline (the
    issue's `action=resum`); the next record, the intent of a `train extend` killed after
    its sbatch, was glued to it and lost: the extension's array was never adopted. Then a
    real short write: the kill switch's intent on a tmpfs full but 40 bytes of the
    journal's last page, cut back (the switch goes on, "not journaled")."""
    train = make_train("torn")
    started(train)
    with train_folder_on_tmpfs(train) as mnt:
        try:
            journal = train.folder / "journal"
            with journal.open("ab") as handle:
                handle.write(b'{"action":"resum')  # what a crash mid-append leaves
            killed = train.cli(
                "extend", train.name, "--runs", "1", "--yes", point="train.extend.submitted"
            )
            assert killed.returncode == -signal.SIGKILL, killed.stderr
            status = train.cli("status", train.name)
            assert status.returncode == 0, status.stderr
            assert "adopted" in status.stderr, status.stderr  # the extension's array
            assert len(train.arrays) == 2 and _open_intents(train) == []
            assert f"{journal}:3:" in status.stderr  # the fragment, named by file and line
            assert "intent may be missing" in status.stderr

            _leave_in_last_page(journal, 40)
            before = journal.read_bytes()
            filler = _leave_free(mnt, 0)
            switch = train.cli("kill-switch", "on", train.name, "--yes")
            filler.unlink()
            assert switch.returncode == 0, switch.stderr
            assert (train.folder / "kill-switch").exists()
            assert "not journaled" in switch.stderr and "Traceback" not in switch.stderr
            assert journal.read_bytes() == before  # the 40 bytes written were cut back
        finally:
            train.stop_everything()


def test_with_40_kb_free_the_kill_switch_and_stop_act(make_train) -> None:
    """Issue 29, item 6: the journal's check asked for 64 KB free; with 40 KB left on the
    train folder's file system (a training filling it with checkpoints) the kill switch
    and `stop --now --yes` said "no space left; nothing was done", and the runs went on."""
    train = make_train("room")
    started(train)
    poll(lambda: [s for _, s, _ in train.in_queue() if s == "PENDING"], 30, "pending runs")
    with train_folder_on_tmpfs(train) as mnt:
        try:
            filler = _leave_free(mnt, 40 * 1024)
            try:
                switch = train.cli("kill-switch", "on", train.name, "--yes")
                stop = train.cli("stop", train.name, "--now", "--yes")
            finally:
                filler.unlink()
            assert switch.returncode == 0, switch.stderr
            assert (train.folder / "kill-switch").exists()
            assert stop.returncode == 0, stop.stderr
            poll(lambda: not train.in_queue(), 60, f"nothing of {train.name} in the queue")
            assert train.journal_open() == []  # journaled: there was room for it
            assert train.record()["events"][-1]["what"] == "stop"
        finally:
            train.stop_everything()


def test_a_restart_whose_record_fails_is_recorded_by_the_next_command(
    make_train, tmp_path: Path
) -> None:
    """Issue 29, a lesser one: the disk fills between restart-run's scancel and its
    record. The intent was closed all the same (the journal's last page had room), so
    `train.json` never got the event. It stays open now, and `status` records it."""
    train = make_train("restart")
    started(train)
    poll(lambda: _running_task(train), 60, "run 1 to run")
    running = _running_task(train)
    with train_folder_on_tmpfs(train) as mnt:
        try:
            env, marker = _filling("scancel", tmp_path / "filling-bin", mnt)
            argv = [str(SLURMKIT), "train", "restart-run", train.name, "--yes",
                    "--dir", str(train.trains)]  # fmt: skip
            restart = subprocess.run(
                argv, cwd=train.work, env=env, capture_output=True, text=True, timeout=120
            )
            assert not marker.exists(), restart.stderr  # the shim filled the disk
            with contextlib.suppress(FileNotFoundError):
                (mnt / "filler").unlink()
            assert restart.returncode == 1, restart.stderr
            assert "not recorded" in restart.stderr and "Traceback" not in restart.stderr
            assert train.journal_open() == ["restart-run"]
            poll(lambda: _running_task(train) != running, 60, f"{running} to end")
            status = train.cli("status", train.name)
            assert status.returncode == 0, status.stderr
            assert "now recorded" in status.stderr, status.stderr
            assert train.record()["events"][-1]["what"] == "restart-run"
            assert train.journal_open() == []
        finally:
            train.stop_everything()
