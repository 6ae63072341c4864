"""The Slurm layer's job wait: final state, deadline reported not acted on, one call a poll."""

from __future__ import annotations

from slurmkit.slurm import wait
from slurmkit.slurm.parse_text import DELIMITER, SQUEUE_COLUMNS
from slurmkit.slurm.records import Job
from tests.fakes import FakeSlurm


def _script(*states: str | None):
    """A reader answering the given states in turn (None: the queue forgot the job)."""
    answers = list(states)
    seen: list[str] = []

    def read(job_id: str) -> Job | None:
        seen.append(job_id)
        state = answers.pop(0) if len(answers) > 1 else answers[0]
        if state is None:
            return None
        return Job(job_id=job_id, state=state, nodelist="" if state == "PENDING" else "node-1")

    return read, seen


def test_waits_until_the_job_is_finished_and_reports_progress() -> None:
    read, seen = _script("PENDING", "RUNNING", "COMPLETED")
    lines: list[str] = []
    watched = wait.until_final("7", 30, lines.append, poll=0.01, first_poll=0.01, read=read)
    assert not watched.deadline and watched.started
    assert watched.row is not None and watched.row.state == "COMPLETED"
    assert watched.nodelist == "node-1"
    assert seen == ["7", "7", "7"]  # one read a poll
    assert lines[0].startswith("slurmkit: job 7 PENDING") and "RUNNING on node-1" in lines[1]


def test_the_deadline_is_reported_and_nothing_is_cancelled() -> None:
    read, _ = _script("PENDING")
    watched = wait.until_final("8", 0.0, read=read)
    assert watched.deadline and not watched.started
    assert watched.row is not None and watched.row.is_pending


def test_a_job_the_queue_forgot_ends_the_wait() -> None:
    read, _ = _script(None)
    watched = wait.until_final("9", 30, read=read)
    assert watched.row is None and not watched.deadline


def test_one_squeue_call_per_poll_and_sacct_for_the_final_state(fake_slurm: FakeSlurm) -> None:
    values = {"job_id": "12", "state": "RUNNING", "nodelist": "node-2"}
    row = [values.get(name, "N/A") for name, _ in SQUEUE_COLUMNS]
    fake_slurm.answers("squeue **", DELIMITER.join(row) + "\n", "")
    fake_slurm.on("sacct **", "")
    watched = wait.until_final("12", 30, poll=0.01, first_poll=0.01)
    assert watched.row is None
    assert fake_slurm.count("squeue") == 2
    assert wait.final_state("12", watched.row) == ("UNKNOWN", "")
    assert fake_slurm.count("sacct") == 1
