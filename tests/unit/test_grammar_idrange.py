"""slurmkit.grammar.idrange: array specs, id lists and job ids as Slurm writes them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmkit.errors import SlurmParseError
from slurmkit.grammar import idrange
from slurmkit.grammar.idrange import ArraySpec, IdRange, JobId
from slurmkit.slurm import query


@pytest.mark.parametrize(
    ("expression", "ids"),
    [
        ("1", [1]),
        ("2-4%1", [2, 3, 4]),
        ("[2-6%1]", [2, 3, 4, 5, 6]),  # squeue's pending remainder
        ("1,4-8:2", [1, 4, 6, 8]),
        ("3,5-6", [3, 5, 6]),
        ("1-10:2%4", [1, 3, 5, 7, 9]),
        ("1,3,5-7", [1, 3, 5, 6, 7]),
    ],
)
def test_task_ids(expression: str, ids: list[int]) -> None:
    assert idrange.task_ids(expression) == ids


@pytest.mark.parametrize(
    "expression", ["", "a-b", "5-2", "1-4:0", "1--3", "1,,2", "1%", "1%x", "[1-3", "1-99999999999"]
)
def test_bad_array_spec(expression: str) -> None:
    with pytest.raises(SlurmParseError, match="not a Slurm id range"):
        idrange.task_ids(expression)


def test_a_huge_spec_is_refused_before_it_is_expanded() -> None:
    with pytest.raises(SlurmParseError, match="more tasks"):
        idrange.task_ids("0-999999999")


def test_spec_parts() -> None:
    spec = idrange.parse_array("1-10:2%4")
    assert spec == ArraySpec((IdRange(1, 10, 2),), 4)
    assert spec.count() == 5 and str(spec) == "1-10:2%4"


@pytest.mark.parametrize(
    ("text", "count"),
    [("0,1,2,3", 4), ("2,3", 2), ("6", 1), ("0-3", 4), ("4-7", 4), ("1-2,6", 3), ("2,2", 1)],
)
def test_gpu_id_counts(text: str, count: int) -> None:
    """Global GPU ids (``SLURM_JOB_GPUS=2,3``): two GPUs, not four."""
    assert idrange.count_ids(text) == count


@pytest.mark.parametrize("text", ["", "a", "1,,2", "3-1", "gpu0", "0-6:2", "0-3%1"])
def test_malformed_gpu_ids(text: str) -> None:
    with pytest.raises(SlurmParseError):
        idrange.count_ids(text)


@pytest.mark.parametrize(
    ("text", "job", "tasks"),
    [("123", "123", None), ("123_4", "123", "4"), ("123_[1-5]", "123", "1-5"),
     ("115_2-4", "115", "2-4"), ("130_[2-5%1]", "130", "2-5%1"), (" 7 ", "7", None)],
)  # fmt: skip
def test_job_ids(text: str, job: str, tasks: str | None) -> None:
    assert idrange.parse_job_id(text) == JobId(job, tasks)


@pytest.mark.parametrize("text", ["", "abc", "123_", "123_x", "_4", "123_[5-2]", "12 3"])
def test_bad_job_ids(text: str) -> None:
    with pytest.raises(SlurmParseError):
        idrange.parse_job_id(text)


def test_is_job_id() -> None:
    assert idrange.is_job_id("1234") and idrange.is_job_id("1234_5", tasks=False)
    assert not idrange.is_job_id("1234_[1-3]", tasks=False)
    assert idrange.is_job_id("1234_[1-3]") and not idrange.is_job_id("12; rm")


def test_scontrol_hold_answers_use_the_same_job_id_grammar() -> None:
    (a, b) = query.parse_task_outcomes("115_1: Job has already finished\n115_1-9:2: No error\n")
    assert (a.job_id, a.tasks, a.finished) == ("115", "1", True)
    assert (b.job_id, b.tasks, b.ok) == ("115", "1-9:2", True)


def _range(first: int, length: int, step: int) -> IdRange:
    return IdRange(first, first + length * step, step) if length else IdRange(first, first)


_ranges = st.builds(
    _range,
    st.integers(0, 10**6),
    st.integers(0, 50),
    st.integers(1, 9),
)


@given(st.lists(_ranges, min_size=1, max_size=5), st.none() | st.integers(1, 100))
def test_format_parse_round_trip(ranges: list[IdRange], throttle: int | None) -> None:
    spec = ArraySpec(tuple(ranges), throttle)
    assert idrange.parse_array(str(spec)) == spec
    assert idrange.parse_array(f"[{spec}]") == spec
    assert len(idrange.parse_array(str(spec)).ids()) == spec.count()


@given(st.integers(0, 10**9), st.none() | st.integers(0, 10**6))
def test_job_id_round_trip(job: int, task: int | None) -> None:
    job_id = JobId(str(job), None if task is None else str(task))
    assert idrange.parse_job_id(str(job_id)) == job_id
