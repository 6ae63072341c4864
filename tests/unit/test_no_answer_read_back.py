"""A state change whose failure is no known refusal is read back, through a command (issue 29).

``job extend JOB 9`` sets an absolute limit: ``scontrol update JobId=3 TimeLimit=00:09:00``.
On a stopped slurmctld 22.05, 24.11 and 26.05 answer it "Unexpected message received for
job 3" (tests/fixtures/refusals/) and carry it out when slurmctld continues. It was taken
for a refusal: exit 2 "refused", no read-back. Now the job is read again; the first read
of a woken controller may come before it ran the update in its backlog (seen live on
22.05), so "not changed yet" is read again within the window. Failed before the fix.
"""

from __future__ import annotations

import os

import pytest

from slurmkit.jobenv import timelimit
from slurmkit.journal import read
from slurmkit.slurm import recheck
from tests.fakes import FakeSlurm
from tests.unit.test_cli_job import SHOW3, _limited

UNEXPECTED = "Unexpected message received for job 3\n"  # 22.05's stderr, recorded


@pytest.fixture
def slurm(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch) -> FakeSlurm:
    for name in list(os.environ):
        if name.startswith("SLURM_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(recheck, "_PAUSE", 0.0)
    monkeypatch.setattr(recheck, "window", lambda env=None: 60.0)  # ends at the first change
    fake_slurm.on(["scontrol", "update", "JobId=3", "TimeLimit=00:09:00"], rc=1, stderr=UNEXPECTED)
    return fake_slurm


def test_an_unexpected_message_is_read_back_and_the_change_reported_done(
    run_cli, slurm: FakeSlurm
) -> None:
    # the plan's read, the woken controller's first answer (backlog not run yet), then done
    slurm.answers(SHOW3, _limited("00:05:00"), _limited("00:05:00"), _limited("00:09:00"))
    result = run_cli("job", "extend", "3", "9", "--yes")
    assert result.stdout == "job 3: time limit 00:05:00 -> 00:09:00\n"
    assert "no answer from Slurm: reading job 3 again" in result.stderr
    entries = read(timelimit.journal_path()).entries
    assert [(e.kind, e.details.get("result")) for e in entries] == [
        ("intent", None),
        ("outcome", "done"),
    ]


def test_a_change_never_carried_out_is_not_applied_after_the_window(
    run_cli, slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recheck, "window", lambda env=None: 0.0)
    slurm.answers(SHOW3, _limited("00:05:00"))
    result = run_cli("job", "extend", "3", "9", "--yes", exit_code=1)
    assert "Slurm reports time limit 00:05:00, expected 00:09:00" in result.stderr
    assert "refused" not in result.stderr
