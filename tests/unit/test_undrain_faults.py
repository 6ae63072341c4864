"""undrain when Slurm does not answer, when it is killed, when its log fails (issue 22).

The fake slurmctld of ``test_undrain_flow`` learns to be silent the way a hung
(SIGSTOPped) one is: the client gets "Socket timed out" while the change is still
carried out. Each test failed before its fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit import _proc, faultpoint
from slurmkit.nodechange import auditlog
from slurmkit.slurm import recheck
from slurmkit.undrain import undrain
from tests.fakes import Call, FakeSlurm
from tests.unit.nodelog_lines import actions, fields, new_line, old_line
from tests.unit.test_undrain_flow import Cluster, _drained, _opts, _yes

TIMED_OUT = (
    "scontrol: error: slurm_receive_msg: Socket timed out on send/recv operation\n"
    "slurm_update error: Socket timed out on send/recv operation\n"
)


class HungCluster(Cluster):
    """Applies the update but answers it with a timeout, then stays silent ``silent_reads``."""

    silent_reads: int = 0
    silent_updates: bool = True

    def _answer(self, argv: list[str]) -> tuple[int, str, str]:
        if argv[:2] == ["scontrol", "update"] and self.silent_updates:
            super()._answer(argv)  # slurmctld carries it out when it wakes up
            return 1, "", TIMED_OUT
        is_show = argv[0] == "scontrol" and "show" in argv
        if is_show and self.slurm_calls("update") and self.silent_reads > 0:
            self.silent_reads -= 1
            return 1, "", TIMED_OUT
        return super()._answer(argv)


@pytest.fixture
def hung(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> HungCluster:
    cluster = HungCluster(fake_slurm)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setattr(recheck, "_PAUSE", 0.0)
    return cluster


def _actions(log: Path) -> list[str]:
    return actions(log)


def _fields(line: str) -> dict[str, str]:
    return fields(line)


def test_a_timed_out_update_that_went_through_is_reported_returned(
    hung: HungCluster, tmp_path: Path
) -> None:
    _drained(hung, 2)
    hung.silent_reads = 1  # still hung right after the update, answers on the next read
    log = tmp_path / "actions.log"
    notes: list[str] = []
    report = undrain(_opts(tmp_path, log=log, notify=notes.append), _yes)
    assert [o.action for o in report.outcomes] == ["returned", "returned"]
    assert all("no answer" in o.why for o in report.outcomes)
    assert _actions(log) == ["will-undrain", "will-undrain", "undrain", "undrain"]
    assert "undrain-failed" not in log.read_text()
    assert any("reading the state of node-[1-2] again" in n for n in notes)
    lines = log.read_text().splitlines()
    assert _fields(lines[0])["token"] == _fields(lines[2])["token"]  # intent and outcome paired


def test_a_timed_out_update_that_did_not_apply_is_still_drained(
    hung: HungCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _drained(hung, 1)
    monkeypatch.setattr(HungCluster, "_update", lambda self, argv: (0, "", ""))  # lost
    log = tmp_path / "actions.log"
    report = undrain(_opts(tmp_path, log=log), _yes)
    (o,) = report.outcomes
    assert o.action == "not returned" and "read back: still drained" in o.why
    assert _actions(log) == ["will-undrain", "undrain-failed"]
    assert report.exit_code == 1 and report.error == ""  # a checked answer: done, with findings


def test_no_answer_at_all_is_unknown_never_failed_and_the_next_run_settles_it(
    hung: HungCluster, tmp_path: Path
) -> None:
    _drained(hung, 2)
    hung.silent_reads = 1000
    log = tmp_path / "actions.log"
    report = undrain(_opts(tmp_path, log=log, recheck_within=0.0), _yes)
    assert [o.action for o in report.outcomes] == ["unknown: no answer from Slurm"] * 2
    assert report.exit_code == 2 and "unknown" in report.error and "--log" in report.error
    assert _actions(log) == ["will-undrain"] * 2 + ["undrain-unknown"] * 2
    assert [i.nodes for i in auditlog.open_intents(log)] == [("node-1", "node-2")]
    # slurmctld wakes up (it had applied the update); the next run settles the intent
    hung.silent_reads = 0
    notes: list[str] = []
    again = undrain(_opts(tmp_path, log=log, notify=notes.append), _yes)
    assert again.outcomes == []  # nothing drained any more
    assert again.reconciled == [
        "node-1 undrain done: not drained (now IDLE)",
        "node-2 undrain done: not drained (now IDLE)",
    ]
    assert _actions(log)[-2:] == ["undrain", "undrain"]
    assert all(_fields(ln)["reconciled"] == "yes" for ln in log.read_text().splitlines()[-2:])
    assert auditlog.open_intents(log) == []
    assert len(notes) == 1 and "settled what an earlier run left open" in notes[0]


def test_a_run_killed_after_the_update_is_settled_by_the_next_run(
    hung: HungCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The faultpoint sits between the change and its outcome line."""
    hung.silent_updates = False
    _drained(hung, 2)
    log = tmp_path / "actions.log"

    class Killed(BaseException):
        pass

    def die(name: str) -> None:
        if name == "undrain.after-update":
            raise Killed
        assert name == "undrain.after-intent"

    monkeypatch.setattr(faultpoint, "reached", die)
    with pytest.raises(Killed):
        undrain(_opts(tmp_path, log=log), _yes)
    monkeypatch.undo()
    monkeypatch.setattr(_proc, "runner", hung.slurm)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert _actions(log)[:2] == ["will-undrain", "will-undrain"]
    # (the finally of the killed frame may not run on a real kill -9: drop what it wrote)
    lines = [ln for ln in log.read_text().splitlines() if '"action":"will-' in ln]
    log.write_text("".join(ln + "\n" for ln in lines))
    hung.nodes["node-2"] = ("IDLE+DRAIN", "Kill task failed")  # an admin drained it again
    hung.leftovers["node-2"] = ["sleep 600"]  # and it is not clean now
    notes: list[str] = []
    report = undrain(_opts(tmp_path, log=log, notify=notes.append), _yes)
    first, second = report.reconciled
    assert first == "node-1 undrain done: not drained (now IDLE)"
    assert second.startswith("node-2 undrain not done: the drain of")
    assert second.endswith("is still there (now IDLE+DRAIN)")
    assert _actions(log)[2:4] == ["undrain", "undrain-failed"]
    assert len(notes) == 1
    assert auditlog.open_intents(log) == []


def test_a_killed_kill_is_settled_as_interrupted(
    hung: HungCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hung.silent_updates = False
    _drained(hung, 1)
    hung.leftovers["node-1"] = ["sleep 600"]
    log = tmp_path / "actions.log"

    def die(name: str) -> None:
        if name == "undrain.after-kill":
            raise KeyboardInterrupt

    monkeypatch.setattr(faultpoint, "reached", die)
    with pytest.raises(KeyboardInterrupt):
        undrain(_opts(tmp_path, log=log, kill=True, grace=0), _yes)
    assert _actions(log) == ["will-kill"]
    monkeypatch.setattr(faultpoint, "reached", lambda name: None)
    report = undrain(_opts(tmp_path, log=log, kill=True, grace=0), _yes)
    assert report.reconciled == ["node-1 kill interrupted (checked again now)"]
    assert _actions(log)[1] == "kill-interrupted"
    assert report.outcomes[0].returned  # checked afresh: the leftovers were gone


def test_settling_waits_for_an_answer_and_keeps_intents_open_without_one(
    hung: HungCluster, tmp_path: Path
) -> None:
    log = tmp_path / "actions.log"
    log.write_text(old_line("node-1", "will-undrain", before="IDLE+DRAIN", token="abc"))
    hung.nodes["node-1"] = ("IDLE", None)
    hung.slurm.log.append(Call(("scontrol", "update")))  # make the fake silent for reads
    hung.silent_reads = 1000
    with pytest.raises(Exception, match="Socket timed out"):
        undrain(_opts(tmp_path, log=log), _yes)
    assert [i.token for i in auditlog.open_intents(log)] == ["abc"]


def test_a_log_that_fails_mid_run_still_prints_the_table_and_exits_2(
    hung: HungCluster, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hung.silent_updates = False
    _drained(hung, 1)
    log = tmp_path / "actions.log"

    def full(self, lines) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(auditlog.AuditLog, "_write", full)
    result = run_cli(
        "undrain", "--yes", "--log", str(log), "--lock", str(tmp_path / "l"), exit_code=2
    )
    assert "node-1" in result.stdout and "not returned" in result.stdout  # the table
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("slurmkit: ")]
    assert len(errors) == 1 and "No space left" in errors[0] and "Traceback" not in result.stderr
    assert not hung.slurm_calls("update") and hung.nodes["node-1"][0] == "IDLE+DRAIN"


def test_a_log_that_fails_after_the_update_says_the_nodes_were_returned(
    hung: HungCluster, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hung.silent_updates = False
    _drained(hung, 1)
    log = tmp_path / "actions.log"
    real = auditlog.AuditLog._write

    def full_after_intent(self, lines) -> None:
        if any(e.action.startswith("will-") for e in lines):
            return real(self, lines)
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(auditlog.AuditLog, "_write", full_after_intent)
    result = run_cli(
        "undrain", "--yes", "--log", str(log), "--lock", str(tmp_path / "l"), exit_code=2
    )
    assert "returned" in result.stdout and "not returned" not in result.stdout
    assert "Read-only" in result.stderr and len(result.stderr.splitlines()) == 1
    assert hung.nodes["node-1"][0] == "IDLE"


def test_a_full_log_is_refused_before_anything_is_done(
    hung: HungCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from slurmkit.errors import SlurmkitError

    _drained(hung, 1)
    real = os.fstatvfs

    def nearly_full(fd: int):
        st = real(fd)
        return os.statvfs_result((st.f_bsize, st.f_frsize, st.f_blocks, 0, 0, *st[5:]))

    monkeypatch.setattr(os, "fstatvfs", nearly_full)
    with pytest.raises(SlurmkitError, match="no space left") as err:
        undrain(_opts(tmp_path, log=tmp_path / "actions.log"), _yes)
    assert err.value.exit_code == 2 and hung.calls == []


def test_read_again_is_bounded_and_retries_only_silence() -> None:
    from slurmkit.errors import ControllerUnreachable, PermissionDenied

    now = [0.0]
    calls: list[int] = []

    def silent() -> None:
        calls.append(1)
        now[0] += 10.0  # each call costs one MessageTimeout
        raise ControllerUnreachable("scontrol: cannot reach slurmctld: Socket timed out")

    answer, error = recheck.read_again(
        silent, what="x", within=20.0, sleep=lambda s: None, clock=lambda: now[0]
    )
    assert answer is None and isinstance(error, ControllerUnreachable)
    assert len(calls) == 2 and now[0] <= 20.0 + 10.0  # one MessageTimeout past the bound at most

    def refused() -> None:
        calls.append(1)
        raise PermissionDenied("no")

    calls.clear()
    assert recheck.read_again(refused, what="x", sleep=lambda s: None)[1] is not None
    assert len(calls) == 1
    assert not recheck.no_answer(
        ControllerUnreachable("Unable to contact slurm controller (connect failure)")
    )
    assert recheck.no_answer(ControllerUnreachable("'scontrol update' did not answer within 60 s"))

    calls.clear()  # settling an old intent: "not yet" is read again, a silence is not
    now[0] = 0.0
    answer, error = recheck.read_again(
        silent, what="x", within=20.0, sleep=lambda s: None, clock=lambda: now[0],
        until=bool, retry_silence=False,
    )  # fmt: skip
    assert answer is None and isinstance(error, ControllerUnreachable) and len(calls) == 1


def test_read_again_until_keeps_looking_for_what_the_backlog_may_still_do() -> None:
    """A woken controller can answer squeue before it runs the sbatch still in its backlog
    (seen live on 25.11: "not in the queue", then the chain was): with ``until``, absent is
    read again for the whole window, and present ends the wait at once."""
    now = [0.0]

    def tick(seconds: float) -> None:
        now[0] += seconds

    answers = iter([[], [], ["42"]])
    found, error = recheck.read_again(
        lambda: next(answers), what="q", within=20.0, sleep=tick, clock=lambda: now[0], until=bool
    )
    assert found == ["42"] and error is None and now[0] == 2.0

    reads: list[int] = []

    def never() -> list[str]:
        reads.append(1)
        return []

    now[0] = 0.0
    found, error = recheck.read_again(
        never, what="q", within=5.0, sleep=tick, clock=lambda: now[0], until=bool
    )
    assert found == [] and error is None  # the answer, after the whole window
    assert len(reads) == 5 and now[0] == 4.0
    # without ``until`` the first answer is the answer, as before
    assert recheck.read_again(lambda: [], what="q", sleep=tick, clock=lambda: now[0]) == ([], None)


def test_without_log_undrain_journals_in_the_users_actions_log(
    hung: HungCluster, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no --log a run killed after its update used to leave no intent anywhere: the
    default log ($XDG_STATE_HOME/slurmkit/actions.log) gets the intent before the update."""
    hung.silent_updates = False
    _drained(hung, 1)
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    run_cli("undrain", "--yes", "--lock", str(tmp_path / "l"))
    log = state / "slurmkit" / "actions.log"
    assert _actions(log) == ["will-undrain", "undrain"]
    assert hung.nodes["node-1"][0] == "IDLE"


def test_a_node_commands_open_intent_in_the_shared_log_is_left_to_it(
    hung: HungCluster, run_cli, tmp_path: Path
) -> None:
    """undrain and the node commands share the default actions.log: undrain neither settles
    nor reports a killed ``node drain``'s open intent; the node commands do."""
    hung.silent_updates = False
    _drained(hung, 1)
    log = tmp_path / "actions.log"
    log.write_text(new_line("node-3", "will-drain", before="IDLE", token="n1"))
    result = run_cli("undrain", "--yes", "--log", str(log), "--lock", str(tmp_path / "l"))
    assert "settled" not in result.stderr
    assert [i.action for i in auditlog.open_intents(log)] == ["will-drain"]
