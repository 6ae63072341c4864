"""slurmkit.grammar.duration: one human-duration grammar; a bare number is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmkit.errors import UsageError
from slurmkit.grammar.duration import LONGEST, format_duration, human_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("30m", 1800),
        ("7d", 604800),
        ("2w", 1209600),
        ("1h30m", 5400),
        ("1d12h", 129600),
        ("1w1d1h1m1s", 694861),
        (" 12h ", 43200),
        ("3H", 10800),  # units in either case
        ("0s", 0),
    ],
)
def test_parse(text: str, seconds: int) -> None:
    assert parse_duration(text, minimum=0) == seconds


@pytest.mark.parametrize("text", ["7", "0", "30", " 7 "])
def test_a_bare_number_is_refused_with_the_spellings_that_would_be_taken(text: str) -> None:
    value = text.strip()
    with pytest.raises(UsageError) as info:
        parse_duration(text, "--since")
    assert str(info.value) == f"--since {value!r}: say {value}s, {value}m, {value}h or {value}d"


@pytest.mark.parametrize(
    "text",
    ["", "h", "5 m", "30min", "1.5h", "-5m", "+5m", "1m30", "30m1h", "1h1h", "09s", "1e3s",
     "١٠s", "2 hours", "12345678901s"],
)  # fmt: skip
def test_other_text_is_one_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match=r"--stale .* is not a duration") as info:
        parse_duration(text, "--stale")
    assert "\n" not in str(info.value)


def test_bounds() -> None:
    assert parse_duration("9999999999s") == LONGEST
    with pytest.raises(UsageError, match="too long: at most 9999999999s"):
        parse_duration("1000000w")
    assert parse_duration("0s", "--realert", minimum=0) == 0
    with pytest.raises(UsageError, match="--stale '0m' is too short: at least 1s"):
        parse_duration("0m", "--stale")
    with pytest.raises(UsageError, match="--expire '11w' is too long: at most 10w"):
        parse_duration("11w", "--expire", maximum=10 * 604800)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59, "59s"), (1800, "30m"), (3600, "1h"), (5400, "90m"), (86400, "1d"),
     (604800, "1w"), (90061, "90061s")],
)  # fmt: skip
def test_format_is_one_number_in_the_largest_exact_unit(seconds: int, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (59, "59s"), (3725, "1h2m"), (90061, "1d1h"), (120, "2m")]
)
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


@given(st.integers(min_value=0, max_value=LONGEST))
def test_format_reads_back_exactly(seconds: int) -> None:
    assert parse_duration(format_duration(seconds), minimum=0) == seconds


_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


@given(st.lists(st.integers(min_value=0, max_value=10**4), min_size=5, max_size=5))
def test_compound_spellings_read_to_the_sum_and_format_canonically(counts: list[int]) -> None:
    text = "".join(f"{n}{u}" for n, u in zip(counts, _UNITS, strict=True) if n)
    seconds = sum(n * length for n, length in zip(counts, _UNITS.values(), strict=True))
    if not text:
        return
    assert parse_duration(text, minimum=0) == seconds
    canonical = format_duration(seconds)
    assert format_duration(parse_duration(canonical, minimum=0)) == canonical
