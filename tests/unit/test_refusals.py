"""Refusals are a known list; any other failure of a state change is "no answer" (issue 29).

Every text here was recorded live on 22.05, 24.11 and 26.05 (tests/fixtures/refusals/,
by tests/integration/refusal_cases.py): each Slurm call that changes something, failed in
a known situation. A refusal must read as one (nothing was done, no read-back); a call
made while slurmctld was stopped must read as no answer, as a ControllerUnreachable, so
every caller reads the state back (it was carried out once slurmctld continued); a call
nothing received is "not sent" when its text says so, else no answer (reading back is the
only safe answer to "Unexpected message received", which 22.05 prints for both).

Failed before the fix: 22.05's "Unexpected message received" from ``scontrol hold``,
``release`` and ``update JobId=`` was a plain SlurmError, taken for a refusal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurmkit import _proc
from slurmkit.errors import ControllerUnreachable, NoAnswer, SlurmError
from slurmkit.slurm import _exec, recheck, refusals

FIXTURES = Path(__file__).parents[1] / "fixtures" / "refusals"
VERSIONS = ("22.05", "24.11", "26.05")


def _recorded(version: str) -> dict:
    return json.loads((FIXTURES / f"slurm-{version}.json").read_text())


def _completed(argv: list[str] | tuple[str, ...], stderr: str, rc: int = 1, stdout: str = ""):
    return _proc.Completed(tuple(argv), rc, stdout, stderr, seconds=0.0)


def _cases() -> list[tuple[str, dict]]:
    return [(v, case) for v in VERSIONS for case in _recorded(v)["cases"]]


def _error(case: dict) -> SlurmError:
    result = _completed(case["argv"], case["stderr"], case["returncode"], case["stdout"])
    assert _exec.failed(result), case  # every recorded case is a failure
    return _exec.classify(result)


@pytest.mark.parametrize(
    ("version", "case"), _cases(), ids=[f"{v}-{c['situation']}-{c['case']}" for v, c in _cases()]
)
def test_each_recorded_answer_is_classified_by_what_happened(version: str, case: dict) -> None:
    error = _error(case)
    text = f"{error}\n{error.stderr}"
    if case["situation"] == "refused":
        assert not recheck.no_answer(error), error
        assert not isinstance(error, ControllerUnreachable), error
        assert refusals.meaning(text, case["argv"][0]) in (refusals.REFUSED, refusals.NOT_SENT_YET)
    elif case["situation"] == "stopped":  # carried out once slurmctld continued
        assert recheck.no_answer(error), error
        assert isinstance(error, ControllerUnreachable), error  # what train's hold catches
    else:  # nothing listened: "not sent" only when the text says so, never "refused"
        assert recheck.no_answer(error) is not refusals.not_sent(text), error
        assert refusals.meaning(text, case["argv"][0]) != refusals.REFUSED


def test_the_recordings_hold_the_answers_issue_29_found() -> None:
    for version in VERSIONS:
        recorded = _recorded(version)
        assert recorded["slurm"].endswith(tuple(f" {version}.{n}" for n in range(20)))
        hold = next(c for c in recorded["cases"] if c["case"] == "hold" and
                    c["situation"] == "stopped")  # fmt: skip
        assert "Unexpected message received" in hold["stderr"]
        assert isinstance(_error(hold), NoAnswer)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("slurm_suspend error: Invalid user id", "permission"),
        ("scancel: error: Kill job error on job id 1: Access/permission denied", "permission"),
        ("scontrol_reboot_nodes error: Permission denied", "permission"),
        ("slurm_update error: Invalid node name specified", "invalid id"),
        ("Invalid job id specified for job 999999", "invalid id"),
        ("Job has already finished for job 3", "state"),
        ("Job is no longer pending execution", "state"),
        ("scontrol: error: Invalid TimeLimit value", "value"),
        ("You must specify a reason when DOWNING or DRAINING a node. Request denied", "value"),
    ],
)
def test_each_kind_of_refusal_is_named(text: str, kind: str) -> None:
    assert refusals.refusal(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "Unexpected message received for job 4",
        "scancel: error: Kill job error on job id 2: Access/permission denied\n"
        "scancel: error: Kill job error on job id 3: Socket timed out on send/recv operation",
        "slurm_update error: Zero Bytes were transmitted or received",
        "scontrol: error: a text no Slurm version has printed yet",
    ],
)
def test_anything_else_from_a_change_is_no_answer(text: str) -> None:
    error = _exec.classify(_completed(("scontrol", "update", "JobId=4", "TimeLimit=5"), text))
    assert isinstance(error, ControllerUnreachable) and recheck.no_answer(error)


def test_a_query_that_fails_is_not_turned_into_no_answer() -> None:
    result = _completed(("scontrol", "show", "job", "4"), "Unexpected message received")
    assert not isinstance(_exec.classify(result), ControllerUnreachable)


def test_sbatch_stopped_by_its_own_checks_sent_nothing() -> None:
    text = "sbatch: error: Batch script is empty!"
    assert refusals.meaning(text, "sbatch") == refusals.NOT_SENT_YET
    error = _exec.classify(_completed(("sbatch", "x.sh"), text))
    assert not recheck.no_answer(error)
