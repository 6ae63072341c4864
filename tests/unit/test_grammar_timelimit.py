"""slurmkit.grammar.timelimit: Slurm's time-limit grammar, read from Slurm and from users."""

from __future__ import annotations

import pytest
from fixtures_path import read
from hypothesis import given
from hypothesis import strategies as st

from slurmkit.errors import SlurmParseError, UsageError
from slurmkit.grammar import timelimit
from slurmkit.slurm import parse_records as pr


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0:42", 42),  # MM:SS
        ("00:00:02", 2),
        ("1:02:03", 3723),  # HH:MM:SS
        ("1-00:00:00", 86400),
        ("2-03", 2 * 86400 + 3 * 3600),  # D-HH
        ("2-03:30", 2 * 86400 + 3 * 3600 + 1800),  # D-HH:MM
        ("30", 1800),  # a bare number is minutes (Slurm's rule, not slurmkit's durations)
        ("UNLIMITED", None),
        ("INFINITE", None),
        ("Partition_Limit", None),
        ("NOT_SET", None),
        ("", None),
        (None, None),
    ],
)
def test_from_slurm(text: str | None, seconds: int | None) -> None:
    assert timelimit.from_slurm(text) == seconds


@pytest.mark.parametrize("text", ["soon", "1:2:3:4", "2h", "-1", "1-", "1.5"])
def test_from_slurm_refuses_other_text(text: str) -> None:
    with pytest.raises(SlurmParseError, match="not a Slurm duration"):
        timelimit.from_slurm(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 5400), ("1:30", 90), ("01:30:00", 5400), ("36:00:00", 129600), ("1-12", 129600),
     ("1-12:30", 131400), ("2-00:00:00", 172800), ("unlimited", None), ("Infinite", None),
     ("90:00", 5400)],
)  # fmt: skip
def test_parse_limit(text: str, seconds: int | None) -> None:
    assert timelimit.parse_limit(text) == seconds


@pytest.mark.parametrize(
    ("text", "message"),
    [("1:99:00", "0-59"), ("1:00:60", "0-59"), ("1-25:00:00", "0-23"), ("2h", "not a Slurm time"),
     ("", "not a Slurm time"), ("Partition_Limit", "not a Slurm time")],
)  # fmt: skip
def test_parse_limit_is_strict(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        timelimit.parse_limit(text, "--time")
    assert str(info.value).startswith(f"--time {text!r}")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "UNLIMITED"), (0, "00:00:00"), (59, "00:00:59"), (3600, "01:00:00"),
     (86400, "1-00:00:00"), (2 * 86400 + 3723, "2-01:02:03")],
)  # fmt: skip
def test_format_limit(seconds: int | None, text: str) -> None:
    assert timelimit.format_limit(seconds) == text


@given(st.integers(min_value=0, max_value=400 * 86400))
def test_format_reads_back_through_both_readers(seconds: int) -> None:
    text = timelimit.format_limit(seconds)
    assert timelimit.from_slurm(text) == seconds
    assert timelimit.parse_limit(text) == seconds
    assert timelimit.format_limit(timelimit.parse_limit(text)) == text


def slurm_duration(seconds: int) -> str:
    """How squeue prints a duration: ``[D-]HH:MM:SS``, or ``M:SS`` under an hour."""
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@given(st.integers(min_value=0, max_value=400 * 86400))
def test_squeue_spellings_read_back(seconds: int) -> None:
    assert timelimit.from_slurm(slurm_duration(seconds)) == seconds


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_recorded_time_limits_read_the_same_on_both_versions(version: str) -> None:
    """Recorded ``scontrol show job -d``: TimeLimit UNLIMITED/NONE is no limit, RunTime parses."""
    jobs = pr.parse_scontrol_jobs(read(version, "03_jobs", "scontrol_show_job_all_d.txt"))
    assert jobs and all(j.time_limit is None for j in jobs)
    assert all(j.time_used is None or j.time_used >= 0 for j in jobs)


def test_check_jobs_ask_for_a_limit_in_the_one_format() -> None:
    """The check-job runner's --time is written by format_limit, so it reads back exactly."""
    from slurmkit import checkjob

    assert checkjob.time_limit(300) == "00:05:00"
    assert checkjob.time_limit(30) == "00:01:00"  # at least a minute
    assert checkjob.time_limit(25 * 3600) == "1-01:00:00"  # was "25:00:00": same limit
    assert timelimit.parse_limit(checkjob.time_limit(25 * 3600)) == 25 * 3600
