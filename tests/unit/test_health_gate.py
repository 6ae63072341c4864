"""undrain's gate: a node slurmkit health drained is returned only when health passes on it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from slurmkit import _proc, remote
from slurmkit.remote import RemoteOptions, RunOutcome
from slurmkit.remote.result import NodeResult, from_exit_code
from slurmkit.undrain import healthgate
from slurmkit.undrain.report import WOULD_RETURN, NodeOutcome

CONFIG = ("--config", "/etc/site/health.toml")


def report(passed: bool, status: str = "fail", detail: str = "'test ! -e /m' exited 1") -> str:
    checks = [{"check": "cmd", "type": "cmd", "status": status, "detail": detail}]
    return json.dumps({"node": "node-3", "passed": passed, "checks": checks})


def outcome(node: str, reason: str) -> NodeOutcome:
    return NodeOutcome(node, "IDLE+DRAIN", reason, action=WOULD_RETURN)


def test_verdicts() -> None:
    ok = from_exit_code("node-3", 0, report(True, "pass", "exited 0"), "", 0.1)
    assert healthgate.verdict(ok) == ""
    bad = from_exit_code("node-3", 1, report(False), "", 0.1)
    assert healthgate.verdict(bad) == (
        "slurmkit health still fails: cmd: fail: 'test ! -e /m' exited 1"
    )
    gone = NodeResult("node-3", "unreachable", error="ssh: connect refused")
    assert "could not be run on the node (unreachable): ssh: connect refused" in (
        healthgate.verdict(gone)
    )
    noconfig = from_exit_code("node-3", 2, "", "slurmkit: refusing health config x", 0.1)
    assert healthgate.verdict(noconfig).endswith("slurmkit: refusing health config x")
    unknown = from_exit_code("node-3", 1, report(False, "unknown", "dmesg \x1b[2J"), "", 0.1)
    assert "unknown: dmesg \\x1b[2J" in healthgate.verdict(unknown)


def test_gate_runs_health_only_on_its_own_drains(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[list[str], Any]] = []

    def run(nodes: list[str], command: Any, *, via: str, options: RemoteOptions) -> RunOutcome:
        asked.append((list(nodes), command))
        return RunOutcome("ssh", [from_exit_code("node-3", 1, report(False), "", 0.1)])

    monkeypatch.setattr(remote, "run", run)
    monkeypatch.setenv(healthgate.CONFIG_ENV, "/etc/site/health.toml")
    ours = outcome("node-3", "slurmkit health: cmd: 'test ! -e /m' exited 1")
    kill_task = outcome("node-1", "Kill task failed")
    healthgate.gate([ours, kill_task], "ssh", RemoteOptions(5.0))
    ((nodes, argv),) = asked
    assert nodes == ["node-3"]
    assert argv[:2] == ["bash", "-c"] and argv[3:] == ["bash", sys.executable, CONFIG[1]]
    assert "-I -m slurmkit health --no-drain --json" in argv[2]
    assert ours.action == "skipped" and "still fails" in ours.why
    assert kill_task.action == WOULD_RETURN


def test_the_node_script_runs_health_isolated(tmp_path: Path) -> None:
    config = tmp_path / "health.toml"
    config.write_text("[[check]]\ntype = 'cmd'\nargv = ['false']\n")
    os.chmod(tmp_path, 0o755)
    done = _proc.run(healthgate.health_argv(str(config)), timeout=60)
    assert done.returncode == 1, done.stderr
    result = from_exit_code("node-3", done.returncode, done.stdout, done.stderr, 0.1)
    assert healthgate.verdict(result) == "slurmkit health still fails: cmd: fail: 'false' exited 1"


def test_the_node_script_refuses_an_interpreter_others_can_change(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    (shared / "python").symlink_to(sys.executable)
    done = _proc.run(healthgate.health_argv("/dev/null", str(shared / "python")), timeout=60)
    assert (done.returncode, done.stdout) == (3, "")
    assert f"slurmkit-refused: python {shared}/python: {shared} is writable by group or " in (
        done.stderr
    )
    assert "could not be run on the node (failed)" in healthgate.verdict(
        from_exit_code("node-3", 3, done.stdout, done.stderr, 0.1)
    )
