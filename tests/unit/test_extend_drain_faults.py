"""``job extend`` and ``faulty scan --drain`` when slurmctld does not answer or slurmkit is
killed between the change and its record (issue 22). Each test failed before its fix."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from slurmkit import faultpoint
from slurmkit.errors import ControllerUnreachable
from slurmkit.faulty import drain
from slurmkit.faulty.report import DrainOutcome
from slurmkit.jobenv import timelimit
from slurmkit.journal import Journal, read
from slurmkit.nodechange import auditlog
from slurmkit.slurm import recheck
from tests.fakes import Call, FakeSlurm
from tests.unit.test_cli_job import SHOW3, UPDATE, _limited
from tests.unit.test_faulty_scan import CheckJobCluster

TIMED_OUT = "slurm_update error: Socket timed out on send/recv operation\n"
SHOW_TIMED_OUT = "slurm_load_jobs error: Socket timed out on send/recv operation\n"


@pytest.fixture(autouse=True)
def _no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recheck, "_PAUSE", 0.0)
    monkeypatch.setattr(recheck, "window", lambda env=None: 0.0)


@dataclass
class HungJob:
    """Job 3 on a slurmctld that stops answering, played through the shared fake Slurm:
    ``show job 3`` prints ``shows`` in turn (the last repeats); the update is applied but
    answered with a timeout; after it, ``silent_shows`` reads time out too."""

    slurm: FakeSlurm
    shows: list[str] = field(default_factory=list)
    silent_shows: int = 0

    def __post_init__(self) -> None:
        self.slurm.on(["scontrol", "update", "**"], rc=1, stderr=TIMED_OUT)
        self.slurm.on(SHOW3, answer=self._show)

    def _show(self, call: Call) -> tuple[int, str, str]:
        if UPDATE in self.slurm.calls and self.silent_shows > 0:
            self.silent_shows -= 1
            return 1, "", SHOW_TIMED_OUT
        return 0, self.shows.pop(0) if len(self.shows) > 1 else self.shows[0], ""


@pytest.fixture
def job_slurm(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch) -> HungJob:
    for name in list(os.environ):
        if name.startswith("SLURM_"):
            monkeypatch.delenv(name)
    return HungJob(fake_slurm)


def _journal_entries(path: Path) -> list[tuple[str, str]]:
    return [(e.kind, str(e.details.get("result", ""))) for e in read(path).entries]


def test_extend_that_timed_out_but_went_through_says_so(run_cli, job_slurm: HungJob) -> None:
    job_slurm.shows = [_limited("00:05:00"), _limited("00:07:00")]
    result = run_cli("job", "extend", "3", "+2m", "--yes")
    assert result.stdout == "job 3: time limit 00:05:00 -> 00:07:00\n"
    assert "no answer" in result.stderr
    assert _journal_entries(timelimit.journal_path()) == [("intent", ""), ("outcome", "done")]


def test_extend_without_any_answer_is_unknown_and_the_next_extend_settles_it(
    run_cli, job_slurm: HungJob
) -> None:
    job_slurm.shows = [_limited("00:05:00"), _limited("00:07:00")]
    job_slurm.silent_shows = 100
    result = run_cli("job", "extend", "3", "+2m", "--yes", exit_code=2)
    (line,) = result.stderr.strip().splitlines()[-1:]
    assert "unknown" in line and "job 3" in line and "Traceback" not in result.stderr
    assert _journal_entries(timelimit.journal_path()) == [("intent", "")]
    job_slurm.silent_shows = 0
    job_slurm.shows = [_limited("00:07:00")]
    result = run_cli("job", "extend", "3", "+2m", "--dry-run")
    assert "would run" in result.stdout and "00:07:00 -> 00:09:00" in result.stdout
    assert "job 3: the earlier extend 00:05:00 -> 00:07:00 went through" in result.stderr
    assert _journal_entries(timelimit.journal_path()) == [("intent", "")]  # a dry run records not
    job_slurm.shows = [_limited("00:07:00"), _limited("00:07:00"), _limited("00:09:00")]
    result = run_cli("job", "extend", "3", "+2m", "--yes")
    assert "went through" in result.stderr
    assert result.stdout == "job 3: time limit 00:07:00 -> 00:09:00\n"
    assert [r for _, r in _journal_entries(timelimit.journal_path())] == ["", "done", "", "done"]


def test_extend_killed_after_the_update_is_settled_next_time(
    run_cli, job_slurm: HungJob, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_slurm.shows = [_limited("00:05:00"), _limited("00:07:00")]

    def die(name: str) -> None:
        if name == "job-extend.after-update":
            raise KeyboardInterrupt

    monkeypatch.setattr(faultpoint, "reached", die)
    run_cli("job", "extend", "3", "+2m", "--yes", exit_code=130)
    assert _journal_entries(timelimit.journal_path()) == [("intent", "")]
    monkeypatch.setattr(faultpoint, "reached", lambda name: None)
    job_slurm.shows = [_limited("00:07:00"), _limited("00:07:00"), _limited("00:08:00")]
    result = run_cli("job", "extend", "3", "+1m", "--yes")
    assert "the earlier extend 00:05:00 -> 00:07:00 went through" in result.stderr
    assert _journal_entries(timelimit.journal_path())[1] == ("outcome", "done")


def test_extend_with_a_journal_that_cannot_be_written_changes_nothing(
    run_cli, job_slurm: HungJob, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_slurm.shows = [_limited("00:05:00")]
    real = os.statvfs

    def full(path):
        st = real(path)
        return os.statvfs_result((st.f_bsize, st.f_frsize, st.f_blocks, 0, 0, *st[5:]))

    monkeypatch.setattr(os, "statvfs", full)
    result = run_cli("job", "extend", "3", "+2m", "--yes", exit_code=2)
    assert "cannot write journal" in result.stderr and len(result.stderr.splitlines()) == 1
    assert UPDATE not in job_slurm.slurm.calls


# ---------------------------------------------------------------- faulty scan --drain


class HungScanSlurm(CheckJobCluster):
    silent_reads: int = 0

    def _answer(self, argv: list[str]) -> tuple[int, str, str]:
        if argv[:2] == ["scontrol", "update"]:
            super()._answer(argv)
            return 1, "", TIMED_OUT
        updated = any(c[:2] == ["scontrol", "update"] for c in self.calls)
        if argv[:2] == ["scontrol", "--all"] and self.silent_reads > 0 and updated:
            self.silent_reads -= 1
            return 1, "", "scontrol: error: Socket timed out on send/recv operation\n"
        return super()._answer(argv)


@pytest.fixture
def scan_slurm(fake_slurm: FakeSlurm) -> HungScanSlurm:
    return HungScanSlurm(fake_slurm)


def _plan() -> DrainOutcome:
    outcome = DrainOutcome(dry_run=False)
    outcome.groups["slurmkit: python failed"] = ["node-2", "node-3"]
    return outcome


def _actions(path: Path) -> list[tuple[str, str]]:
    return [(r.node, r.action) for r in auditlog.read(path)]


def test_a_drain_that_timed_out_but_went_through_is_reported_drained(
    scan_slurm: HungScanSlurm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recheck, "window", lambda env=None: 5.0)  # (no pause: asked again at once)
    scan_slurm.silent_reads = 1
    log = tmp_path / "actions.log"
    notes: list[str] = []
    done = drain.execute(_plan(), lambda o: True, log=log, notify=notes.append)
    assert done.done and done.states == {"node-2": "IDLE+DRAIN", "node-3": "IDLE+DRAIN"}
    assert _actions(log) == [
        ("node-2", "will-drain"), ("node-3", "will-drain"), ("node-2", "drain"), ("node-3", "drain")
    ]  # fmt: skip
    assert any("no answer" in n for n in notes)


def test_a_drain_without_any_answer_stays_open_and_the_next_drain_settles_it(
    scan_slurm: HungScanSlurm, tmp_path: Path
) -> None:
    scan_slurm.silent_reads = 100
    log = tmp_path / "actions.log"
    with pytest.raises(ControllerUnreachable, match="unknown"):
        drain.execute(_plan(), lambda o: True, log=log, notify=lambda n: None)
    assert [i.nodes for i in auditlog.open_intents(log)] == [("node-2", "node-3")]
    scan_slurm.silent_reads = 0
    notes: list[str] = []
    drain.execute(DrainOutcome(dry_run=False), lambda o: True, log=log, notify=notes.append)
    assert auditlog.open_intents(log) == []
    assert _actions(log)[-2:] == [("node-2", "drain"), ("node-3", "drain")]
    assert len(notes) == 1 and "node-2 drain done" in notes[0]


def test_a_run_with_nothing_left_to_drain_still_settles_the_killed_runs_intent(
    scan_slurm: HungScanSlurm, tmp_path: Path
) -> None:
    """The node a killed run drained is planned "already drained" by the next scan, so the
    next run has no group to drain: it must settle the open intent all the same (the live
    fault suite found it left open for good)."""
    scan_slurm.silent_reads = 100
    log = tmp_path / "actions.log"
    with pytest.raises(ControllerUnreachable):
        drain.execute(_plan(), lambda o: True, log=log, notify=lambda n: None)
    scan_slurm.silent_reads = 0
    notes: list[str] = []
    asked: list[DrainOutcome] = []
    nothing = DrainOutcome(dry_run=False)
    done = drain.execute(nothing, asked.append, log=log, notify=notes.append)
    assert not done.done and asked == []  # nothing to drain, nobody asked
    assert auditlog.open_intents(log) == []
    assert len(notes) == 1 and "node-3 drain done" in notes[0]


def test_a_drain_intent_an_older_slurmkit_left_open_is_still_settled(
    scan_slurm: HungScanSlurm, tmp_path: Path
) -> None:
    drain.journal_path().parent.mkdir(parents=True)
    old = Journal(drain.journal_path())
    old.intent("drain", nodes="node-[2-3]", groups={})
    scan_slurm.nodes["node-2"] += "+DRAIN"
    notes: list[str] = []
    drain.execute(
        DrainOutcome(dry_run=False), lambda o: True, log=tmp_path / "a.log", notify=notes.append
    )
    assert _journal_entries(old.path)[-1] == ("outcome", "partial")
    assert any("node-2 drained, node-3 not drained" in n for n in notes)


def test_a_dry_run_settles_nothing_and_writes_no_log(tmp_path: Path) -> None:
    log = tmp_path / "actions.log"
    drain.execute(DrainOutcome(dry_run=True), lambda o: True, log=log)
    assert not log.exists()
