"""undrain as root from cron must never act on the wrong thing (issue 14).

Each test reproduces one finding of the review at the ``_proc`` seam (the fake
cluster of ``test_undrain_flow``) and failed before its fix.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from slurmkit import _proc, locks
from slurmkit.errors import EnvironmentProblem
from slurmkit.undrain import undrain
from tests.unit.test_undrain_flow import FakeCluster, _drained, _opts, _yes

NOBODY = 65534


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCluster:
    """The fake slurmctld + pdsh of test_undrain_flow at the _proc seam."""
    cluster = FakeCluster()
    monkeypatch.setattr(_proc, "runner", cluster)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return cluster


# ---------------------------------------------------------------- finding 9: the lock


@pytest.mark.skipif(os.geteuid() != 0, reason="the squat is on root's lock")
def test_a_lock_another_user_holds_in_tmp_no_longer_blocks_root(
    fake: FakeCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old default, /tmp/slurmkit-undrain-0.lock, created and held by nobody."""
    monkeypatch.delenv("XDG_RUNTIME_DIR")  # as under cron
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


def test_a_symlink_at_the_lock_path_is_refused(fake: FakeCluster, tmp_path: Path) -> None:
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
