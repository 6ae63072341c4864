"""Job-array trains on the sandbox: one run at a time, edits picked up, hold/release, --after,
switch refusals, the kill switch, a broken script mid-train.

Runs are 1 node / 1 CPU and wait for a ``go-<task>`` file the test creates, so the test
decides when each run ends instead of guessing durations. Every train has a unique name
and is cancelled in ``finally``.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from slurmkit import _proc, sandbox
from slurmkit.errors import PermissionDenied
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from slurmkit.slurm.records import Job
from tests.integration.conftest import poll, submit

VENV_SLURMKIT = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "slurmkit"


def training_script(work: Path, version: str, *, block: bool = True, broken: bool = False) -> str:
    """A run that records itself, waits for ``go-<task>`` (when ``block``), optionally then
    hits a bash syntax error (bash executes a sourced file up to its first unparsable line)."""
    lines = [
        "#!/bin/bash",
        "#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=1 --time=3",
        f"#SBATCH --output={work}/log-%A_%a.out",
        f'echo "{version} $SLURM_ARRAY_TASK_ID" >> {work}/runs.txt',
    ]
    if block:
        lines.append(
            f"for _ in $(seq 1200); do [[ -e {work}/go-$SLURM_ARRAY_TASK_ID ]] && break; "
            "sleep 0.1; done"
        )
    # In an `if`: the wrapper runs under set -e, where a bare exit 1 would end the run.
    lines.append(
        f"if {VENV_SLURMKIT} train should-stop; then echo should-stop=0; "
        "else echo should-stop=1; fi"
    )
    if broken:
        lines.append("if then fi (")
    return "\n".join(lines) + "\n"


@dataclass
class Train:
    name: str
    work: Path
    run_cli: Callable[..., object]

    @property
    def folder(self) -> Path:
        return self.work / ".slurmkit" / "trains" / self.name

    def record(self) -> dict:
        return json.loads((self.folder / "train.json").read_text())

    @property
    def arrays(self) -> list[str]:
        return [a["job_id"] for a in self.record()["arrays"]]

    def cli(self, *args: str, exit_code: int | None = 0):
        return self.run_cli("train", *args, exit_code=exit_code)

    def status(self) -> dict:
        return json.loads(self.cli("status", self.name, "--json").stdout)

    def queue(self) -> list[Job]:
        return query.jobs(job_ids=self.arrays)

    def running(self) -> list[Job]:
        return [j for j in self.queue() if j.is_running]

    def go(self, task: int) -> None:
        (self.work / f"go-{task}").touch()

    def runs_file(self) -> list[str]:
        path = self.work / "runs.txt"
        return path.read_text().splitlines() if path.exists() else []

    def finished(self) -> dict[str, Job]:
        """Finished runs in accounting by ``<array>_<task>``."""
        jobs = query.sacct_jobs(job_ids=self.arrays)
        return {
            j.display_id: j for j in jobs if j.is_finished and (j.array_task_id or "").isdigit()
        }

    def log(self, array: str, task: int) -> str:
        return (self.work / f"log-{array}_{task}.out").read_text()


@pytest.fixture
def train_factory(
    cluster: sandbox.SandboxSpec, tmp_path: Path, run_cli, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], Train]]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLURMKIT_KILL_SWITCH", raising=False)
    made: list[Train] = []

    def make(label: str) -> Train:
        train = Train(f"sk-train-{label}-{uuid.uuid4().hex[:6]}", tmp_path, run_cli)
        made.append(train)
        return train

    try:
        yield make
    finally:
        for train in made:
            if (train.folder / "train.json").exists():
                run_slurm(["scancel", *train.arrays], check=False)


def start(train: Train, script: Path, runs: int, *extra: str) -> str:
    train.cli("start", str(script), "--runs", str(runs), "--name", train.name, *extra)
    (array,) = train.arrays
    return array


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def wait_running(train: Train, display_id: str, timeout: float = 90) -> None:
    poll(
        lambda: any(j.display_id == display_id for j in train.running()),
        timeout,
        f"{display_id} to run",
    )


def wait_sourced(train: Train, line: str, timeout: float = 90) -> None:
    """Until a run has sourced its script (running alone does not mean it got that far)."""
    poll(lambda: line in train.runs_file(), timeout, f"a run to record {line!r}")


def wait_finished(train: Train, display_id: str, timeout: float = 90) -> Job:
    return poll(lambda: train.finished().get(display_id), timeout, f"{display_id} to finish")  # type: ignore[return-value]


def test_five_runs_one_at_a_time(train_factory: Callable[[str], Train]) -> None:
    train = train_factory("five")
    script = write(train.work / "a.slurm", training_script(train.work, "v1", block=False))
    array = start(train, script, 5)
    seen_running: list[int] = []

    def all_done() -> bool:
        seen_running.append(len(train.running()))
        return len(train.finished()) == 5

    poll(all_done, 180, "5 runs to finish")
    finished = train.finished()
    assert max(seen_running) <= 1
    assert [finished[f"{array}_{i}"].state for i in range(1, 6)] == ["COMPLETED"] * 5
    assert {j.name for j in finished.values()} == {train.name}
    runs = [finished[f"{array}_{i}"] for i in range(1, 6)]
    for before, after in itertools.pairwise(runs):
        assert before.end_time and after.start_time and after.start_time >= before.end_time
    assert train.runs_file() == [f"v1 {i}" for i in range(1, 6)]
    status = train.status()
    assert status["state"] == "finished" and status["failed"] == []
    assert [r["id"] for r in status["finished"]] == [f"{array}_{i}" for i in range(1, 6)]


@pytest.mark.smoke
def test_edit_between_runs_is_picked_up(train_factory: Callable[[str], Train]) -> None:
    train = train_factory("edit")
    script = write(train.work / "a.slurm", training_script(train.work, "v1"))
    array = start(train, script, 3)
    wait_sourced(train, "v1 1")
    write(script, training_script(train.work, "v2"))
    for task in (1, 2, 3):
        train.go(task)
    poll(lambda: len(train.finished()) == 3, 120, "3 runs to finish")
    assert sorted(train.finished()) == [f"{array}_{i}" for i in (1, 2, 3)]
    assert train.runs_file() == ["v1 1", "v2 2", "v2 3"]


def test_hold_release_keeps_submit_time_and_queue_age(
    train_factory: Callable[[str], Train],
) -> None:
    """The seed's promise, checked on the sandbox's multifactor priority (1 point per second
    of queue age): a released train keeps its submit time, its accrue time, and the age it
    had before the hold. The sandbox enforces limits as production clusters do, where Slurm
    restarts AccrueTime at a release (22.05: accrue 04:02:31 -> 04:02:46, priority 1 after
    the release); PriorityFlags=ACCRUE_ALWAYS, set there, keeps it, so `train hold` has no
    queue-age warning to give (its decision: tests/unit/test_train_queue_age.py)."""
    train = train_factory("hold")
    script = write(train.work / "a.slurm", training_script(train.work, "v1"))

    def accruing() -> Job | None:
        job = query.job(array)
        return job if job.is_pending and job.accrue_time is not None else None

    # The array waits in the queue first, so a scheduler pass gives it its AccrueTime. When
    # run 1 started straight away, the runs held back by %1 got none in a full-suite run
    # (still unset after 120 s), and there would be no age to keep.
    blocker = submit("-N4", "--exclusive", "-J", f"{train.name}-blocker", "--wrap", "sleep 300")
    try:
        poll(lambda: query.jobs(job_ids=[blocker])[0].is_running, 180, "the blocker to run")
        array = start(train, script, 3)
        accrued = poll(accruing, 120, "the waiting array to start accruing queue age")
    finally:
        run_slurm(["scancel", blocker])
    assert isinstance(accrued, Job) and accrued.accrue_time is not None
    wait_running(train, f"{array}_1")
    (before,) = [j for j in train.queue() if j.is_pending]
    assert before.submit_time is not None and (before.priority or 0) > 0
    assert query.job(array).accrue_time == accrued.accrue_time  # kept when run 1 split off

    out = train.cli("hold", "--dry-run").stdout
    assert f"would run: scontrol hold {array}" in out
    assert not [j for j in train.queue() if j.held]
    accrue_time = accrued.accrue_time

    def age() -> float:
        return (datetime.now().astimezone() - accrue_time).total_seconds()

    poll(lambda: age() >= 6, 30, "the waiting runs to accrue some queue age")
    age_at_hold = age()
    train.cli("hold", exit_code=1)  # no terminal, no --yes: the one confirm rule
    assert not [j for j in train.queue() if j.held]
    assert "restarts queue age" not in train.cli("hold", "--yes").stderr
    train.cli("hold", "--yes")  # idempotent
    (held,) = [j for j in train.queue() if j.is_pending]
    assert held.held and held.priority == 0
    assert train.status()["state"] == "running, rest held"

    train.go(1)
    wait_finished(train, f"{array}_1")
    # Nothing may start while held: watch the queue for a while (bounded, polled).
    with pytest.raises(pytest.fail.Exception):
        poll(lambda: train.running(), 8, "a held run to start")
    status = train.status()
    assert status["state"] == "held" and status["pending"] == 2 and status["held"]

    held_for = age() - age_at_hold
    train.cli("release", "--yes")
    wait_running(train, f"{array}_2")
    (after,) = [j for j in train.queue() if j.is_pending]
    released = query.job(array)
    print(
        f"hold/release on Slurm {query.version()}: submit {before.submit_time} -> "
        f"{after.submit_time}, accrue {accrued.accrue_time} -> {released.accrue_time}, "
        f"priority {before.priority} -> 0 (held {held_for:.0f} s, age at hold "
        f"{age_at_hold:.0f} s) -> {after.priority}"
    )
    assert after.submit_time == before.submit_time
    assert released.accrue_time == accrued.accrue_time
    # The age from before the hold is all there, the held time too (AccrueTime is kept).
    assert (after.priority or 0) >= int(age_at_hold + held_for) - 2 >= 6
    assert train.status()["pending_priority"] == after.priority
    train.go(2)
    train.go(3)
    poll(lambda: len(train.finished()) == 3, 120, "the rest of the train")
    assert [e["what"] for e in train.record()["events"]] == [
        "start",
        "hold",
        "hold",
        "release",
    ]


def test_hold_by_another_user_is_refused_and_explained(
    train_factory: Callable[[str], Train], cluster: sandbox.SandboxSpec
) -> None:
    train = train_factory("owner")
    script = write(train.work / "a.slurm", training_script(train.work, "v1"))
    array = start(train, script, 3, "--", "--hold")
    argv = ["scontrol", "hold", array]
    env = {**os.environ, "SLURM_CONF": str(cluster.slurm_conf)}
    as_nobody = subprocess.run(
        ["runuser", "-u", "nobody", "--", *argv], capture_output=True, text=True, env=env
    )
    answer = _proc.Completed(
        tuple(argv), as_nobody.returncode, as_nobody.stdout, as_nobody.stderr, 0
    )
    with pytest.raises(PermissionDenied, match="Invalid user id"):
        query.interpret_control(answer)


def test_after_waits_for_the_given_job(train_factory: Callable[[str], Train]) -> None:
    train = train_factory("after")
    blocker_go = train.work / "go-blocker"
    blocker = submit(
        "-N1",
        "-c1",
        "-J",
        f"{train.name}-blocker",
        "-o",
        "/dev/null",
        "--wrap",
        f"for _ in $(seq 1200); do [ -e {blocker_go} ] && break; sleep 0.1; done",  # sh, not bash
    )
    try:
        poll(lambda: query.jobs(job_ids=[blocker])[0].is_running, 60, "the blocker to run")
        script = write(train.work / "a.slurm", training_script(train.work, "v1", block=False))
        array = start(train, script, 2, "--after", blocker)
        poll(lambda: [j.reason for j in train.queue()] == ["Dependency"], 30, "reason Dependency")
        (pending,) = train.queue()
        assert pending.dependency and blocker in pending.dependency
        assert train.record()["arrays"][0]["after"] == blocker
        with pytest.raises(pytest.fail.Exception):
            poll(lambda: train.running() or train.finished(), 5, "a run before the blocker ends")
        blocker_go.touch()
        poll(lambda: len(train.finished()) == 2, 120, "the train after the blocker")
        (done,) = query.sacct_jobs(job_ids=[blocker])
        first = train.finished()[f"{array}_1"]
        assert done.end_time and first.start_time and first.start_time >= done.end_time
    finally:
        run_slurm(["scancel", blocker], check=False)


def test_switch_refuses_a_resource_change(train_factory: Callable[[str], Train]) -> None:
    train = train_factory("switch")
    script = write(train.work / "a.slurm", training_script(train.work, "v1"))
    array = start(train, script, 3, "--", "--hold")  # held from submission: nothing runs
    assert all(j.held for j in train.queue())
    bigger = write(
        train.work / "b.slurm",
        training_script(train.work, "v2").replace("--nodes=1", "--nodes=2"),
    )
    result = train.cli("switch", str(bigger), train.name, exit_code=2)
    assert "-#SBATCH --nodes=1" in result.stderr and "+#SBATCH --nodes=2" in result.stderr
    assert "switch refused" in result.stderr
    assert os.readlink(train.folder / "current") == str(script)
    same = write(train.work / "c.slurm", training_script(train.work, "v3"))
    train.cli("switch", str(same), train.name, exit_code=1)  # no --yes: a dry run
    assert os.readlink(train.folder / "current") == str(script)
    train.cli("switch", str(same), train.name, "--yes")
    assert os.readlink(train.folder / "current") == str(same)
    assert train.status()["next_script"] == str(same)
    out = train.cli("stop", train.name, "--yes").stdout
    assert f"ran: scancel --state=PENDING {array}" in out
    poll(lambda: not train.queue(), 30, "the train to leave the queue")
    assert "already finished" in train.cli("hold", exit_code=2).stderr


def test_kill_switch_burns_through_the_rest(train_factory: Callable[[str], Train]) -> None:
    train = train_factory("kill")
    script = write(train.work / "a.slurm", training_script(train.work, "v1"))
    array = start(train, script, 4)
    wait_sourced(train, "v1 1")
    train.cli("should-stop", exit_code=1)
    train.cli("kill-switch", "on", "--yes")
    train.cli("should-stop", exit_code=0)
    train.go(1)
    poll(lambda: len(train.finished()) == 4, 120, "the remaining runs to exit")
    finished = train.finished()
    assert {j.state for j in finished.values()} == {"COMPLETED"}
    assert train.runs_file() == ["v1 1"]  # only the run already going sourced the script
    assert "should-stop=0" in train.log(array, 1)  # the env var reached the running run
    for task in (2, 3, 4):
        assert "kill switch" in train.log(array, task)
        assert "not training" in train.log(array, task)
    assert train.status()["kill_switch"]["on"] is True
    train.cli("kill-switch", "off", "--yes")
    train.cli("should-stop", exit_code=1)


def test_broken_script_fails_one_run_and_the_train_goes_on(
    train_factory: Callable[[str], Train],
) -> None:
    train = train_factory("broken")
    script = write(train.work / "a.slurm", training_script(train.work, "v1"))
    array = start(train, script, 3)
    wait_sourced(train, "v1 1")
    write(script, training_script(train.work, "v2", broken=True))
    train.go(1)
    wait_running(train, f"{array}_2")
    poll(lambda: "v2 2" in train.runs_file(), 60, "run 2 to source the broken script")
    status = train.status()
    assert status["next_script_error"] and "syntax error" in status["next_script_error"]
    write(script, training_script(train.work, "v3"))  # fixed before run 3 starts
    train.go(2)
    train.go(3)
    poll(lambda: len(train.finished()) == 3, 120, "3 runs to finish")
    finished = train.finished()
    assert finished[f"{array}_2"].state == "FAILED" and finished[f"{array}_2"].exit_code == 2
    assert finished[f"{array}_3"].state == "COMPLETED"
    assert train.runs_file() == ["v1 1", "v2 2", "v3 3"]
    status = train.status()
    assert status["failed"] == [f"{array}_2"]
    text = train.cli("status", train.name).stdout
    assert f"{array}_2 FAILED exit 2" in text


MATE = "sk-trainmate"


def _mate() -> int:
    """A real second user (the teammate); /etc/passwd is shared with the sandbox's nodes."""
    if _proc.run(["getent", "passwd", MATE]).returncode != 0:
        made = _proc.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", MATE])
        assert made.returncode == 0, made.stderr
    return int(_proc.run(["id", "-u", MATE]).stdout)


def test_a_teammate_repointing_current_cannot_run_code_as_the_owner(
    cluster: sandbox.SandboxSpec, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14, finding 7, live: the train folder is shared (the help invites it, for the
    kill switch); a teammate re-points ``current`` at their own script. The next run, which
    runs as the owner (root here), refuses it; ``status`` names who re-pointed it; the
    owner's commands refuse a record the teammate replaced; the teammate's kill switch works."""
    import shutil
    import tempfile

    mate = _mate()
    work = Path(tempfile.mkdtemp(prefix="sk-train-shared-"))
    work.chmod(0o755)  # pytest's tmp_path is 0700: the teammate could not reach the folder
    monkeypatch.chdir(work)
    monkeypatch.delenv("SLURMKIT_KILL_SWITCH", raising=False)
    name = f"sk-train-mate-{uuid.uuid4().hex[:6]}"
    train = Train(name, work, run_cli)
    trains = work / ".slurmkit" / "trains"
    try:
        script = write(work / "a.slurm", training_script(work, "v1"))
        start(train, script, 3)
        trains.chmod(0o777)
        train.folder.chmod(0o777)  # teammates may write it: the kill switch
        wait_sourced(train, "v1 1")

        theirs = work / "mate"
        theirs.mkdir()
        os.chown(theirs, mate, mate)
        pwned = work / "pwned"
        attack = subprocess.run(
            ["runuser", "-u", MATE, "--", "bash", "-c",
             f'printf "#!/bin/bash\\necho pwned > {pwned}\\n" > {theirs}/evil.slurm && '
             f"ln -sfn {theirs}/evil.slurm {train.folder / 'current'}"],
            capture_output=True, text=True,
        )  # fmt: skip
        assert attack.returncode == 0, attack.stderr
        status = train.status()
        assert status["current_changed_by"] == {"uid": mate, "user": MATE}
        assert f"owned by uid {mate}" in (status["next_script_trusted"] or "")
        text = train.cli("status", name).stdout
        assert f"set by {MATE} (uid {mate})" in text and "UNTRUSTED" in text

        # Only run 2 may start: the owner holds the train, then Slurm releases task 2 alone.
        array = train.arrays[0]
        train.cli("hold", name, "--yes")
        train.go(1)
        wait_finished(train, f"{array}_1")
        run_slurm(["scontrol", "release", f"{array}_2"], check=False)
        run2 = wait_finished(train, f"{array}_2")
        assert run2.state == "FAILED" and run2.exit_code == 1
        assert not pwned.exists()
        assert f"evil.slurm belongs to uid {mate}, not to you (uid 0)" in train.log(array, 2)

        # The owner's switch back is checked too, and works; a record the teammate
        # replaced is refused before anything is held, released or cancelled.
        train.cli("switch", str(script), name, "--yes")
        assert train.status()["current_changed_by"] == {"uid": 0, "user": "root"}
        record = train.folder / "train.json"
        fake = subprocess.run(
            ["runuser", "-u", MATE, "--", "bash", "-c",
             f"cp {record} {theirs}/r && mv -f {theirs}/r {record}"],
            capture_output=True, text=True,
        )  # fmt: skip
        assert fake.returncode == 0, fake.stderr
        assert record.stat().st_uid == mate
        refused = train.cli("release", name, "--yes", exit_code=2)
        assert "refusing train record" in refused.stderr and "kill-switch on" in refused.stderr
        assert all(j.held for j in train.queue() if j.is_pending)

        # Stopping is what a teammate may do: their kill switch ends the rest.
        stop = subprocess.run(
            ["runuser", "-u", MATE, "--", "touch", str(train.folder / "kill-switch")],
            capture_output=True, text=True,
        )  # fmt: skip
        assert stop.returncode == 0, stop.stderr
        run_slurm(["scontrol", "release", array], check=False)
        run3 = wait_finished(train, f"{array}_3")
        assert run3.state == "COMPLETED" and "kill switch" in train.log(array, 3)
        assert train.runs_file() == ["v1 1"]
    finally:
        arrays = train.arrays if (train.folder / "train.json").exists() else []
        if arrays:
            run_slurm(["scancel", *arrays], check=False)
        shutil.rmtree(work, ignore_errors=True)
