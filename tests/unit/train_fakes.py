"""The fake train cluster the train tests share: slurmctld under a train, played for the one
fake Slurm (``tests/fakes``), and the fixture that sets it up in a test's own folder.

``cluster_fixture(kind)`` makes the ``cluster`` fixture of a test module from the cluster
class it needs (the plain one, the one with tokens and a hanging controller, or one
with accounting), so the setting up is written once.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from slurmkit import _proc
from slurmkit.slurm.parse_text import DELIMITER, SACCT_COLUMNS, SQUEUE_COLUMNS
from tests.fakes import Call, FakeSlurm

GOOD = "#!/bin/bash\n#SBATCH --nodes=1 -c1 --time=5\necho train\n"


def squeue_row(**values: str) -> str:
    return DELIMITER.join(values.get(name, "N/A") for name, _ in SQUEUE_COLUMNS) + "\n"


def sacct_row(**values: str) -> str:
    return DELIMITER.join(values.get(name, "") for name, _ in SACCT_COLUMNS) + "\n"


def running_and_pending(array: str = "115", user: str = "root", held: bool = False) -> str:
    reason = "JobHeldUser" if held else "JobArrayTaskLimit"
    return squeue_row(
        job_id=array,
        array_job_id=array,
        array_task_id="3-5%1",
        name="tr",
        user=user,
        state="PENDING",
        reason=reason,
        time_limit="5:00",
        priority="0" if held else "1234",
    ) + squeue_row(
        job_id="118",
        array_job_id=array,
        array_task_id="2",
        name="tr",
        user=user,
        state="RUNNING",
        reason="None",
        nodelist="node-1",
        start_time="2026-11-21T01:00:00",
        time_limit="5:00",
        time_used="1:10",
    )


class TrainCluster:
    """slurmctld under a train, played for the shared fake Slurm (its one route): a queue of
    squeue rows, sacct rows, and scripted answers for the control commands. ``bash -n`` (the
    syntax check before a submission) really runs."""

    def __init__(self, slurm: FakeSlurm) -> None:
        self.slurm = slurm
        self.queue = ""
        self.sacct = ""
        self.config = ""  # `scontrol show config` (train hold reads it once)
        self.next_ids = ["115", "130", "140"]
        self.answers: dict[tuple[str, ...], tuple[int, str, str]] = {}
        slurm.on(["**"], answer=self._answer)
        slurm.run_really(["bash", "-n", "**"])

    @property
    def calls(self) -> list[tuple[str, ...]]:
        """The Slurm calls (the ``bash -n`` checks left out)."""
        return [c for c in self.slurm.calls if c[0] != "bash"]

    @property
    def inputs(self) -> list[str]:
        """What sbatch read on stdin, call by call."""
        return [c.input for c in self.slurm.log if c.program == "sbatch" and c.input is not None]

    def slurm_calls(self, program: str) -> list[tuple[str, ...]]:
        return [c for c in self.calls if c[0] == program]

    def _answer(self, call: Call) -> _proc.Completed:
        key = call.argv
        program = key[0]
        answer = self.answers.get(key) or self.answers.get((program,))
        if answer is not None:
            rc, out, err = answer
            return _proc.Completed(key, rc, out, err, 0.0)
        if program == "sbatch":
            return _proc.Completed(key, 0, self.next_ids.pop(0) + "\n", "", 0.0)
        if program == "squeue" and "--start" in key:
            pending = "".join(
                line + "\n"
                for line in self.queue.splitlines()
                if "PENDING" in line.split(DELIMITER)
            )
            return _proc.Completed(key, 0, pending, "", 0.0)
        if program == "squeue":
            return _proc.Completed(key, 0, self.queue, "", 0.0)
        if program == "sacct":
            return _proc.Completed(key, 0, self.sacct, "", 0.0)
        if key == ("scontrol", "show", "config"):
            return _proc.Completed(key, 0, self.config, "", 0.0)
        if key[:2] in (("scontrol", "hold"), ("scontrol", "release")) or program == "scancel":
            return _proc.Completed(key, 0, "", "", 0.0)
        raise AssertionError(f"unexpected command: {shlex.join(key)}")


Run = Callable[..., object]


def script(tmp_path: Path, text: str = GOOD, name: str = "a.slurm") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def started(run_cli: Run, tmp_path: Path, *extra: str) -> Path:
    run_cli("train", "start", script(tmp_path), "--runs", "5", "--name", "tr", *extra)
    return tmp_path / ".slurmkit" / "trains" / "tr"


class Killed(BaseException):
    """Stands for ``kill -9`` at a faultpoint: nothing after it runs, no cleanup is owed."""


class TokenCluster(TrainCluster):
    """The train cluster, plus jobs found by their ``--comment`` and a controller that hangs."""

    def __init__(self, slurm: FakeSlurm) -> None:
        super().__init__(slurm)
        self.commented: list[tuple[str, str]] = []  # (array id, comment)
        self.sbatch_silent = False  # sbatch gets no answer, but the array is queued
        self.sbatch_lost = False  # sbatch gets no answer, and nothing is queued
        self.squeue_down = False
        self.sacct_down = False
        # slurmctld woken from SIGSTOP answers this many squeues before it runs the sbatch
        # still in its backlog: the last submission is not shown to them (seen on 25.11)
        self.backlog = 0
        # the queue squeue shows, one per read (the last stays): a change in the backlog
        self.queues: list[str] = []
        self.watch: list[Callable[[Call], None]] = []  # called with every Slurm call

    def _answer(self, call: Call) -> _proc.Completed:
        for watch in self.watch:
            watch(call)
        key = call.argv
        program = key[0]
        silent = _proc.Completed(key, -9, "", "", 60.0, timed_out=True)
        if program == "squeue" and self.squeue_down:
            return silent
        if program == "squeue" and self.queues and not any("%k" in w for w in key):
            self.queue = self.queues.pop(0)
        if program == "sacct" and self.sacct_down:
            return _proc.Completed(key, 1, "", "sacct: error: Problem talking to the database\n", 0)
        if program == "squeue" and any("%k" in word for word in key):
            shown = self.commented[:-1] if self.backlog > 0 else self.commented
            self.backlog = max(0, self.backlog - 1)
            rows = "".join(
                DELIMITER.join([job, job, "tr", "PENDING", comment]) + "\n"
                for job, comment in shown
            )
            return _proc.Completed(key, 0, rows, "", 0.0)
        if program == "sacct" and any("Comment" in word for word in key):
            return _proc.Completed(key, 0, "", "", 0.0)
        if program == "sbatch" and key not in self.answers and (program,) not in self.answers:
            comment = next(w.split("=", 1)[1] for w in key if w.startswith("--comment="))
            if self.sbatch_lost:
                return silent
            result = super()._answer(call)
            self.commented.append((result.stdout.strip(), comment))
            return silent if self.sbatch_silent else result
        return super()._answer(call)


def cluster_fixture(kind: type[TrainCluster]) -> Callable[..., Iterator[TrainCluster]]:
    """The ``cluster`` fixture for ``kind``: the fake in the test's folder, no kill switch set."""

    @pytest.fixture(name="cluster")
    def cluster(
        fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> Iterator[TrainCluster]:
        fake = kind(fake_slurm)
        monkeypatch.chdir(tmp_path)
        monkeypatch.delenv("SLURMKIT_KILL_SWITCH", raising=False)
        yield fake

    return cluster
