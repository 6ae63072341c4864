"""cron start/stop/status when slurmctld does not answer, when slurmkit is killed, when the
cron dir cannot be written (issue 22). The shared fake Slurm (tests/fakes); each test
failed before its fix."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slurmkit import faultpoint, locks
from slurmkit.cron import CronDir, journaling, parse_period
from slurmkit.cron.setup import init_cron_dir
from slurmkit.journal import read
from slurmkit.slurm import query, recheck
from tests.fakes import FakeSlurm
from tests.unit.test_cron_chain import USER, job_row, squeue

TIMED_OUT = (
    1,
    "",
    "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n",
)
SQUEUE_TIMED_OUT = (
    1,
    "",
    "squeue: error: slurm_receive_msg: Socket timed out on send/recv operation\n",
)


@pytest.fixture
def slurm(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeSlurm:
    """The shared fake Slurm, routes written without the journal's token (as test_cron_chain)."""
    fake = fake_slurm.ignore_args("--comment=slurmkit:")
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return fake


@pytest.fixture
def cron(tmp_path: Path) -> CronDir:
    made = CronDir(tmp_path / "cron")
    init_cron_dir(made, extra_periods=[parse_period("30m")])
    return made


@pytest.fixture(autouse=True)
def _no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recheck, "_PAUSE", 0.0)
    monkeypatch.setattr(recheck, "window", lambda env=None: 0.0)


def _sbatch(cron: CronDir, chain: str = "cron-30m") -> list[str]:
    return ["sbatch", "--parsable", f"--chdir={cron.scheduler}", str(cron.script(chain))]


def _entries(cron: CronDir) -> list[tuple[str, str, str]]:
    return [
        (e.kind, e.action, str(e.details.get("result", "")))
        for e in read(cron.root / "journal").entries
    ]


def test_a_timed_out_sbatch_whose_chain_was_queued_is_reported_started(
    run_cli, slurm: FakeSlurm, cron: CronDir
) -> None:
    slurm.answers(squeue(["cron-30m"]), "", job_row("60", "cron-30m"))
    slurm.answers(_sbatch(cron), TIMED_OUT)
    out = run_cli("cron", "start", "--dir", str(cron.root), "30m")
    assert "cron-30m: started, job 60" in out.stdout
    assert "no answer" in out.stderr
    (sbatch,) = [c for c in slurm.calls if c[0] == "sbatch"]
    (comment,) = [a for a in sbatch if a.startswith("--comment=slurmkit:")]
    entries = read(cron.root / "journal").entries
    assert [(e.kind, e.action) for e in entries] == [
        ("intent", "cron-start"),
        ("outcome", "cron-start"),
    ]
    assert comment == f"--comment=slurmkit:{entries[0].token}"
    assert entries[1].details["result"] == "done" and entries[1].details["jobs"] == ["60"]


def test_no_answer_at_all_leaves_the_intent_open_and_status_settles_it(
    run_cli, slurm: FakeSlurm, cron: CronDir
) -> None:
    slurm.answers(squeue(["cron-30m"]), "", SQUEUE_TIMED_OUT)
    slurm.answers(_sbatch(cron), TIMED_OUT)
    out = run_cli("cron", "start", "--dir", str(cron.root), "30m", exit_code=2)
    errors = out.stderr.strip().splitlines()
    assert errors[-1].startswith("slurmkit: sbatch of cron-30m got no answer")
    assert "Traceback" not in out.stderr and out.stdout == ""
    assert _entries(cron) == [("intent", "cron-start", "")]
    # slurmctld wakes up: it had queued the chain
    chains = ["cron-30m", "cron-hourly", "cron-daily"]
    slurm.answers(squeue(["cron-30m"]), job_row("60", "cron-30m"))
    slurm.answers(squeue(chains), job_row("60", "cron-30m"))
    out = run_cli("cron", "status", "--dir", str(cron.root), exit_code=1)
    assert (
        "settled what an earlier cron command left open: cron-30m start went through (job 60)"
        in out.stderr
    )
    assert _entries(cron)[-1] == ("outcome", "cron-start", "done")
    slurm.log.clear()
    out = run_cli("cron", "start", "--dir", str(cron.root), "30m")
    assert "already running (job 60)" in out.stdout and "settled" not in out.stderr
    assert not [c for c in slurm.calls if c[0] == "sbatch"]  # never a second chain


def test_killed_after_sbatch_the_next_start_settles_and_submits_nothing(
    run_cli, slurm: FakeSlurm, cron: CronDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm.answers(squeue(["cron-30m"]), "", job_row("61", "cron-30m"))
    slurm.answers(_sbatch(cron), "61\n")

    class Killed(BaseException):
        pass

    def die(name: str) -> None:
        if name == "cron.after-submit":
            raise Killed

    monkeypatch.setattr(faultpoint, "reached", die)
    with pytest.raises(Killed):
        run_cli("cron", "start", "--dir", str(cron.root), "30m", exit_code=None)
    assert _entries(cron) == [("intent", "cron-start", "")]
    monkeypatch.setattr(faultpoint, "reached", lambda name: None)
    out = run_cli("cron", "start", "--dir", str(cron.root), "30m")
    assert "cron-30m start went through (job 61)" in out.stderr
    assert "already running (job 61)" in out.stdout
    assert [c[0] for c in slurm.calls].count("sbatch") == 1


def test_a_journal_that_cannot_be_written_submits_nothing(
    run_cli, slurm: FakeSlurm, cron: CronDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    slurm.answers(squeue(["cron-30m"]), "")
    real = os.statvfs

    def full(path):
        st = real(path)
        return os.statvfs_result((st.f_bsize, st.f_frsize, st.f_blocks, 0, 0, *st[5:]))

    monkeypatch.setattr(os, "statvfs", full)
    out = run_cli("cron", "start", "--dir", str(cron.root), "30m", exit_code=2)
    assert (
        out.stderr.startswith("slurmkit: cannot write journal") and "nothing was done" in out.stderr
    )
    assert len(out.stderr.splitlines()) == 1
    assert not [c for c in slurm.calls if c[0] == "sbatch"]


def test_stop_whose_scancel_gets_no_answer_reads_the_queue_and_records_the_answer(
    run_cli, slurm: FakeSlurm, cron: CronDir
) -> None:
    slurm.answers(squeue(["cron-30m"]), job_row("70", "cron-30m"), "")
    slurm.answers(
        query.cancel_by_name_argv("cron-30m", USER),
        (1, "", "scancel: error: Socket timed out on send/recv operation\n"),
    )
    out = run_cli("cron", "stop", "--dir", str(cron.root), "30m", "--yes")
    assert "cron-30m: stopped (cancelled 70)" in out.stdout
    assert _entries(cron) == [("intent", "cron-stop", ""), ("outcome", "cron-stop", "done")]


def test_stop_with_no_answer_at_all_is_one_line_and_stays_open(
    run_cli, slurm: FakeSlurm, cron: CronDir
) -> None:
    slurm.answers(squeue(["cron-30m"]), job_row("70", "cron-30m"), SQUEUE_TIMED_OUT)
    slurm.answers(
        query.cancel_by_name_argv("cron-30m", USER),
        (1, "", "scancel: error: Socket timed out on send/recv operation\n"),
    )
    out = run_cli("cron", "stop", "--dir", str(cron.root), "30m", "--yes", exit_code=2)
    assert len(out.stderr.splitlines()) == 1 and "whether they stopped is unknown" in out.stderr
    assert _entries(cron) == [("intent", "cron-stop", "")]


def test_a_cron_dir_held_by_a_hung_command_is_waited_for_within_a_bound(
    run_cli, slurm: FakeSlurm, cron: CronDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journaling, "LOCK_WAIT", 0.1)
    slurm.answers(squeue(["cron-30m"]), "")
    with locks.hold(journaling.lock_path(cron), wait=0, what="test"):
        out = run_cli("cron", "start", "--dir", str(cron.root), "30m", exit_code=2)
    assert "is busy" in out.stderr.splitlines()[-1]  # after one "waiting up to" line
    assert slurm.calls == []
    assert json.dumps(_entries(cron)) == "[]"


def test_a_lock_on_a_full_file_system_still_locks_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pid written into a lock file is a hint: ENOSPC there used to be a traceback."""

    def full(fd: int, length: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "ftruncate", full)
    with (
        locks.hold(tmp_path / "x.lock", wait=0, what="test"),
        pytest.raises(locks.LockBusy),  # and it is a real lock
        locks.hold(tmp_path / "x.lock", wait=0, what="test"),
    ):
        pass


def test_a_busy_cron_dir_says_what_it_waits_for_then_gives_up(
    run_cli, slurm: FakeSlurm, cron: CronDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journaling, "LOCK_WAIT", 0.3)
    with locks.hold(journaling.lock_path(cron), wait=0, what="test"):
        out = run_cli("cron", "stop", "--dir", str(cron.root), "30m", "--yes", exit_code=2)
    waiting, busy = out.stderr.strip().splitlines()
    assert waiting.startswith("slurmkit: waiting up to 0.3 s for cron dir ")
    assert f"pid {os.getpid()}" in waiting and "is busy" in busy
    assert slurm.calls == []
