"""``cron stop`` on a hung controller (issue 29, a lesser one): one read-back after the first
silent scancel, and "asked to cancel", never "cancelled".

It waited 20 s per chain (81 s for 3: by name, scancel first lists the jobs, two
MessageTimeouts) and then said "cancelled", though nothing had reached slurmctld. The
fake Slurm here is silent to every scancel and squeue, as a stopped slurmctld is; the
calls it records are the proof (no clock needed). Failed before the fix: three scancels,
and "cancelled".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit.cron import CronDir, parse_period
from slurmkit.cron.setup import init_cron_dir
from slurmkit.journal import read
from slurmkit.slurm import query, recheck
from tests.fakes import FakeSlurm
from tests.unit.test_cron_chain import USER, job_row, squeue

SCANCEL_SILENT = (1, "", "slurm_load_jobs error: Socket timed out on send/recv operation\n")
SQUEUE_SILENT = (1, "", "slurm_load_jobs error: Socket timed out on send/recv operation\n")
CHAINS = ["cron-hourly", "cron-daily", "cron-30m"]


@pytest.fixture
def slurm(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeSlurm:
    fake = fake_slurm.ignore_args("--comment=slurmkit:")
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(recheck, "_PAUSE", 0.0)
    monkeypatch.setattr(recheck, "window", lambda env=None: 0.0)
    return fake


@pytest.fixture
def cron(tmp_path: Path) -> CronDir:
    made = CronDir(tmp_path / "cron")
    init_cron_dir(made, extra_periods=[parse_period("30m")])
    return made


def _all_live_then_hung(slurm: FakeSlurm) -> None:
    """The plan's squeue answers (three live chains); then slurmctld stops answering."""
    rows = "".join(job_row(str(60 + i), name) for i, name in enumerate(CHAINS))
    slurm.answers(squeue(CHAINS), rows, SQUEUE_SILENT)
    for name in CHAINS:
        slurm.answers(query.cancel_by_name_argv(name, USER), *[SCANCEL_SILENT] * 3)


def test_a_hung_controller_gets_one_scancel_one_read_and_asked_to_cancel(
    run_cli, slurm: FakeSlurm, cron: CronDir
) -> None:
    _all_live_then_hung(slurm)
    # the plan's read answers; every call after it gets no answer
    out = run_cli("cron", "stop", "--dir", str(cron.root), "hourly", "daily", "30m", "--yes",
                  exit_code=2)  # fmt: skip
    (line,) = out.stderr.splitlines()
    assert "asked to cancel cron-hourly; not asked: cron-daily, cron-30m" in line, line
    assert "whether they stopped is unknown" in line and "cancelled" not in line
    calls = [list(c) for c in slurm.calls]
    scancels = [c for c in calls if c[0] == "scancel"]
    assert scancels == [query.cancel_by_name_argv("cron-hourly", USER)]
    after = calls[calls.index(scancels[0]) :]
    assert [c[0] for c in after] == ["scancel", "squeue"]  # one read-back, no window
    entries = read(cron.root / "journal").entries
    # only the chain asked has an intent, left open for `cron status` to settle
    assert [(e.kind, e.details.get("chain")) for e in entries] == [("intent", "cron-hourly")]


def test_a_controller_awake_again_after_the_silent_scancel_stops_every_chain(
    run_cli, slurm: FakeSlurm, cron: CronDir
) -> None:
    rows = "".join(job_row(str(60 + i), name) for i, name in enumerate(CHAINS))
    slurm.answers(squeue(CHAINS), rows, rows, "")  # awake again at the read-back
    slurm.answers(query.cancel_by_name_argv("cron-hourly", USER), SCANCEL_SILENT)
    for name in CHAINS[1:]:
        slurm.on(query.cancel_by_name_argv(name, USER), "")
    out = run_cli("cron", "stop", "--dir", str(cron.root), "hourly", "daily", "30m", "--yes")
    assert [list(c) for c in slurm.calls if c[0] == "scancel"] == [
        query.cancel_by_name_argv(name, USER) for name in CHAINS
    ]
    assert out.stdout.count("stopped (cancelled") == 3
    results = [e.details.get("result") for e in read(cron.root / "journal").entries]
    assert results == [None, None, None, "done", "done", "done"]
