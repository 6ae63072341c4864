"""``--sudo``, ``--sudo-user`` and ``--env-setup`` (issue 17 item 2) at the remote layer.

The remote line is run here by a real ``sh`` with a stand-in ``sudo`` on PATH that
records its argv and then runs what follows ``--``: that proves the words sudo gets
(``-n`` first, the user as one word) and that hostile input never reaches a shell
unquoted. The real sudo is exercised on the sandbox (tests/integration/test_remote_sudo.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from slurmkit import remote
from slurmkit.errors import UsageError
from slurmkit.hostlist import HostSet
from slurmkit.remote.command import (
    ENV_SETUP_FAILED,
    env_setup_line,
    remote_line,
    sudo_problem,
    to_shell,
)
from slurmkit.remote.result import FAILED, OK, NodeResult, from_exit_code

FAKE_SUDO = """#!/bin/sh
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "$SUDO_LOG"
while [ "$1" != "--" ]; do shift; done
shift
exec "$@"
"""


@pytest.fixture
def fake_sudo(tmp_path: Path) -> tuple[dict[str, str], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sudo = bin_dir / "sudo"
    sudo.write_text(FAKE_SUDO)
    sudo.chmod(0o755)
    log = tmp_path / "sudo.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SUDO_LOG": str(log)}
    return env, log


def _sh(line: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """What every transport does with the line: sh -c on the node."""
    return subprocess.run(
        ["sh", "-c", line], capture_output=True, text=True, env=env, timeout=30, check=False
    )


def test_without_options_the_line_is_the_command() -> None:
    assert remote_line("uptime") == "uptime"


def test_sudo_user_is_one_word_after_n_and_the_command_runs(fake_sudo) -> None:
    env, log = fake_sudo
    hostile = "x'; touch /tmp/slurmkit-pwned-$$; echo '"
    line = remote_line(to_shell(["printf", "%s", hostile]), sudo_user="bob")
    done = _sh(line, env)
    assert done.returncode == 0, done.stderr
    argv = json.loads(log.read_text().splitlines()[0])
    assert argv[:6] == ["-n", "-H", "-u", "bob", "--", "sh"]
    assert argv[6] == "-c"
    assert done.stdout == hostile  # quoted through two shells, printed literally
    assert not list(Path("/tmp").glob("slurmkit-pwned-*"))


def test_sudo_alone_has_no_user(fake_sudo) -> None:
    env, log = fake_sudo
    assert _sh(remote_line("true", sudo=True), env).returncode == 0
    assert json.loads(log.read_text())[:3] == ["-n", "-H", "--"]


def test_env_setup_file_is_sourced_before_the_command_in_the_same_shell(tmp_path: Path) -> None:
    setup = tmp_path / "my env" / "activate"
    setup.parent.mkdir()
    setup.write_text("FROM_SETUP=yes\nsk_fn() { echo fn-ok; }\n")
    # a path with a space is a command line, not a file: quote it yourself
    line = remote_line('echo "$FROM_SETUP"; sk_fn', env_setup=f". '{setup}'")
    done = _sh(line)
    assert done.stdout.split() == ["yes", "fn-ok"], done.stderr
    plain = tmp_path / "activate"
    plain.write_text("FROM_SETUP=file\n")
    assert _sh(remote_line('echo "$FROM_SETUP"', env_setup=str(plain))).stdout == "file\n"


def test_env_setup_under_sudo_runs_as_the_target(fake_sudo, tmp_path: Path) -> None:
    env, log = fake_sudo
    setup = tmp_path / "activate"
    setup.write_text("export SK_ORDER=setup-first\n")
    done = _sh(remote_line('echo "$SK_ORDER"', sudo_user="bob", env_setup=str(setup)), env)
    assert done.stdout == "setup-first\n"
    script = json.loads(log.read_text())[-1]
    assert script.index(str(setup)) < script.index("SK_ORDER")  # inside sudo, before the command


def test_a_failing_env_setup_stops_the_command() -> None:
    done = _sh(remote_line("echo SHOULD-NOT-RUN", env_setup="false"))
    assert done.returncode == ENV_SETUP_FAILED
    assert "SHOULD-NOT-RUN" not in done.stdout
    assert "slurmkit: --env-setup failed (exit 1)" in done.stderr


def test_a_missing_env_setup_file_stops_the_command(tmp_path: Path) -> None:
    done = _sh(remote_line("echo SHOULD-NOT-RUN", env_setup=str(tmp_path / "nope")))
    assert done.returncode != 0 and "SHOULD-NOT-RUN" not in done.stdout


def test_env_setup_path_forms() -> None:
    assert env_setup_line("/opt/conda/bin/activate") == ". /opt/conda/bin/activate"
    assert env_setup_line("~/venv/bin/activate") == '. "$HOME"/venv/bin/activate'
    assert env_setup_line("module load cuda") == "module load cuda"
    assert env_setup_line("/a/b;rm$(id)") == ". '/a/b;rm$(id)'"  # a path: quoted whole


@pytest.mark.parametrize("user", ["-r", "bob;id", "a b", "", "$(id)", "#x"])
def test_bad_sudo_user_is_refused(user: str) -> None:
    with pytest.raises(UsageError, match="--sudo-user"):
        remote.RemoteOptions(sudo_user=user)


@pytest.mark.parametrize("user", ["bob", "svc_train", "user.name", "machine$", "#1001"])
def test_good_sudo_users(user: str) -> None:
    assert remote.RemoteOptions(sudo_user=user).elevated


@pytest.mark.parametrize("setup", ["", "   ", "a\0b"])
def test_empty_env_setup_is_refused(setup: str) -> None:
    with pytest.raises(UsageError, match="--env-setup"):
        remote.RemoteOptions(env_setup=setup)


def test_sudo_problem_lines() -> None:
    assert sudo_problem("sudo: a password is required\n", 1) == "sudo: a password is required"
    assert sudo_problem("sh: 1: sudo: not found\n", 127) == "sudo is not installed on this node"
    assert sudo_problem("sudo: a password is required\n", 0) is None
    assert sudo_problem("sudo: y\ngrep: x\n", 1) is None  # the command's own, not sudo's
    login = "Could not chdir to home directory /h: No such file\nsudo: a password is required\n"
    assert sudo_problem(login, 1) == "sudo: a password is required"


class _Recording:
    """A transport: node-2's sudo refuses, the others run."""

    name: ClassVar[str] = "pdsh"
    lines: ClassVar[list[str]] = []

    def __init__(self, options: remote.RemoteOptions) -> None:
        self.options = options

    def run(self, nodes: Sequence[str], command: str) -> list[NodeResult]:
        self.lines.append(command)
        return [
            from_exit_code(n, 1, "", "sudo: a password is required\n", 0.1)
            if n == "node-2"
            else from_exit_code(n, 0, "ran\n", "", 0.1)
            for n in nodes
        ]


def test_run_names_sudo_refusal_per_node_and_the_others_go_on(monkeypatch) -> None:
    monkeypatch.setattr(remote, "transport_class", lambda name: _Recording)
    _Recording.lines.clear()
    options = remote.RemoteOptions(sudo_user="bob", env_setup="/e/activate")
    outcome = remote.run(HostSet("node-[1-3]"), ["echo", "a b"], via="pdsh", options=options)
    by = {r.node: r for r in outcome.results}
    assert by["node-2"].status == FAILED and by["node-2"].error == "sudo: a password is required"
    assert by["node-1"].status == OK and by["node-3"].status == OK
    assert _Recording.lines[0].startswith("sudo -n -H -u bob -- sh -c ")


def test_cli_options_reach_the_remote_layer(monkeypatch, run_cli) -> None:
    monkeypatch.setattr(remote, "transport_class", lambda name: _Recording)
    _Recording.lines.clear()
    args = ["--via", "ssh", "-w", "node-[1-3]", "--sudo", "--env-setup", "/e/act", "--", "id"]
    result = run_cli("run", *args, exit_code=1)
    assert "node-2: failed: sudo: a password is required" in result.stdout
    assert _Recording.lines == [remote_line("id", sudo=True, env_setup="/e/act")]


def test_cli_bad_sudo_user_is_one_line_exit_2(run_cli) -> None:
    result = run_cli("run", "-w", "node-1", "--sudo-user=-rf", "--", "id", exit_code=2)
    assert result.stderr.strip().splitlines() == ["slurmkit: --sudo-user: not a user name: '-rf'"]
    assert result.stdout == ""
