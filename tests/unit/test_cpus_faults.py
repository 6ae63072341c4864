"""``cpus check`` (and the check job behind ``faulty scan``) on a controller that does not
answer (issue 22): a job that sits in the queue is found and named, never hidden behind a
plain failure. Each test failed before its fix."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from slurmkit.slurm import recheck
from tests.fakes import FakeSlurm
from tests.unit.test_cpus_check import LOG_22_05
from tests.unit.test_faulty_scan import CheckJobCluster

SBATCH_TIMED_OUT = (
    "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n"
)
SQUEUE_TIMED_OUT = "squeue: error: slurm_receive_msg: Socket timed out on send/recv operation\n"


class HungSlurm(CheckJobCluster):
    """sbatch queues the job but answers with a timeout; squeue is silent ``silent_polls``."""

    silent_sbatch: bool = True
    silent_polls: int = 0
    silent_from_poll: int = 0

    def _answer(self, argv: list[str]) -> tuple[int, str, str]:
        if argv[0] == "sbatch" and self.silent_sbatch:
            super()._answer(argv)
            return 1, "", SBATCH_TIMED_OUT
        if argv[0] == "squeue":
            polls = sum(1 for c in self.calls if c[0] == "squeue")
            if polls > self.silent_from_poll and self.silent_polls > 0:
                self.silent_polls -= 1
                return 1, "", SQUEUE_TIMED_OUT
        return super()._answer(argv)


@pytest.fixture
def slurm(fake_slurm: FakeSlurm, monkeypatch, tmp_path) -> Iterator[HungSlurm]:
    fake = HungSlurm(fake_slurm, log_lines=LOG_22_05.splitlines())
    monkeypatch.setattr(recheck, "_PAUSE", 0.0)
    monkeypatch.setattr(recheck, "window", lambda env=None: 0.0)
    monkeypatch.chdir(tmp_path)
    yield fake


def test_a_timed_out_sbatch_whose_job_was_queued_goes_on_with_that_job(run_cli, slurm) -> None:
    result = run_cli("cpus", "check", "--dir", "work", "-c", "2", exit_code=1)
    assert "Slurm 22.05.8: affected" in result.stdout
    assert "sbatch got no answer, but job 42" in result.stderr
    (sbatch,) = slurm.slurm_calls("sbatch")
    assert any(a.startswith("--comment=slurmkit:") for a in sbatch)
    lookup = next(c for c in slurm.calls if c[0] == "squeue")
    assert any(a.startswith("--name=slurmkit-cpus-") for a in lookup)


def test_no_answer_at_all_names_the_job_to_look_for(run_cli, slurm) -> None:
    slurm.silent_polls = 100
    result = run_cli("cpus", "check", "--dir", "work", "-c", "2", exit_code=2)
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert line.startswith("slurmkit: sbatch of check job slurmkit-cpus-")
    assert "may be queued" in line and "squeue --name=slurmkit-cpus-" in line
    assert "scancel --name=slurmkit-cpus-" in line and "Traceback" not in result.stderr


def test_a_controller_that_hangs_while_the_job_runs_cancels_it_and_says_so(run_cli, slurm) -> None:
    slurm.silent_sbatch = False
    slurm.silent_from_poll = 1
    slurm.silent_polls = 100
    result = run_cli("cpus", "check", "--dir", "work", "-c", "2", exit_code=2)
    last = result.stderr.strip().splitlines()[-1]
    assert "job 42" in last and "cancel" in last
    assert slurm.slurm_calls("scancel")  # it was asked to leave the queue


class BackloggedSlurm(HungSlurm):
    """slurmctld, woken, answers the queue before it runs the sbatch still in its backlog:
    the first ``empty_lookups`` squeue calls do not list the job yet."""

    empty_lookups: int = 0

    def _answer(self, argv: list[str]) -> tuple[int, str, str]:
        if argv[0] == "squeue" and self.empty_lookups > 0:
            self.empty_lookups -= 1
            return 0, "", ""
        return super()._answer(argv)


@pytest.fixture
def backlogged(fake_slurm: FakeSlurm, monkeypatch, tmp_path) -> Iterator[BackloggedSlurm]:
    fake = BackloggedSlurm(fake_slurm, log_lines=LOG_22_05.splitlines())
    monkeypatch.setattr(recheck, "_PAUSE", 0.0)
    # no pause: many reads in the window
    monkeypatch.setattr(recheck, "window", lambda env=None: 5.0)
    monkeypatch.chdir(tmp_path)
    yield fake


def test_a_job_not_listed_at_the_first_read_is_looked_for_the_whole_window(
    run_cli, backlogged
) -> None:
    """Seen with cron on 25.11: the first answer after a silent sbatch may predate it."""
    backlogged.empty_lookups = 2
    result = run_cli("cpus", "check", "--dir", "work", "-c", "2", exit_code=1)
    assert "sbatch got no answer, but job 42" in result.stderr
    assert not backlogged.slurm_calls("scancel")


def test_a_job_never_listed_is_removed_by_name_in_case_it_queues_late(
    run_cli, backlogged, monkeypatch
) -> None:
    monkeypatch.setattr(recheck, "window", lambda env=None: 0.0)
    backlogged.empty_lookups = 100
    result = run_cli("cpus", "check", "--dir", "work", "-c", "2", exit_code=2)
    last = result.stderr.strip().splitlines()[-1]
    assert "nothing was submitted" in last and "Traceback" not in result.stderr
    (scancel,) = backlogged.slurm_calls("scancel")
    assert any(a.startswith("--name=slurmkit-cpus-") for a in scancel)
