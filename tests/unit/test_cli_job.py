"""``slurmkit job info`` and ``slurmkit job extend``, in-process, Slurm faked at the argv seam."""

from __future__ import annotations

import json
import os

import pytest
from fixtures_path import read

from slurmkit import _proc
from tests.fakes import FakeSlurm

RUNNING = read("22.05", "03_jobs", "scontrol_show_job_d_running_gpu_2node.txt")  # job 3
PENDING = read("22.05", "03_jobs", "scontrol_show_job_d_pending_resources.txt")  # job 10
SHOW3 = ("scontrol", "--details", "show", "job", "3")
UPDATE = ("scontrol", "update", "JobId=3", "TimeLimit+=2")


def _limited(limit: str) -> str:
    return RUNNING.replace("TimeLimit=UNLIMITED", f"TimeLimit={limit}")


@pytest.fixture
def slurm(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch) -> FakeSlurm:
    """No job in the environment, quiet mode; an update succeeds and an unknown job id gets
    scontrol's answer until a test routes ``show job``."""
    for name in list(os.environ):
        if name.startswith("SLURM_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(_proc, "_verbose", False)
    fake_slurm.on(["scontrol", "update", "**"])
    fake_slurm.on([*SHOW3[:4], "*"], rc=1, stderr="slurm_load_jobs error: Invalid job id specified")
    return fake_slurm


def show(slurm: FakeSlurm, job_id: str, *texts: str) -> None:
    """``scontrol --details show job JOB_ID`` prints ``texts`` in turn (the last repeats)."""
    slurm.on([*SHOW3[:4], job_id], answer=list(texts))


# ---------------------------------------------------------------- info


def test_info_needs_a_job(run_cli, slurm: FakeSlurm) -> None:
    result = run_cli("job", "info", exit_code=2)
    assert "give JOBID, or run inside a Slurm job" in result.stderr
    assert slurm.calls == []


def test_seconds_left_inside_the_job(
    run_cli, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "3")
    show(slurm, "3", _limited("00:05:00"))  # RunTime=00:00:17
    assert run_cli("job", "info", "--seconds-left").stdout == "283\n"
    assert slurm.calls == [SHOW3]


def test_seconds_left_unlimited(run_cli, slurm: FakeSlurm) -> None:
    show(slurm, "3", RUNNING)
    assert run_cli("job", "info", "3", "--seconds-left").stdout == "2147483647\n"


def test_seconds_left_pending_is_an_error(run_cli, slurm: FakeSlurm) -> None:
    show(slurm, "10", PENDING)
    result = run_cli("job", "info", "10", "--seconds-left", exit_code=2)
    assert result.stdout == ""
    assert "job 10 is pending" in result.stderr


def test_info_table_and_json(run_cli, slurm: FakeSlurm) -> None:
    show(slurm, "3", _limited("01:00:00"))
    table = run_cli("job", "info", "3").stdout
    assert "time left   00:59:43" in table
    assert "nodes       node-[1-2] (2)" in table
    data = json.loads(run_cli("job", "info", "3", "--json").stdout)
    assert data["seconds_left"] == 3583 and data["nodes"] == "node-[1-2]"
    assert (
        "cannot be combined"
        in run_cli("job", "info", "3", "--json", "--seconds-left", exit_code=2).stderr
    )


def test_info_unknown_job(run_cli, slurm: FakeSlurm) -> None:
    assert "unknown job 42" in run_cli("job", "info", "42", exit_code=2).stderr


# ---------------------------------------------------------------- extend


def test_extend_dry_run_changes_nothing(run_cli, slurm: FakeSlurm) -> None:
    show(slurm, "3", _limited("00:05:00"))
    out = run_cli("job", "extend", "3", "+2m", "--dry-run").stdout
    assert out == (
        "job 3: time limit 00:05:00 -> 00:07:00\nwould run: scontrol update JobId=3 TimeLimit+=2\n"
    )
    assert UPDATE not in slurm.calls


def test_extend_without_terminal_needs_yes(run_cli, slurm: FakeSlurm) -> None:
    show(slurm, "3", _limited("00:05:00"))
    result = run_cli("job", "extend", "3", "+2m", exit_code=1)
    assert "no terminal and no --yes: dry run only" in result.stderr
    assert UPDATE not in slurm.calls


def test_extend_yes_applies_and_reads_back(run_cli, slurm: FakeSlurm) -> None:
    show(slurm, "3", _limited("00:05:00"), _limited("00:07:00"))
    out = run_cli("job", "extend", "3", "+2m", "--yes").stdout
    assert out == "job 3: time limit 00:05:00 -> 00:07:00\n"
    assert slurm.calls == [SHOW3, UPDATE, SHOW3]


def test_extend_read_back_differs(run_cli, slurm: FakeSlurm) -> None:
    show(slurm, "3", _limited("00:05:00"), _limited("00:05:00"))
    result = run_cli("job", "extend", "3", "+2m", "--yes", exit_code=1)
    assert "Slurm reports time limit 00:05:00, expected 00:07:00" in result.stderr


@pytest.mark.parametrize(("answer", "code"), [("y\n", 0), ("n\n", 1)])
def test_extend_asks_on_a_terminal(
    run_cli, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, answer: str, code: int
) -> None:
    monkeypatch.setattr("slurmkit.cli._confirm.has_terminal", lambda: True)
    show(slurm, "3", _limited("00:05:00"), _limited("00:07:00"))
    result = run_cli("job", "extend", "3", "+2m", input=answer, exit_code=code)
    assert "will run: scontrol update JobId=3 TimeLimit+=2" in result.stderr
    assert (UPDATE in slurm.calls) == (code == 0)


def test_extend_permission_denied(run_cli, slurm: FakeSlurm) -> None:
    show(slurm, "3", _limited("00:05:00"))
    slurm.on(["scontrol", "update", "**"], rc=1, stderr="Access/permission denied for job 3\n")
    result = run_cli("job", "extend", "3", "+2m", "--yes", exit_code=2)
    assert "only Slurm operators, administrators and root" in result.stderr
    assert result.stderr.count("\n") == 1


def test_extend_bad_time_asks_nothing(run_cli, slurm: FakeSlurm) -> None:
    assert "a unit needs a sign" in run_cli("job", "extend", "3", "3h", exit_code=2).stderr
    assert slurm.calls == []


def test_extend_unlimited_job(run_cli, slurm: FakeSlurm) -> None:
    show(slurm, "3", RUNNING)
    assert "no time limit" in run_cli("job", "extend", "3", "+1h", exit_code=2).stderr


def test_extend_unknown_job(run_cli, slurm: FakeSlurm) -> None:
    assert "unknown job 77" in run_cli("job", "extend", "77", "+1h", "--yes", exit_code=2).stderr
