"""The train wrapper's run-time check of the script it sources (issue 14, finding 7).

The wrapper runs as the train's owner in every run and sources whatever ``current``
points to *then*; the train folder may be writable by teammates (for the kill
switch). These tests run the rendered wrapper with the real bash, outside Slurm
(``SLURM_JOB_ID`` set by hand), as root and as a real second user (``useradd``,
``runuser``), and check that it sources only a script nobody but the job's user or
root could have written, and that it sources the checked file, not the link.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit.train import wrapper
from slurmkit.train.state import TrainDir

MATE = "sk-trainmate"
NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown and runuser")


@pytest.fixture(scope="module")
def mate() -> int:
    """A real unprivileged user: the train's owner in the runuser tests."""
    if subprocess.run(["getent", "passwd", MATE], capture_output=True).returncode != 0:
        made = subprocess.run(
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", MATE],
            capture_output=True,
            text=True,
        )
        assert made.returncode == 0, made.stderr
    out = subprocess.run(["id", "-u", MATE], capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder under /tmp that other users can traverse (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="sk-wrapper-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def _train(work: Path, owner: int = 0) -> TrainDir:
    train = TrainDir(work / "trains" / "tr")
    train.path.mkdir(parents=True)
    os.chown(train.path.parent, owner, owner)
    os.chown(train.path, owner, owner)
    train.path.chmod(0o777)  # teammates may write it: the kill switch
    train.wrapper.write_text(wrapper.render(train, 3, ["--nodes=1"]))
    return train


def _script(path: Path, owner: int = 0, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"echo SOURCED {path.name}\n")
    os.chown(path, owner, owner)
    path.chmod(mode)
    return path


def _point(train: TrainDir, script: Path, uid: int = 0) -> None:
    if train.current.is_symlink():
        train.current.unlink()
    train.current.symlink_to(script)
    os.lchown(train.current, uid, uid)


def _run(train: TrainDir, user: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = ["bash", str(train.wrapper)]
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    env = {"PATH": os.environ["PATH"], "SLURM_JOB_ID": "1"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd="/", timeout=30)


def test_the_owners_script_is_sourced(work: Path) -> None:
    train = _train(work)
    _point(train, _script(work / "mine" / "a.slurm"))
    result = _run(train)
    assert result.returncode == 0, result.stderr
    assert "SOURCED a.slurm" in result.stdout


@pytest.mark.parametrize(
    ("owner", "mode", "folder_mode", "why"),
    [
        (NOBODY, 0o644, 0o755, "belongs to uid 65534"),
        (0, 0o664, 0o755, "a.slurm is writable by group or others (mode 664)"),
        (0, 0o646, 0o755, "writable by group or others (mode 646)"),
        (0, 0o644, 0o777, "theirs is writable by group or others (mode 777)"),
    ],
)
def test_a_script_someone_else_could_write_is_refused(
    work: Path, owner: int, mode: int, folder_mode: int, why: str
) -> None:
    train = _train(work)
    folder = work / "theirs"
    script = _script(folder / "a.slurm", owner, mode)
    folder.chmod(folder_mode)
    _point(train, script, NOBODY)
    result = _run(train)
    assert result.returncode == 1
    assert "SOURCED" not in result.stdout
    assert f"slurmkit: refusing {script}: " in result.stderr and why in result.stderr


def test_a_root_owned_sticky_folder_above_is_fine(work: Path) -> None:
    """/tmp itself is above every test script: root's sticky folders do not count."""
    train = _train(work)
    sticky = work / "sticky"
    sticky.mkdir(mode=0o1777)
    sticky.chmod(0o1777)
    mine = sticky / "mine"
    mine.mkdir(mode=0o755)
    _point(train, _script(mine / "a.slurm"))
    assert "SOURCED a.slurm" in _run(train).stdout


def test_runs_as_a_real_second_user_trust_that_user_and_root_only(work: Path, mate: int) -> None:
    """The check is against the job's own uid: the train's owner, whoever that is."""
    train = _train(work, owner=mate)
    own = _script(work / "mate" / "own.slurm", mate)
    os.chown(own.parent, mate, mate)
    _point(train, own, mate)
    result = _run(train, MATE)
    assert result.returncode == 0, result.stderr
    assert "SOURCED own.slurm" in result.stdout

    _point(train, _script(work / "root" / "shared.slurm", 0))
    assert "SOURCED shared.slurm" in _run(train, MATE).stdout

    _point(train, _script(work / "nobody" / "evil.slurm", NOBODY), NOBODY)
    result = _run(train, MATE)
    assert result.returncode == 1 and "SOURCED" not in result.stdout
    assert f"belongs to uid {NOBODY}, not to you (uid {mate}) or root" in result.stderr

    # A sticky folder others can write is fine above the script only when root owns it.
    sticky = work / "mate-sticky"
    sticky.mkdir()
    os.chown(sticky, mate, mate)
    sticky.chmod(0o1777)
    _point(train, _script(sticky / "own.slurm", mate), mate)
    result = _run(train, MATE)
    assert result.returncode == 1 and "SOURCED" not in result.stdout
    assert f"{sticky} is writable by group or others (mode 1777)" in result.stderr


def test_a_teammate_repointing_current_with_runuser_is_refused(work: Path, mate: int) -> None:
    """The attack of finding 7, for real: the teammate re-points the link in the shared folder."""
    train = _train(work)
    _point(train, _script(work / "mine" / "a.slurm"))
    theirs = work / "mate"
    theirs.mkdir()
    os.chown(theirs, mate, mate)
    evil = subprocess.run(
        [
            "runuser",
            "-u",
            MATE,
            "--",
            "bash",
            "-c",
            f'echo "echo SOURCED evil" > {theirs}/evil.slurm && '
            f"ln -sfn {theirs}/evil.slurm {train.current}",
        ],
        capture_output=True,
        text=True,
    )
    assert evil.returncode == 0, evil.stderr
    assert train.current.lstat().st_uid == mate
    result = _run(train)
    assert result.returncode == 1 and "SOURCED" not in result.stdout
    assert f"evil.slurm belongs to uid {mate}" in result.stderr
