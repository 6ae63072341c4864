"""Issue 28, items 8 and 9: locks only their owner can hold, journals only their owner feeds.

- Any user who could read a train folder could ``flock`` its ``.lock`` through a
  read-only descriptor and stall the owner's ``train stop``: a lock file is now 0600
  and the caller's; one someone else made or can open is replaced, never used; a
  teammate (not the folder's owner) never takes or creates a train's lock.
- A FIFO in place of a train's ``journal`` (or undrain's ``--log``) was a traceback in
  every command; a journal someone else owns was read and settled. Both are one line now.
- A non-root account without ``$XDG_RUNTIME_DIR`` kept its locks in
  ``/tmp/slurmkit-<uid>``, a name anyone can make first; now under its own state dir.

The other users are real: a forked child drops to ``nobody`` (root needed).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from slurmkit import journal, locks
from slurmkit.files import state_path
from slurmkit.nodechange import auditlog
from slurmkit.train.state import TrainDir
from tests.unit.nodelog_lines import new_line
from tests.unit.test_train_cli import TrainCluster, cluster, started  # noqa: F401

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")


@contextmanager
def as_nobody(action: Callable[[], str]) -> Iterator[str]:
    """Run ``action`` in a child that is ``nobody``; yields what it said. The child keeps
    what it opened (a held lock) until the ``with`` body is over."""
    said_r, said_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(said_r)
        os.close(done_w)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            report = action()
        except BaseException as exc:  # reported to the parent
            report = f"{type(exc).__name__}: {exc}"
        os.write(said_w, report.encode()[:4000])
        os.close(said_w)
        os.read(done_r, 1)
        os._exit(0)
    os.close(said_w)
    os.close(done_r)
    try:
        chunks = []
        while chunk := os.read(said_r, 4096):
            chunks.append(chunk)
        yield b"".join(chunks).decode()
    finally:
        os.close(done_w)
        os.waitpid(pid, 0)
        os.close(said_r)


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder under /tmp that other users can traverse (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="sk-lock-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path)


def _train(work: Path, mode: int) -> TrainDir:
    train = TrainDir(work / "trains" / "tr", lock_wait=0)
    train.path.mkdir(parents=True)
    train.path.chmod(mode)
    return train


def _flock(path: Path, flags: int) -> Callable[[], str]:
    def grab() -> str:
        fd = os.open(path, flags, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return "held"  # the descriptor stays open in the child: the lock is held

    return grab


# ---------------------------------------------------------------- the train's lock


@needs_root
def test_a_reader_of_the_train_folder_cannot_hold_its_lock(work: Path) -> None:
    train = _train(work, 0o755)
    with train.locked():
        pass  # an earlier command of the owner's made the lock file
    lock = train.path / ".lock"
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    with as_nobody(_flock(lock, os.O_RDONLY)) as said:
        assert "Permission denied" in said
        with train.locked():  # the owner's `train stop` is not stalled
            pass


@needs_root
def test_a_lock_file_a_teammate_planted_and_holds_is_replaced_not_waited_for(
    work: Path,
) -> None:
    train = _train(work, 0o777)  # teammates may write it: the kill switch
    lock = train.path / ".lock"
    with as_nobody(_flock(lock, os.O_RDWR | os.O_CREAT)) as said:
        assert said == "held" and lock.stat().st_uid == NOBODY
        with train.locked():
            info = lock.stat()
            assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o600)


@needs_root
def test_a_teammate_neither_takes_nor_makes_the_lock(work: Path) -> None:
    train = _train(work, 0o777)

    def take() -> str:
        with train.locked():
            return "locked"

    with as_nobody(take) as said:
        assert said.startswith("NotTrainOwner: train tr belongs to root (uid 0), not to you")
        assert "kill-switch on" in said
    assert not (train.path / ".lock").exists()


def test_a_lock_file_others_can_open_is_replaced(tmp_path: Path) -> None:
    """A lock made before the rule (0644) may be held through a read-only descriptor."""
    path = tmp_path / "x.lock"
    path.write_text("")
    path.chmod(0o644)
    reader = os.open(path, os.O_RDONLY)
    fcntl.flock(reader, fcntl.LOCK_EX)
    try:
        with locks.hold(path, wait=0, what="test"):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert path.stat().st_ino != os.fstat(reader).st_ino
        with (
            locks.hold(path, wait=0, what="test"),
            pytest.raises(locks.LockBusy),
            locks.hold(path, wait=0, what="test"),
        ):
            pass  # and the new one is a real lock
    finally:
        os.close(reader)


def test_a_fifo_at_the_lock_path_is_replaced_too(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    os.mkfifo(path)
    with locks.hold(path, wait=0, what="test"):
        assert stat.S_ISREG(path.stat().st_mode)


# ---------------------------------------------------------------- the lock folder


def test_a_user_without_a_runtime_dir_locks_under_their_state_dir(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not /tmp/slurmkit-<uid>: another user can make that folder first."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    folder = locks.default_lock_dir()
    assert folder == state_path("locks")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert locks.default_lock_path("node").parent == folder


# ---------------------------------------------------------------- journals and logs


@contextmanager
def fifo_with_a_writer(path: Path) -> Iterator[None]:
    """A FIFO someone keeps open: a read finds no data (it used to raise TypeError) and an
    append finds a reader (it used to write into the pipe)."""
    os.mkfifo(path)
    held = os.open(path, os.O_RDWR)
    try:
        yield
    finally:
        os.close(held)


def test_a_fifo_journal_is_one_problem_never_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    with fifo_with_a_writer(path):
        with pytest.raises(journal.JournalProblem, match="not a regular file"):
            journal.read(path)
        with pytest.raises(journal.JournalProblem, match="not a regular file"):
            journal.Journal(path).intent("stop")


def test_a_fifo_journal_that_nobody_reads_does_not_hang_an_append(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    os.mkfifo(path)
    with pytest.raises(journal.JournalProblem, match="not a regular file"):
        journal.Journal(path).intent("stop")


@needs_root
def test_a_journal_someone_else_owns_is_neither_read_nor_fed(tmp_path: Path) -> None:
    """Its intents are what the next command settles (an array adopted by its token)."""
    path = tmp_path / "journal"
    journal.Journal(path).intent("start")
    os.chown(path, NOBODY, NOBODY)
    with pytest.raises(journal.JournalProblem, match=f"owned by uid {NOBODY}"):
        journal.read(path)
    with pytest.raises(journal.JournalProblem, match=f"owned by uid {NOBODY}"):
        journal.Journal(path).outcome("t", "start", "done")
    os.chown(path, 0, 0)
    path.chmod(0o662)
    with pytest.raises(journal.JournalProblem, match="writable by group or others"):
        journal.Journal(path).intent("start")


def test_train_commands_with_a_fifo_journal_say_so_in_one_line(
    run_cli,
    cluster: TrainCluster,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    folder = started(run_cli, tmp_path)
    (folder / "journal").unlink()
    with fifo_with_a_writer(folder / "journal"):
        for args in (("status",), ("hold", "--yes"), ("stop", "--yes")):
            result = run_cli("train", *args, exit_code=2)
            assert result.stderr.count("\n") == 1, result.stderr
            assert "journal" in result.stderr and "not a regular file" in result.stderr


def test_a_fifo_undrain_log_is_one_problem_never_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "actions.log"
    with fifo_with_a_writer(path):
        with pytest.raises(auditlog.LogProblem, match="not a regular file"):
            auditlog.open_intents(path)
        with pytest.raises(auditlog.LogProblem, match="not a regular file"):
            auditlog.AuditLog.open(path)


@needs_root
def test_an_undrain_log_someone_else_owns_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "actions.log"
    path.write_text(new_line("node-1", "will-undrain", token="t1"))
    assert [i.nodes for i in auditlog.open_intents(path)] == [("node-1",)]
    os.chown(path, NOBODY, NOBODY)
    with pytest.raises(auditlog.LogProblem, match=f"owned by uid {NOBODY}"):
        auditlog.open_intents(path)
    with pytest.raises(auditlog.LogProblem, match=f"owned by uid {NOBODY}"):
        auditlog.AuditLog.open(path)
    with pytest.raises(auditlog.LogProblem, match=f"owned by uid {NOBODY}"):
        auditlog.check(path)  # the dry run says the same


@needs_root
def test_a_teammates_status_and_kill_switch_work_without_the_lock(
    run_cli,
    cluster: TrainCluster,  # noqa: F811 - the fixture imported above
    work: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from click.testing import CliRunner

    from slurmkit.cli import cli

    monkeypatch.chdir(work)
    folder = started(run_cli, work)
    for path in (work / ".slurmkit", folder.parent, folder):
        path.chmod(0o777)  # the team's folder: the kill switch
    (folder / ".lock").unlink()
    home = work / "mate"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)

    def teammate() -> str:
        os.environ.update(XDG_CONFIG_HOME=str(home), XDG_STATE_HOME=str(home / "state"))
        results = [CliRunner().invoke(cli, ["train", *args]) for args in
                   (["status"], ["kill-switch", "on", "--yes"], ["hold", "--yes"])]  # fmt: skip
        return "\0".join(f"{r.exit_code} {r.stderr.strip()}" for r in results)

    with as_nobody(teammate) as said:
        status, switch, hold = said.split("\0")
    assert status.startswith("0 slurmkit: open changes not checked now: train tr belongs to root")
    assert switch.startswith("0 ") and (folder / "kill-switch").exists()
    assert hold.startswith("2 slurmkit: train tr belongs to root (uid 0), not to you")
    assert not (folder / ".lock").exists()  # made by nobody but its owner
