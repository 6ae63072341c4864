"""The Slurm calls trains add to the query layer: argv builders, per-task outcome parsing,
array task expressions, and how refusals are classified.

The scontrol answers below were recorded on the sandbox (Slurm 22.05.8); the unknown-job
answer is the shared fixture ``err_scontrol_hold_999999``.
"""

from __future__ import annotations

import pytest
from fixtures_path import entry, stderr

from slurmkit.errors import NotFound, PermissionDenied
from slurmkit.slurm import query
from slurmkit.slurm.parse_text import DELIMITER, SQUEUE_COLUMNS
from tests.fakes import FakeSlurm

# scontrol hold 115 while 115_1 had finished and 115_2-4 were pending.
MIXED = "115_1: Job has already finished\n115_2-4: No error\n"
# scontrol hold 115 after every task ended.
ALL_FINISHED = "115_1-4: Job has already finished\n"
# scontrol hold 128 run by user nobody on root's pending array.
NOT_OWNER = "128_1-3: Invalid user id\n"
# scancel 128 run by user nobody.
SCANCEL_NOT_OWNER = "scancel: error: Kill job error on job id 128: Access/permission denied\n"


@pytest.fixture
def slurm(fake_slurm: FakeSlurm) -> FakeSlurm:
    return fake_slurm


# ---------------------------------------------------------------- builders


def test_argv_builders() -> None:
    assert query.hold_argv("115") == ["scontrol", "hold", "115"]
    assert query.release_argv("115") == ["scontrol", "release", "115"]
    assert query.cancel_argv("115") == ["scancel", "115"]
    assert query.cancel_argv(["115", "130"], pending_only=True) == [
        "scancel",
        "--state=PENDING",
        "115",
        "130",
    ]
    start = query.pending_start_argv(["115", "130"])
    assert start[0] == "squeue" and start[-1] == "--start"
    assert "--jobs=115,130" in start and "--noheader" in start


# ---------------------------------------------------------------- parsing


def test_parse_task_outcomes_reads_each_group() -> None:
    outcomes = query.parse_task_outcomes(MIXED)
    assert [(o.job_id, o.tasks, o.ok, o.finished) for o in outcomes] == [
        ("115", "1", False, True),
        ("115", "2-4", True, False),
    ]


def test_parse_task_outcomes_skips_other_lines() -> None:
    text = stderr("22.05", "03_jobs", "err_scontrol_hold_999999.txt")
    assert "Invalid job id" in text
    assert query.parse_task_outcomes(text) == []
    (outcome,) = query.parse_task_outcomes("130_[2-5%1]: Invalid user id")
    assert (outcome.job_id, outcome.tasks, outcome.message) == ("130", "2-5%1", "Invalid user id")


# ---------------------------------------------------------------- hold / release


def test_hold_silent_success_changed_everything(slurm: FakeSlurm) -> None:
    slurm.on(["scontrol", "hold", "115"])
    result = query.hold("115")
    assert result.changed and not result.all_finished and result.outcomes == ()
    assert slurm.calls == [("scontrol", "hold", "115")]


def test_release_with_a_finished_task_is_success_despite_exit_1(slurm: FakeSlurm) -> None:
    slurm.on(["scontrol", "release", "115"], rc=1, stderr=MIXED)
    result = query.release("115")
    assert result.changed and not result.all_finished
    assert [o.tasks for o in result.outcomes if o.ok] == ["2-4"]


def test_hold_on_finished_array_reports_it(slurm: FakeSlurm) -> None:
    slurm.on(["scontrol", "hold", "115"], rc=1, stderr=ALL_FINISHED)
    result = query.hold("115")
    assert result.all_finished and not result.changed


def test_hold_by_non_owner_is_permission_denied(slurm: FakeSlurm) -> None:
    slurm.on(["scontrol", "hold", "128"], rc=1, stderr=NOT_OWNER)
    with pytest.raises(PermissionDenied, match=r"128_1-3: Invalid user id"):
        query.hold("128")


def test_hold_unknown_job_is_not_found(slurm: FakeSlurm) -> None:
    name = "err_scontrol_hold_999999.txt"
    rc = entry("22.05", "03_jobs", name)["exit_code"]
    slurm.on(["scontrol", "hold", "999999"], rc=rc, stderr=stderr("22.05", "03_jobs", name))
    with pytest.raises(NotFound, match="Invalid job id"):
        query.hold("999999")


# ---------------------------------------------------------------- cancel / start


def test_cancel_pending_only(slurm: FakeSlurm) -> None:
    slurm.on(["scancel", "--state=PENDING", "115"])
    query.cancel(["115"], pending_only=True)
    assert slurm.calls == [("scancel", "--state=PENDING", "115")]


def test_cancel_by_non_owner_is_permission_denied(slurm: FakeSlurm) -> None:
    slurm.on(["scancel", "128"], rc=210, stderr=SCANCEL_NOT_OWNER)
    with pytest.raises(PermissionDenied, match="Access/permission denied"):
        query.cancel("128")


def _squeue_row(**values: str) -> str:
    return DELIMITER.join(values.get(name, "N/A") for name, _ in SQUEUE_COLUMNS) + "\n"


def test_pending_starts_reads_expected_start(slurm: FakeSlurm) -> None:
    text = _squeue_row(
        job_id="134",
        array_job_id="134",
        array_task_id="2-3%1",
        state="PENDING",
        reason="JobArrayTaskLimit",
        start_time="2026-11-21T01:08:26",
        time_limit="1:00",
    ) + _squeue_row(job_id="140", state="PENDING", reason="Resources", time_limit="1:00")
    slurm.on(query.pending_start_argv("134,140"), text)
    first, second = query.pending_starts("134,140")
    assert first.display_id == "134_[2-3%1]"
    assert first.start_time is not None and first.start_time.minute == 8
    assert second.start_time is None


def test_pending_starts_of_gone_jobs_is_empty(slurm: FakeSlurm) -> None:
    argv = query.pending_start_argv("999999")
    slurm.on(argv, rc=1, stderr="slurm_load_jobs error: Invalid job id specified\n")
    assert query.pending_starts("999999") == []
