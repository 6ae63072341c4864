"""Chain health from records and state files, with a fixed clock."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from slurmkit.cron.state import LastRun, Launched, parse_state, read_state
from slurmkit.cron.status import assess, default_grace
from slurmkit.slurm.records import HELD_REASONS, Job

NOW = datetime(2026, 3, 10, 12, 0, 0, tzinfo=timezone.utc)
HOUR = 3600


def job(job_id: str = "5", state: str = "PENDING", reason: str | None = "BeginTime", **kw) -> Job:
    return Job(
        job_id=job_id, name="cron-hourly", state=state, reason=reason,
        held=reason in HELD_REASONS, **kw,
    )  # fmt: skip


def last(minutes_ago: float, **kw) -> LastRun:
    return LastRun(last_run=NOW - timedelta(minutes=minutes_ago), job_id="4", **kw)


@pytest.mark.parametrize(
    ("jobs", "last_run", "health", "words"),
    [
        ([], None, "gone", "never started"),
        ([], last(30), "gone", "the chain has ended"),
        ([job(reason="JobHeldUser")], last(30), "stuck", "job 5 held (JobHeldUser)"),
        ([job(reason="DependencyNeverSatisfied")], last(30), "stuck", "DependencyNeverSatisfied"),
        ([job()], last(30, error="cron folder /x does not exist"), "error", "does not exist"),
        ([job()], last(61 + 6), "late", "last run 1h7m ago, more than the period 1h"),
        ([job()], last(61 + 4), "ok", "last run 1h5m ago launched 0 job(s)"),
        # a run in progress is not late, however old the last record
        ([job(state="RUNNING", reason=None)], last(300), "ok", "running now"),
        ([job()], last(10, failed=1, failed_files=("bad.slurm",)), "failed", "bad.slurm"),
        ([job()], None, "ok", "no run recorded yet"),
        (
            [job(submit_time=NOW - timedelta(hours=2))],
            None,
            "late",
            "queued 2h ago",
        ),
        # a held run beside a runnable one: the runnable one keeps the chain alive
        ([job(reason="JobHeldAdmin"), job("6")], last(5), "ok", "next run queued"),
    ],
)
def test_assess(jobs: list[Job], last_run: LastRun | None, health: str, words: str) -> None:
    got, message = assess(HOUR, jobs, last_run, NOW, default_grace(HOUR))
    assert got == health
    assert words in message


def test_default_grace() -> None:
    assert default_grace(20) == 300
    assert default_grace(86400) == 8640


def test_parse_state_reads_what_the_scheduler_writes() -> None:
    text = (
        "last_run=2026-03-10T11:59:00+00:00\njob=42\nchain=cron-30m\nperiod=30m\n"
        "submitted=2\nfailed=1\nlaunched=43 a.slurm\nlaunched=44 b c.slurm\n"
        "failed_file=bad.slurm\nfuture_key=whatever\nnot a key value line\n"
    )
    state = parse_state(text)
    assert state.last_run == datetime(2026, 3, 10, 11, 59, tzinfo=timezone.utc)
    assert (state.job_id, state.chain, state.period, state.submitted, state.failed) == (
        "42", "cron-30m", "30m", 2, 1
    )  # fmt: skip
    assert state.launched == (Launched("43", "a.slurm"), Launched("44", "b c.slurm"))
    assert state.failed_files == ("bad.slurm",)
    assert state.error is None and state.problem is None


def test_parse_state_tolerates_garbage(tmp_path) -> None:
    state = parse_state("last_run=yesterday\nsubmitted=many\n")
    assert state.last_run is None and state.submitted == 0
    assert state.problem == "no last_run time in the state file"
    assert read_state(tmp_path / "missing") is None
    assert "cannot read" in (read_state(tmp_path) or LastRun()).problem  # a directory
