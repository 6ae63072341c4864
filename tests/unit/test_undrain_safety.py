"""undrain as root from cron must never act on the wrong thing (issue 14).

Each test reproduces one finding of the review at the ``_proc`` seam (the fake
cluster of ``test_undrain_flow``) and failed before its fix.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from slurmkit import locks
from slurmkit.errors import EnvironmentProblem
from slurmkit.undrain import undrain
from tests.fakes import FakeSlurm
from tests.unit.nodelog_lines import fields, node_actions
from tests.unit.test_undrain_flow import Cluster, _drained, _opts, _yes

NOBODY = 65534


@pytest.fixture
def fake(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cluster:
    """The slurmctld + pdsh of test_undrain_flow, played through the shared fake Slurm."""
    cluster = Cluster(fake_slurm)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return cluster


# ---------------------------------------------------------------- finding 9: the lock


@pytest.mark.skipif(os.geteuid() != 0, reason="the squat is on root's lock")
def test_a_lock_another_user_holds_in_tmp_no_longer_blocks_root(
    fake: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old default, /tmp/slurmkit-undrain-0.lock, created and held by nobody."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)  # as under cron
    # root's real lock dir may be in use by a live undrain (an integration run): use our own
    monkeypatch.setattr(locks, "ROOT_LOCK_DIR", tmp_path / "run-slurmkit")
    squat = Path("/tmp/slurmkit-undrain-0.lock")
    created = not squat.exists()
    holder = subprocess.Popen(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--",
         "flock", str(squat), "sh", "-c", "echo held; exec sleep 60"],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        _drained(fake, 1)
        report = undrain(_opts(tmp_path, lock=None), _yes)
        assert report.exit_code == 0 and report.outcomes[0].returned
        path = locks.default_lock_path("undrain")
        assert path.parent == locks.ROOT_LOCK_DIR and path.parent.stat().st_uid == 0
    finally:
        holder.kill()
        holder.wait()
        if created:
            squat.unlink(missing_ok=True)


def test_a_symlink_at_the_lock_path_is_refused(fake: Cluster, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "undrain.lock"
    link.symlink_to(victim)
    _drained(fake, 1)
    with pytest.raises(EnvironmentProblem, match="symbolic link") as err:
        undrain(_opts(tmp_path, lock=link), _yes)
    assert err.value.exit_code == 2
    assert fake.calls == [] and victim.read_text() == "precious\n"


def test_the_duplicate_lock_module_is_gone() -> None:
    with pytest.raises(ModuleNotFoundError):
        __import__("slurmkit.undrain.lock")


# ---------------------------------------------------------------- finding 11: --log first


def _bad_logs(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "a-dir").mkdir()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link.log"
    link.symlink_to(tmp_path / "elsewhere.log")
    return {
        "missing dir": tmp_path / "no" / "such" / "dir.log",
        "a directory": tmp_path / "a-dir",
        "a fifo": fifo,
        "a symlink": link,
    }


@pytest.mark.parametrize("kind", ["missing dir", "a directory", "a fifo", "a symlink"])
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_bad_log_path_is_refused_before_anything_is_done(
    fake: Cluster, tmp_path: Path, kind: str, dry_run: bool
) -> None:
    from slurmkit.errors import SlurmkitError

    _drained(fake, 2)
    fake.leftovers["node-2"] = ["sleep 600"]
    log = _bad_logs(tmp_path)[kind]
    with pytest.raises(SlurmkitError, match="--log") as err:
        undrain(_opts(tmp_path, log=log, kill=True, grace=0, dry_run=dry_run), _yes)
    assert err.value.exit_code == 2
    assert fake.calls == []  # not even a query: nothing done
    assert not (tmp_path / "elsewhere.log").exists()


def test_cli_bad_log_is_one_line_exit_2(fake: Cluster, run_cli, tmp_path: Path) -> None:
    _drained(fake, 1)
    bad = tmp_path / "no" / "dir.log"
    result = run_cli(
        "undrain", "--yes", "--log", str(bad), "--lock", str(tmp_path / "l"), exit_code=2
    )
    assert result.stderr.startswith("slurmkit: ") and len(result.stderr.splitlines()) == 1
    assert "--log" in result.stderr and result.stdout == ""
    assert fake.calls == [] and fake.nodes["node-1"][0] == "IDLE+DRAIN"


def test_the_log_says_what_will_be_done_before_doing_it(
    fake: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each state change is preceded by its intent line, on disk (fsync), and followed by
    its outcome: a run killed in between still leaves the trail of what it started."""
    _drained(fake, 2)
    fake.leftovers["node-2"] = ["sleep 600"]
    log = tmp_path / "actions.log"
    seen_at_change: dict[str, list[str]] = {}
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    answer = fake._answer

    def spy(argv: list[str]):
        if argv[:2] == ["scontrol", "update"]:
            seen_at_change["update"] = log.read_text().splitlines()
        if argv[0] == "pdsh" and "signal TERM" in argv[-1]:
            seen_at_change["kill"] = log.read_text().splitlines()
        return answer(argv)

    monkeypatch.setattr(fake, "_answer", spy)
    report = undrain(_opts(tmp_path, log=log, kill=True, grace=0), _yes)
    assert report.exit_code == 0
    assert node_actions(seen_at_change["kill"]) == [["node-2", "will-kill"]]
    assert fields(seen_at_change["kill"][0])["pids"] == "300"
    assert node_actions(seen_at_change["update"][-2:]) == [
        ["node-1", "will-undrain"],
        ["node-2", "will-undrain"],
    ]
    assert [a for _, a in node_actions(log.read_text().splitlines())] == [
        "will-kill",
        "kill",
        "will-undrain",
        "will-undrain",
        "undrain",
        "undrain",
    ]
    assert synced  # written through to disk, not left in a buffer


def test_an_unwritable_log_mid_run_stops_before_the_update(
    fake: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No intent on disk, no action: a full disk must not return nodes silently."""
    from slurmkit.nodechange import auditlog

    _drained(fake, 1)

    def full(self, lines) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(auditlog.AuditLog, "_write", full)
    report = undrain(_opts(tmp_path, log=tmp_path / "actions.log"), _yes)
    assert "No space left" in report.error and report.exit_code == 2  # table kept (issue 22)
    assert report.outcomes[0].action == "not returned"
    assert not fake.slurm_calls("update") and fake.nodes["node-1"][0] == "IDLE+DRAIN"


# ---------------------------------------------------------------- finding 1: leftovers by Slurm


def test_a_node_with_a_system_users_environ_only_leftover_is_not_killed(
    fake: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--kill signals nothing on a node where a leftover may not be signalled: it stays out."""
    _drained(fake, 1)
    check = fake._check

    def root_leftover(node: str, t: str) -> list[str]:
        lines = check(node, t)
        i = lines.index(f"{t} ps-end 0")
        lines[i:i] = ["    400       1     400     0 S    root     passwd"]
        j = lines.index(f"{t} environ-end")
        lines[j:j] = ["/proc/400/environ:SLURM_JOB_ID=41"]
        k = lines.index(f"{t} start-end")
        lines[k:k] = ["400 5400"]
        return lines

    monkeypatch.setattr(fake, "_check", root_leftover)
    (o,) = undrain(_opts(tmp_path, kill=True, grace=0), _yes).outcomes
    assert not o.returned and "not signalled" in o.why and "check by hand" in o.why
    assert not [c for c in fake.calls if c[0] == "pdsh" and "signal TERM" in c[-1]]
    assert not fake.slurm_calls("update")
