"""Issue 14 item 2: root's ``sandbox up/down/status/env`` never trust a directory it does not own.

Each test plants what an unprivileged user could plant in ``/tmp`` (a sandbox
directory or state file owned by someone else or writable by others, a
symlinked lock, a damaged ``spec.json``) and checks that slurmkit refuses with
one line and exit 2, and that the process named in the planted ``state.json``
is still alive (nothing was signalled).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit.sandbox.spec import MARKER

NOBODY = 65534

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A process whose pid a planted state.json names: it must survive every refusal."""
    proc = subprocess.Popen(["sleep", "300"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _plant(directory: Path, victim_pid: int) -> Path:
    """A sandbox directory as ``up`` leaves it, whose state names ``victim_pid``."""
    directory.mkdir(mode=0o755)
    (directory / MARKER).write_text("created by slurmkit sandbox up\n")
    spec = {"dir": str(directory), "nodes": 1, "cpus": 8, "gpus": 4, "port_base": 17800}
    spec["cluster_name"] = "sandbox"
    (directory / "spec.json").write_text(json.dumps(spec))
    state = {"daemons": [{"name": "slurmctld", "pid": victim_pid, "match": "sleep"}]}
    (directory / "state.json").write_text(json.dumps(state))
    return directory


def _chown_tree(path: Path, uid: int) -> None:
    for p in [path, *path.rglob("*")]:
        os.lchown(p, uid, uid)


def _one_line_refusal(stderr: str, *words: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("slurmkit: "), stderr
    for word in words:
        assert word in lines[0], stderr
    assert "Traceback" not in stderr


@needs_root
@pytest.mark.parametrize("command", ["down", "up", "status", "env"])
def test_a_sandbox_dir_owned_by_another_user_is_refused(
    command: str, tmp_path: Path, victim: subprocess.Popen[bytes], run_cli
) -> None:
    directory = _plant(tmp_path / "sbx", victim.pid)
    _chown_tree(directory, NOBODY)
    args = ["sandbox", command, "--dir", str(directory)]
    if command == "up":
        args.append("--no-install")
    result = run_cli(*args, exit_code=2)
    _one_line_refusal(result.stderr, "refusing", str(directory))
    assert victim.poll() is None, "a pid from another user's state.json was signalled"
    assert (directory / "state.json").exists()


@pytest.mark.parametrize("command", ["down", "up"])
def test_a_sandbox_dir_writable_by_others_is_refused(
    command: str, tmp_path: Path, victim: subprocess.Popen[bytes], run_cli
) -> None:
    directory = _plant(tmp_path / "sbx", victim.pid)
    os.chmod(directory, 0o777)
    args = ["sandbox", command, "--dir", str(directory)]
    if command == "up":
        if os.geteuid() != 0:
            pytest.skip("up refuses non-root first")
        args.append("--no-install")
    result = run_cli(*args, exit_code=2)
    _one_line_refusal(result.stderr, "writable by group or others")
    assert victim.poll() is None


@needs_root
def test_a_state_file_owned_by_another_user_is_not_trusted(
    tmp_path: Path, victim: subprocess.Popen[bytes], run_cli
) -> None:
    directory = _plant(tmp_path / "sbx", victim.pid)
    os.chown(directory / "state.json", NOBODY, NOBODY)
    result = run_cli("sandbox", "down", "--dir", str(directory), exit_code=2)
    _one_line_refusal(result.stderr, "state.json")
    assert victim.poll() is None


def test_a_symlinked_state_file_is_not_followed(
    tmp_path: Path, victim: subprocess.Popen[bytes], run_cli
) -> None:
    directory = _plant(tmp_path / "sbx", victim.pid)
    elsewhere = tmp_path / "elsewhere.json"
    (directory / "state.json").rename(elsewhere)
    (directory / "state.json").symlink_to(elsewhere)
    result = run_cli("sandbox", "down", "--dir", str(directory), exit_code=2)
    _one_line_refusal(result.stderr, "symbolic link")
    assert victim.poll() is None


def test_the_lock_is_not_a_file_beside_the_directory(tmp_path: Path, run_cli) -> None:
    """The old lock was ``<dir>.lock`` opened with ``open(.., 'a')``: a planted symlink there
    made root create (or append to) any file. The lock now lives in the caller's lock dir."""
    directory = tmp_path / "sbx"
    directory.mkdir(mode=0o755)
    target = tmp_path / "created-through-the-link"
    Path(f"{directory}.lock").symlink_to(target)
    run_cli("sandbox", "down", "--dir", str(directory))
    assert not target.exists()


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("spec.json", '{"dir": "/tmp/x", "nod'),
        ("spec.json", "[1, 2, 3]"),
        ("spec.json", '{"dir": "/tmp/x", "nodes": "many"}'),
        ("spec.json", '{"dir": "/tmp/x", "bogus": 1}'),
        ("state.json", '{"daemons": [{"name": "x", "pid"'),
        ("state.json", "[]"),
        ("state.json", '{"daemons": [{"name": "x", "pid": "abc", "match": "y"}]}'),
        ("state.json", '{"daemons": 7}'),
    ],
)
@pytest.mark.parametrize("command", ["status", "env", "down"])
def test_a_damaged_state_file_is_one_line_and_exit_2(
    command: str,
    name: str,
    content: str,
    tmp_path: Path,
    victim: subprocess.Popen[bytes],
    run_cli,
) -> None:
    directory = _plant(tmp_path / "sbx", victim.pid)
    (directory / name).write_text(content)
    if command == "env" and name == "state.json":
        pytest.skip("env reads only spec.json")
    result = run_cli("sandbox", command, "--dir", str(directory), exit_code=2)
    _one_line_refusal(result.stderr, name)
    assert victim.poll() is None
