"""Time left, duration parsing for ``job extend``, and the scontrol update it runs."""

from __future__ import annotations

import pytest
from fixtures_path import read

from slurmkit.errors import NotFound, PermissionDenied, SlurmkitError, UsageError
from slurmkit.jobenv import timelimit
from slurmkit.slurm.parse_records import parse_scontrol_jobs
from slurmkit.slurm.records import Job
from tests.fakes import FakeSlurm

RUNNING = read("22.05", "03_jobs", "scontrol_show_job_d_running_gpu_2node.txt")
PENDING = read("22.05", "03_jobs", "scontrol_show_job_d_pending_resources.txt")
COMPLETED = read("22.05", "03_jobs", "scontrol_show_job_d_completed.txt")


def _limited(text: str, limit: str = "00:05:00", run: str = "00:00:17") -> str:
    return text.replace("TimeLimit=UNLIMITED", f"TimeLimit={limit}").replace(
        "RunTime=00:00:17", f"RunTime={run}"
    )


def _job(text: str) -> Job:
    return parse_scontrol_jobs(text)[0]


# ---------------------------------------------------------------- time left


def test_seconds_left_is_limit_minus_runtime() -> None:
    assert timelimit.seconds_left(_job(_limited(RUNNING))) == 300 - 17
    assert timelimit.seconds_left(_job(_limited(RUNNING, "1-00:00:00", "23:59:59"))) == 1


def test_unlimited_is_a_documented_integer() -> None:
    assert timelimit.seconds_left(_job(RUNNING)) == timelimit.UNLIMITED_SECONDS == 2147483647


def test_over_the_limit_is_zero() -> None:
    assert timelimit.seconds_left(_job(_limited(RUNNING, "00:05:00", "00:05:30"))) == 0


def test_pending_and_ended_are_errors() -> None:
    with pytest.raises(SlurmkitError, match=r"job 10 is pending \(Resources\): it has not started"):
        timelimit.seconds_left(_job(PENDING))
    with pytest.raises(SlurmkitError, match=r"job 1 has ended \(COMPLETED\)"):
        timelimit.seconds_left(_job(COMPLETED))


def test_job_time_rows_and_json() -> None:
    info = timelimit.job_time(_job(_limited(RUNNING)))
    rows = dict(info.rows())
    assert rows["state"] == "RUNNING"
    assert rows["nodes"] == "node-[1-2] (2)"
    assert rows["time limit"] == "00:05:00"
    assert rows["time left"] == "00:04:43"
    data = info.to_json()
    assert data["seconds_left"] == 283 and data["time_limit_seconds"] == 300
    assert data["unlimited"] is False
    assert data["start"].startswith("2026-11-21T00:03:52")


def test_job_time_unlimited_and_pending() -> None:
    assert dict(timelimit.job_time(_job(RUNNING)).rows())["time left"] == "UNLIMITED"
    pending = timelimit.job_time(_job(PENDING))
    assert pending.seconds_left is None and pending.start is None  # not the fake "expected" start
    assert dict(pending.rows())["time left"] == "- (not started)"


# ---------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "minutes", "relative"),
    [
        ("+3h", 180, True),
        ("+90m", 90, True),
        ("+1d", 1440, True),
        ("+1d12h", 2160, True),
        ("+2h30m", 150, True),
        ("+30", 30, True),  # Slurm: a bare number is minutes
        ("+1:30:00", 90, True),
        ("+0-02", 120, True),
        (" +3H ", 180, True),
        ("2-00:00:00", 2880, False),
        ("01:30:00", 90, False),
        ("36:00:00", 2160, False),
        ("90", 90, False),
        ("90:00", 90, False),  # MM:SS
        ("1-12", 2160, False),  # D-HH
        ("1-12:30", 2190, False),  # D-HH:MM
    ],
)
def test_parse_change(text: str, minutes: int, relative: bool) -> None:
    change = timelimit.parse_change(text)
    assert (change.minutes, change.relative) == (minutes, relative)


@pytest.mark.parametrize("word", ["UNLIMITED", "unlimited", "INFINITE"])
def test_parse_unlimited(word: str) -> None:
    change = timelimit.parse_change(word)
    assert change.minutes is None and not change.relative
    assert change.assignment == "TimeLimit=UNLIMITED"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no time given"),
        ("3h", "a unit needs a sign"),
        ("+90s", "no seconds"),
        ("+1h30", "not a Slurm time"),
        ("+3x", "not a duration"),
        ("-1h", "extend only adds time"),
        ("+0m", "at least one minute"),
        ("0", "at least one minute"),
        ("1:99:00", "0-59"),
        ("1-25:00:00", "0-23"),
        ("01:30:20", "whole minutes"),
        ("+", "not a Slurm time"),
        ("tomorrow", "a unit needs a sign"),
        ("1.5h", "a unit needs a sign"),
        ("+1.5h", "not a duration"),
    ],
)
def test_parse_change_is_strict(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        timelimit.parse_change(text)


def test_assignments() -> None:
    assert timelimit.parse_change("+3h").assignment == "TimeLimit+=180"
    assert timelimit.parse_change("2880").assignment == "TimeLimit=2-00:00:00"
    assert timelimit.parse_change("90").assignment == "TimeLimit=01:30:00"


# ---------------------------------------------------------------- plans and scontrol


def test_plan_relative_and_absolute() -> None:
    job = _job(_limited(RUNNING))
    plan = timelimit.plan_extend(job, timelimit.parse_change("+2m"))
    assert (plan.before, plan.after) == (300, 420)
    assert plan.argv == ["scontrol", "update", "JobId=3", "TimeLimit+=2"]
    assert plan.describe() == "job 3: time limit 00:05:00 -> 00:07:00"
    plan = timelimit.plan_extend(job, timelimit.parse_change("1-00:00:00"))
    assert plan.after == 86400
    assert plan.argv[-1] == "TimeLimit=1-00:00:00"


def test_plan_refuses_ended_and_unlimited() -> None:
    with pytest.raises(SlurmkitError, match="has ended"):
        timelimit.plan_extend(_job(COMPLETED), timelimit.parse_change("+1h"))
    with pytest.raises(UsageError, match="no time limit"):
        timelimit.plan_extend(_job(RUNNING), timelimit.parse_change("+1h"))
    plan = timelimit.plan_extend(_job(RUNNING), timelimit.parse_change("2:00:00"))
    assert (plan.before, plan.after) == (None, 7200)  # an admin may set a limit on an unlimited job


@pytest.fixture
def fake(fake_slurm: FakeSlurm) -> FakeSlurm:
    """``scontrol update`` succeeds and ``show job 3`` reads back the raised limit."""
    fake_slurm.on(["scontrol", "update", "**"])
    fake_slurm.on(["scontrol", "--details", "show", "job", "3"], _limited(RUNNING, "00:07:00"))
    return fake_slurm


def test_apply_runs_one_update_then_reads_back(fake: FakeSlurm) -> None:
    plan = timelimit.plan_extend(_job(_limited(RUNNING)), timelimit.parse_change("+2m"))
    job = timelimit.apply_extend(plan)
    assert job.time_limit == 420
    assert fake.calls == [
        ("scontrol", "update", "JobId=3", "TimeLimit+=2"),
        ("scontrol", "--details", "show", "job", "3"),
    ]


def test_permission_denied_explains_who_can(fake: FakeSlurm) -> None:
    fake.on(["scontrol", "update", "**"], rc=1, stderr="Access/permission denied for job 3\n")
    plan = timelimit.plan_extend(_job(_limited(RUNNING)), timelimit.parse_change("+1h"))
    with pytest.raises(PermissionDenied) as caught:
        timelimit.apply_extend(plan)
    message = str(caught.value)
    assert "Access/permission denied" in message
    assert "only Slurm operators, administrators and root can raise" in message
    assert "scontrol update JobId=3 TimeLimit+=60" in message
    assert caught.value.exit_code == 2


def test_other_users_job_is_denied_too(fake: FakeSlurm) -> None:
    fake.on(
        ["scontrol", "update", "**"], rc=1, stderr="Invalid user id for job 3\n"
    )  # real 22.05 text for someone else's job
    plan = timelimit.plan_extend(_job(_limited(RUNNING)), timelimit.parse_change("+1h"))
    with pytest.raises(PermissionDenied, match="only Slurm operators"):
        timelimit.apply_extend(plan)


def test_job_gone_between_plan_and_update(fake: FakeSlurm) -> None:
    fake.on(
        ["scontrol", "update", "**"], rc=1, stderr="slurm_update error: Invalid job id specified\n"
    )
    plan = timelimit.plan_extend(_job(_limited(RUNNING)), timelimit.parse_change("+1h"))
    with pytest.raises(NotFound, match="unknown job 3"):
        timelimit.apply_extend(plan)
