"""``watch job`` quotes ``why``'s headline when the watched job ended badly (issue 31)."""

from __future__ import annotations

import pytest

from slurmkit.slurm import query
from slurmkit.slurm.parse_text import DELIMITER, SQUEUE_COLUMNS
from slurmkit.watch import job as watch_job
from slurmkit.watch.job import OwnJob, check_job
from tests.fakes.slurm import FakeSlurm

NOBODY = OwnJob()


def row(**values: str) -> str:
    return DELIMITER.join(values.get(c, "N/A") for c, _ in SQUEUE_COLUMNS) + "\n"


def _queue(fake: FakeSlurm, *ended: str) -> None:
    fake.on(query.squeue_argv(user="u", name="train"), "")
    fake.on(query.squeue_argv(user="u", name="train", states="all"), "".join(ended))


def test_a_job_that_ended_badly_is_named_with_whys_headline(fake_slurm: FakeSlurm) -> None:
    _queue(
        fake_slurm,
        row(job_id="57", name="train", user="u", state="COMPLETED", end_time="2026-11-29T00:10:00"),
        row(job_id="58", name="train", user="u", state="TIMEOUT", end_time="2026-11-29T01:10:00"),
    )
    asked: list[str] = []

    def why(job_id: str) -> str:
        asked.append(job_id)
        return f"job {job_id} timed out after 1:00:00 (its limit)"

    finding = check_job("train", "u", NOBODY, explain=why)
    assert not finding.healthy
    assert finding.message == (
        "no job named train of user u is running or queued; "
        "last: job 58 timed out after 1:00:00 (its limit)"
    )
    assert finding.details["verdict"] == "job 58 timed out after 1:00:00 (its limit)"
    assert asked == ["58"]
    assert len(fake_slurm.calls) == 2


def test_a_job_that_completed_adds_nothing(fake_slurm: FakeSlurm) -> None:
    _queue(fake_slurm, row(job_id="57", name="train", user="u", state="COMPLETED"))

    def never(job_id: str) -> str:
        raise AssertionError("asked why of a completed job")

    finding = check_job("train", "u", NOBODY, explain=never)
    assert finding.message == "no job named train of user u is running or queued"


def test_without_a_verdict_the_state_is_said(fake_slurm: FakeSlurm) -> None:
    _queue(fake_slurm, row(job_id="58", name="train", user="u", state="OUT_OF_MEMORY"))
    finding = check_job("train", "u", NOBODY, explain=lambda job_id: "")
    assert finding.message.endswith("; last: job 58 ended OUT_OF_MEMORY")


def test_a_running_job_asks_nothing_more(fake_slurm: FakeSlurm) -> None:
    fake_slurm.on(
        query.squeue_argv(user="u", name="train"),
        row(job_id="8", name="train", user="u", state="RUNNING", nodelist="n-1"),
    )
    finding = check_job("train", "u", NOBODY, explain=lambda job_id: "unused")
    assert finding.healthy and len(fake_slurm.calls) == 1


def test_whys_headline_that_cannot_be_had_is_empty(
    fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slurmkit.errors import ControllerUnreachable
    from slurmkit.why import explain

    def unreachable(job_id: str, **kwargs: object) -> object:
        raise ControllerUnreachable("sacct: cannot reach slurmdbd (accounting)")

    monkeypatch.setattr(explain, "explain", unreachable)
    assert watch_job.why_headline("58") == ""
