"""Periods and --at times: strict parsing, canonical names, the exact --begin.

The duration grammar under periods is tested in test_grammar_duration.py.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from slurmkit.cron.period import (
    Period,
    begin_value,
    next_at,
    parse_at,
    parse_period,
)
from slurmkit.errors import UsageError


@pytest.mark.parametrize(
    ("text", "seconds", "name"),
    [
        ("20s", 20, "20s"),
        ("30m", 1800, "30m"),
        ("1800s", 1800, "30m"),
        ("12h", 43200, "12h"),
        ("2d", 172800, "2d"),
        ("1w", 604800, "1w"),
        ("90s", 90, "90s"),
        ("90m", 5400, "90m"),
        ("hourly", 3600, "hourly"),
        ("1h", 3600, "hourly"),
        ("60m", 3600, "hourly"),
        ("daily", 86400, "daily"),
        ("24h", 86400, "daily"),
        (" 1d ", 86400, "daily"),
        ("1h30m", 5400, "90m"),  # the one duration grammar: compound spellings, one name
        ("5M", 300, "5m"),
    ],
)
def test_periods_parse_to_one_canonical_name(text: str, seconds: int, name: str) -> None:
    period = parse_period(text)
    assert (period.seconds, period.name) == (seconds, name)
    assert period.folder == f"cron.{name}"


@pytest.mark.parametrize(
    "text",
    ["", "30", "30 m", "30min", "1.5h", "-5m", "+5m", "0s", "09s", "5s", "9s",
     "hour", "Hourly", "367d", "30m x", "1e3s", "١٠s"],
)  # fmt: skip
def test_bad_periods_are_one_usage_error(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_period(text)
    assert "\n" not in str(info.value)
    assert "period" in str(info.value)


def test_minimum_period_is_ten_seconds() -> None:
    assert parse_period("10s").seconds == 10
    with pytest.raises(UsageError, match="too short: at least 10s"):
        parse_period("9s")


def test_period_ordering_and_spelling() -> None:
    periods = sorted([parse_period("daily"), parse_period("20s"), parse_period("hourly")])
    assert [p.name for p in periods] == ["20s", "hourly", "daily"]
    assert Period.of(3600).spelled == "1h"


@pytest.mark.parametrize(
    ("text", "value"), [("03:05", "03:05"), ("3:05", "03:05"), ("23:59", "23:59")]
)
def test_at_accepts_times_of_day(text: str, value: str) -> None:
    assert parse_at(text) == value


@pytest.mark.parametrize("text", ["24:00", "12:60", "3", "03:5", "3pm", "03:05:00", "", "-1:00"])
def test_at_refuses_anything_else(text: str) -> None:
    with pytest.raises(UsageError, match="not a time of day HH:MM"):
        parse_at(text)


@pytest.mark.parametrize(
    ("now", "at", "expected"),
    [
        # still ahead today
        ("2026-03-10T01:59:59", "03:00", "2026-03-10T03:00:00"),
        # exactly now: the next one is tomorrow (a run starting at 03:00 queues 03:00 tomorrow)
        ("2026-03-10T03:00:00", "03:00", "2026-03-11T03:00:00"),
        # a late start never shifts the schedule
        ("2026-03-10T03:07:31", "03:00", "2026-03-11T03:00:00"),
        # month and year ends
        ("2026-02-28T23:30:00", "00:15", "2026-03-01T00:15:00"),
        ("2026-12-31T22:00:00", "21:00", "2027-01-01T21:00:00"),
        ("2026-12-31T20:00:00", "21:00", "2026-12-31T21:00:00"),
    ],
)
def test_next_at_with_a_fixed_clock(now: str, at: str, expected: str) -> None:
    moment = next_at(at, datetime.fromisoformat(now))
    assert begin_value(moment) == expected
