"""Rate limiting with a fixed clock and a tmp state file: alert once, remind, recover once.

Deliveries go to a ``cmd:`` target answered by a fake ``_proc.runner`` (the argv
seam), which records what each message said and can play a dead target.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from slurmkit import _proc
from slurmkit.notify import deliver, parse_target
from slurmkit.watch.alerting import process
from slurmkit.watch.finding import WatchFinding
from slurmkit.watch.ratelimit import KeyState, advance, decide

REAL_RUNNER = _proc.runner
T0 = datetime(2026, 3, 10, 12, 0, tzinfo=timezone.utc)
SIX_H = 6 * 3600
BAD = WatchFinding("fs", "fs:/d", "fs /d", False, "1.0T free of 10.0T: free space below 2.0T")
GOOD = WatchFinding("fs", "fs:/d", "fs /d", True, "5.0T free of 10.0T")


@pytest.mark.parametrize(
    ("prev", "finding", "minutes", "kind"),
    [
        (None, BAD, 0, "alert"),
        (None, GOOD, 0, None),
        (KeyState(T0, T0), BAD, 60, None),
        (KeyState(T0, T0), BAD, 359, None),
        (KeyState(T0, T0), BAD, 360, "reminder"),
        (KeyState(T0, None), BAD, 1, "alert"),  # never delivered: try again at once
        (KeyState(T0, T0), GOOD, 1, "recovery"),
        (KeyState(T0, None), GOOD, 1, None),  # nobody heard the alert: no recovery either
    ],
)
def test_decide(
    prev: KeyState | None, finding: WatchFinding, minutes: int, kind: str | None
) -> None:
    assert decide(prev, finding, T0 + timedelta(minutes=minutes), SIX_H) == kind


def test_advance() -> None:
    t1 = T0 + timedelta(hours=1)
    assert advance(None, BAD, T0, "alert", True) == KeyState(T0, T0, BAD.message)
    assert advance(None, BAD, T0, "alert", False) == KeyState(T0, None, BAD.message)
    assert advance(KeyState(T0, T0), BAD, t1, None, False) == KeyState(T0, T0, BAD.message)
    assert advance(KeyState(T0, T0), GOOD, t1, "recovery", True) is None
    assert advance(KeyState(T0, T0), GOOD, t1, "recovery", False) == KeyState(T0, T0)


class Pager:
    """A fake ``pager`` command: records each message, or plays dead."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, str]] = []
        self.down = False

    def __call__(self, argv, *, timeout, input, env, cwd) -> _proc.Completed:
        if argv[0] == sys.executable:  # the watchdog's own stat probe runs for real
            return REAL_RUNNER(argv, timeout=timeout, input=input, env=env, cwd=cwd)
        assert list(argv) == ["pager", "--to", "ops team"], argv
        if self.down:
            return _proc.Completed(tuple(argv), 3, "", "pager: connection refused\n", 0.1)
        self.messages.append((env["SLURMKIT_ALERT_KIND"], input))
        return _proc.Completed(tuple(argv), 0, "", "", 0.1)


@pytest.fixture
def pager(monkeypatch: pytest.MonkeyPatch) -> Pager:
    fake = Pager()
    monkeypatch.setattr(_proc, "runner", fake)
    return fake


def run(finding: WatchFinding, minutes: float, state: Path):
    return process(
        [finding],
        [parse_target("cmd:pager --to 'ops team'")],
        state_path=state,
        realert=SIX_H,
        send=deliver,
        now=T0 + timedelta(minutes=minutes),
        host="login1",
    )


def test_alert_once_remind_after_realert_recover_once(pager: Pager, tmp_path: Path) -> None:
    state = tmp_path / "state" / "watch.json"
    assert run(BAD, 0, state).exit_code == 1
    assert run(BAD, 30, state).suppressed == ["fs:/d"]
    assert run(BAD, 361, state).sent[0].kind == "reminder"
    assert run(GOOD, 400, state).exit_code == 0
    assert run(GOOD, 410, state).sent == []
    assert [kind for kind, _ in pager.messages] == ["alert", "reminder", "recovery"]
    alert, reminder, recovery = (text for _, text in pager.messages)
    assert alert.splitlines()[0] == "[slurmkit] ALERT: fs /d"
    assert "1.0T free of 10.0T: free space below 2.0T" in alert
    assert "host: login1" in alert and "time: 2026-03-10T12:00:00+00:00" in alert
    assert reminder.splitlines()[0] == "[slurmkit] STILL FAILING: fs /d"
    assert "failing since: 2026-03-10T12:00:00+00:00" in reminder
    assert recovery.splitlines()[0] == "[slurmkit] RECOVERED: fs /d"
    assert json.loads(state.read_text())["keys"] == {}


def test_a_dead_target_is_retried_next_run_and_the_exit_code_still_alerts(
    pager: Pager, tmp_path: Path
) -> None:
    state = tmp_path / "watch.json"
    pager.down = True
    report = run(BAD, 0, state)
    assert report.exit_code == 1
    assert report.failures == ["cmd:pager --to 'ops team': exited 3: pager: connection refused"]
    pager.down = False
    assert run(BAD, 1, state).sent[0].kind == "alert"  # not rate-limited: nobody got it
    pager.down = True
    assert run(GOOD, 2, state).sent[0].kind == "recovery"
    pager.down = False
    assert run(GOOD, 3, state).sent[0].kind == "recovery"  # announced once it gets through
    assert run(GOOD, 4, state).sent == []
    assert [k for k, _ in pager.messages] == ["alert", "recovery"]


def test_keys_are_independent(pager: Pager, tmp_path: Path) -> None:
    state = tmp_path / "watch.json"
    run(BAD, 0, state)
    other = WatchFinding("log", "log:/l", "log /l", False, "stale")
    report = process([BAD, other], [parse_target("cmd:pager --to 'ops team'")],
                     state_path=state, realert=SIX_H, send=deliver, now=T0)  # fmt: skip
    assert [s.key for s in report.sent] == ["log:/l"] and report.suppressed == ["fs:/d"]


def test_no_targets_no_state(tmp_path: Path) -> None:
    report = process([BAD], [], state_path=tmp_path / "s.json", realert=0, send=deliver, now=T0)
    assert report.exit_code == 1 and not (tmp_path / "s.json").exists()


def test_an_unusable_state_file_means_alerts_without_rate_limit(pager: Pager, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    report = run(BAD, 0, blocker / "state.json")
    assert report.state_error and "state file" in report.state_error
    assert [k for k, _ in pager.messages] == ["alert"]


def test_a_corrupt_state_file_is_started_afresh(pager: Pager, tmp_path: Path) -> None:
    state = tmp_path / "watch.json"
    state.write_text("{garbage")
    assert run(BAD, 0, state).sent[0].kind == "alert"
    assert "fs:/d" in json.loads(state.read_text())["keys"]


def test_cli_notify_failure_is_on_stderr_and_exit_is_still_1(
    run_cli, pager: Pager, tmp_path: Path
) -> None:
    pager.down = True
    log = tmp_path / "train.log"
    log.write_text("")
    os.utime(log, (0, 0))
    out = run_cli("watch", "log", str(log), "--stale", "1m", "--notify",
                  "cmd:pager --to 'ops team'", "--state", str(tmp_path / "s.json"),
                  exit_code=1)  # fmt: skip
    assert out.stdout.startswith(f"ALERT log {log}: last written")
    assert "slurmkit: notify cmd:pager --to 'ops team' failed: " in out.stderr
    assert "exited 3: pager: connection refused" in out.stderr


# ---------------------------------------------------------------- issue 22: faults


def test_a_state_that_cannot_be_saved_still_rate_limited_this_run(
    run_cli, pager: Pager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old message said "alerts not rate-limited" although the reminder was held back."""
    from slurmkit.watch import ratelimit

    log = tmp_path / "train.log"
    log.write_text("")
    os.utime(log, (0, 0))
    args = ("watch", "log", str(log), "--stale", "1m", "--notify", "cmd:pager --to 'ops team'",
            "--state", str(tmp_path / "s.json"))  # fmt: skip
    run_cli(*args, exit_code=1)
    assert [k for k, _ in pager.messages] == ["alert"]

    def full(self) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ratelimit.StateFile, "_save", full)
    out = run_cli(*args, exit_code=1)
    assert [k for k, _ in pager.messages] == ["alert"]  # the reminder was held back
    assert "not rate-limited" not in out.stderr
    assert "alerts were rate-limited" in out.stderr and "could not be saved" in out.stderr
    assert "No space left" in out.stderr


def test_an_unreadable_state_says_alerts_were_not_rate_limited(
    run_cli, pager: Pager, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    log = tmp_path / "train.log"
    log.write_text("")
    os.utime(log, (0, 0))
    out = run_cli("watch", "log", str(log), "--stale", "1m", "--notify",
                  "cmd:pager --to 'ops team'", "--state", str(blocker / "s.json"),
                  exit_code=1)  # fmt: skip
    assert "alerts not rate-limited" in out.stderr


def test_a_state_lock_held_by_a_hung_watchdog_is_waited_for_within_a_bound(
    pager: Pager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A suspended watchdog holding the lock used to block every other one for ever."""
    import threading

    from slurmkit import locks
    from slurmkit.watch import ratelimit

    monkeypatch.setattr(ratelimit, "LOCK_WAIT", 0.2, raising=False)
    state = tmp_path / "watch.json"
    done: list[object] = []
    with locks.hold(state.with_name(state.name + ".lock"), wait=0, what="test"):
        worker = threading.Thread(target=lambda: done.append(run(BAD, 0, state)), daemon=True)
        worker.start()
        worker.join(timeout=20)
        assert not worker.is_alive(), "watch waited without end for the state lock"
    (report,) = done
    assert report.state_error and "busy" in report.state_error
    assert not report.rate_limited and [k for k, _ in pager.messages] == ["alert"]


def test_the_state_is_saved_by_the_shared_atomic_writer_private_and_a_full_disk_is_an_oserror(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 15: one atomic writer (fsync'ed); the state stays 0600; a full disk is an OSError."""
    from slurmkit import files
    from slurmkit.watch import ratelimit

    written: list[Path] = []
    real = files.write_atomic

    def recording(path, text, **kw):  # type: ignore[no-untyped-def]
        written.append(Path(path))
        return real(path, text, **kw)

    monkeypatch.setattr(files, "write_atomic", recording)
    state = ratelimit.StateFile(tmp_path / "s.json")
    state.acquire()
    state.keys["fs:/d"] = KeyState(T0, T0)
    state.release()
    assert written == [tmp_path / "s.json"]
    assert (tmp_path / "s.json").stat().st_mode & 0o777 == 0o600
    assert "fs:/d" in json.loads((tmp_path / "s.json").read_text())["keys"]

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    state.acquire()
    with pytest.raises(OSError, match="No space left"):
        state.release()
