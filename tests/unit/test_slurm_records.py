"""The record model: state splitting, version ordering, derived properties."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmkit.errors import SlurmParseError
from slurmkit.grammar import gres
from slurmkit.slurm.records import (
    NODE_BASE_STATES,
    GresAlloc,
    Job,
    Node,
    SlurmVersion,
    job_state,
    node_state,
    plausible_end,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("slurm-wlm 22.05.8", SlurmVersion(22, 5, 8)),
        ("slurm 24.11.5", SlurmVersion(24, 11, 5)),
        ("slurm 26.05.0-0rc1\n", SlurmVersion(26, 5, 0)),
        ("25.05", SlurmVersion(25, 5, 0)),
    ],
)
def test_version_parses_every_spelling(text: str, expected: SlurmVersion) -> None:
    assert SlurmVersion.parse(text) == expected


def test_versions_order_numerically_not_lexically() -> None:
    assert SlurmVersion(22, 5, 8) < SlurmVersion(23, 2, 0) < SlurmVersion(24, 11, 5)
    assert SlurmVersion(24, 11, 10) > SlurmVersion(24, 11, 9)
    assert str(SlurmVersion(22, 5, 8)) == "22.05.8"


def test_version_without_numbers_is_a_parse_error() -> None:
    with pytest.raises(SlurmParseError, match="cannot read a Slurm version"):
        SlurmVersion.parse("sinfo: command failed")


@pytest.mark.parametrize(
    ("parts", "base", "flags"),
    [
        (["MIXED", "DRAIN"], "MIXED", {"DRAIN"}),  # 23.02+ JSON list
        (["mixed", "DRAIN"], "MIXED", {"DRAIN"}),  # 22.05 JSON state + state_flags
        (["DOWN+NOT_RESPONDING"], "DOWN", {"NOT_RESPONDING"}),  # scontrol text
        (["down*"], "DOWN", {"NOT_RESPONDING"}),  # sinfo text
        (["idle~"], "IDLE", {"POWERED_DOWN"}),
        (["DRAIN", "IDLE"], "IDLE", {"DRAIN"}),  # base need not come first
        (["alloc"], "ALLOCATED", set()),
        ([], "UNKNOWN", set()),
    ],
)
def test_node_state_splits_base_and_flags(parts: list[str], base: str, flags: set[str]) -> None:
    assert node_state(parts) == (base, frozenset(flags))


def test_job_state_drops_cancelled_by_uid() -> None:
    assert job_state(["CANCELLED by 0"]) == ("CANCELLED", frozenset())
    assert job_state(["PENDING", "REQUEUED"]) == ("PENDING", frozenset({"REQUEUED"}))


@pytest.mark.parametrize(
    ("text", "expected"),
    [("gres:gpu:4", "gpu:4"), ("gres/gpu:4", "gpu:4"), ("N/A", ""), (None, "")],
)
def test_gres_per_node_is_the_same_string_on_every_version(text: str | None, expected: str) -> None:
    assert gres.normalize(text) == expected


def _node(state: str, *flags: str) -> Node:
    return Node(name="n1", state=state, flags=frozenset(flags))


def test_drain_with_jobs_is_draining_and_without_is_drained() -> None:
    assert _node("MIXED", "DRAIN").is_draining
    assert not _node("MIXED", "DRAIN").is_drained
    assert _node("IDLE", "DRAIN").is_drained
    assert _node("DOWN", "DRAIN").is_drained and _node("DOWN", "DRAIN").is_down
    assert not _node("IDLE").is_drained and _node("IDLE").is_idle
    assert _node("DOWN", "NOT_RESPONDING").is_not_responding
    assert _node("MIXED", "DRAIN").state_text == "MIXED+DRAIN"


def test_display_id_of_array_tasks() -> None:
    assert Job(job_id="5", array_job_id="4", array_task_id="1").display_id == "4_1"
    assert Job(job_id="4", array_job_id="4", array_task_id="2-6%1").display_id == "4_[2-6%1]"
    assert Job(job_id="3").display_id == "3"


def test_unlimited_jobs_get_no_invented_end_time() -> None:
    one_year_on = datetime(2027, 11, 21, tzinfo=timezone.utc)
    assert plausible_end(one_year_on, "RUNNING", None) is None
    assert plausible_end(one_year_on, "RUNNING", 3600) == one_year_on
    assert plausible_end(one_year_on, "COMPLETED", None) == one_year_on


def test_gpu_indices_come_from_the_idx_suffix() -> None:
    assert GresAlloc(nodes="node-1", gres="gpu:4(IDX:0-3)").gpu_indices == "0-3"
    assert GresAlloc(nodes="node-1", gres="").gpu_indices is None


STATE_FLAGS = ("DRAIN", "NOT_RESPONDING", "COMPLETING", "POWERED_DOWN", "MAINTENANCE", "RESERVED")


@given(
    st.sampled_from(sorted(NODE_BASE_STATES)),
    st.sets(st.sampled_from(STATE_FLAGS), max_size=4),
)
def test_node_state_spellings_agree(base: str, flags: set[str]) -> None:
    """scontrol's ``A+B``, JSON lists and 22.05's lower-case base all give one model."""
    ordered = sorted(flags)
    expected = (base, frozenset(flags))
    assert node_state(["+".join([base, *ordered])]) == expected
    assert node_state([base, *ordered]) == expected
    assert node_state([base.lower(), *ordered]) == expected
