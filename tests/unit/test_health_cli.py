"""``slurmkit health`` end to end at the _proc seam: the exit-code rules and the Slurm calls.

The recorded ``scontrol show node`` of a drained 22.05 node is the template for the
node's answer; its state and reason are swapped per test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from slurmkit import _proc
from slurmkit.cli import cli
from tests.fakes import FakeSlurm

RECORDED = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "slurm-22.05"
    / "02_nodes_degraded"
    / "scontrol_show_node_node-2.txt"
).read_text()


# Recorded on the sandbox (Slurm 22.05.8, 2026-11-25): `scontrol --all show node node-3`
# with a slurm.conf whose SlurmctldPort nobody listens on; exit 1, nothing on stdout.
CONTROLLER_DOWN = "slurm_load_node error: Unable to contact slurm controller (connect failure)\n"


def show_node(state: str = "IDLE", reason: str | None = None) -> str:
    text = RECORDED.replace("NodeName=node-2", "NodeName=node-3")
    text = text.replace("State=IDLE+DRAIN", f"State={state}")
    line = f"   Reason={reason} [root@2026-11-25T21:00:00]\n" if reason else ""
    return text.replace("   Reason=Kill task failed [root@2026-11-21T00:03:40]\n", line)


def scontrol(
    show: str = "", show_rc: int = 0, stderr: str = "", hang: bool = False, update_rc: int = 0
) -> FakeSlurm:
    """The shared fake Slurm with scontrol answering as scripted; every other program really
    runs (the cmd checks)."""
    fake = FakeSlurm().run_really(lambda argv: argv[0] != "scontrol")
    if hang:
        return fake.on(
            ["scontrol", "**"],
            answer=lambda call: _proc.Completed(
                call.argv, -9, "", "", call.timeout or 0.0, timed_out=True
            ),
        )
    fake.on(["scontrol", "**"], show or show_node(), rc=show_rc, stderr=stderr)
    return fake.on(["scontrol", "update", "**"], rc=update_rc, stderr=stderr)


def timeouts(fake: FakeSlurm) -> list[float | None]:
    return [call.timeout for call in fake.log if call.program == "scontrol"]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("SLURM", "SLURMKIT")):
            monkeypatch.delenv(name)
    os.chmod(tmp_path, 0o755)
    return tmp_path


def config(tmp_path: Path, marker_exists: bool, extra: str = "") -> Path:
    marker = tmp_path / "broken"
    if marker_exists:
        marker.touch()
    path = tmp_path / "health.toml"
    path.write_text(
        f"scontrol_timeout = 4\nstate_dir = '{tmp_path}/state'\n"
        f"[[check]]\ntype = 'cmd'\nargv = ['test', '!', '-e', '{marker}']\n{extra}"
    )
    os.chmod(path, 0o644)
    return path


def invoke(monkeypatch: pytest.MonkeyPatch, fake: FakeSlurm, *args: str, slurm: bool = True) -> Any:
    monkeypatch.setattr(_proc, "runner", fake)
    environ = {"SLURMD_NODENAME": "node-3"} if slurm else {}
    return CliRunner().invoke(cli, ["health", *args], env=environ)


def test_healthy_node_prints_nothing_and_only_reads(env: Path, monkeypatch) -> None:
    fake = scontrol()
    result = invoke(monkeypatch, fake, "--config", str(config(env, False)))
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert fake.calls_to("scontrol") == [("scontrol", "--all", "show", "node", "node-3")]
    assert timeouts(fake) == [4.0]


def test_failing_check_drains_this_node_with_its_reason(env: Path, monkeypatch) -> None:
    fake = scontrol()
    result = invoke(monkeypatch, fake, "--config", str(config(env, True)))
    assert (result.exit_code, result.stdout) == (0, "")
    (update,) = fake.calls_to("scontrol", "update")
    assert update[:4] == ("scontrol", "update", "nodename=node-3", "state=drain")
    assert update[4].startswith("reason=slurmkit health: cmd: 'test ! -e /")
    assert update[4].endswith("' exited 1")
    assert "drained: slurmkit health: cmd:" in result.stderr


def test_already_drained_for_the_same_check_is_not_updated_again(env: Path, monkeypatch) -> None:
    reason = f"slurmkit health: cmd: 'test ! -e {env}/broken' exited 1"
    fake = scontrol(show_node("IDLE+DRAIN", reason))
    result = invoke(monkeypatch, fake, "--config", str(config(env, True)))
    assert result.exit_code == 0 and fake.calls_to("scontrol", "update") == []


def test_an_admins_drain_is_never_overwritten_nor_resumed(env: Path, monkeypatch) -> None:
    for broken in (True, False):
        fake = scontrol(show_node("IDLE+DRAIN", "bad DIMM, ticket 42"))
        result = invoke(monkeypatch, fake, "--config", str(config(env, broken)))
        assert result.exit_code == 0 and fake.calls_to("scontrol", "update") == []
        (env / "broken").unlink(missing_ok=True)


def test_own_drain_is_resumed_once_every_check_passes(env: Path, monkeypatch) -> None:
    fake = scontrol(show_node("IDLE+DRAIN", "slurmkit health: cmd: 'x' exited 1"))
    result = invoke(monkeypatch, fake, "--config", str(config(env, False)))
    assert result.exit_code == 0 and result.stdout == ""
    assert fake.calls_to("scontrol", "update") == [
        ("scontrol", "update", "nodename=node-3", "state=undrain")
    ]


@pytest.mark.parametrize(
    ("fake", "says"),
    [
        (scontrol(show_rc=1, stderr=CONTROLLER_DOWN), "cannot reach slurmctld"),
        (scontrol(hang=True), "did not answer within 4 s"),
    ],
)
def test_scontrol_failing_or_hanging_is_a_stderr_line_and_exit_0(
    fake: FakeSlurm, says: str, env: Path, monkeypatch
) -> None:
    result = invoke(monkeypatch, fake, "--config", str(config(env, True)))
    assert (result.exit_code, result.stdout) == (0, "")
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and says in lines[0] and "this node left as it was" in lines[0]
    assert fake.calls_to("scontrol", "update") == [] and timeouts(fake) == [4.0]


def test_no_scontrol_on_path_is_a_stderr_line_and_exit_0(tmp_path: Path) -> None:
    """The real command, as slurmd runs it, on a node where Slurm's clients are missing."""
    import subprocess
    import sys

    config = tmp_path / "health.toml"
    config.write_text("[[check]]\ntype = 'cmd'\nargv = ['false']\n")
    env = {"PATH": str(tmp_path / "empty"), "HOME": str(tmp_path), "SLURMD_NODENAME": "node-3"}
    argv = [sys.executable, "-m", "slurmkit", "health", "--config", str(config)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith("slurmkit: health: node-3: scontrol failed, this node left as it was: ")
    assert "'scontrol' not found on PATH" in line


def test_a_failed_drain_is_exit_0_too(env: Path, monkeypatch) -> None:
    fake = scontrol(stderr="slurm_update error: Invalid node name specified", update_rc=1)
    result = invoke(monkeypatch, fake, "--config", str(config(env, True)))
    assert result.exit_code == 0
    assert "Invalid node name specified" in result.stderr and "Traceback" not in result.stderr


def test_bad_config_exit_0_under_slurm_2_for_a_person(env: Path, monkeypatch) -> None:
    bad = env / "bad.toml"
    bad.write_text("[[check]]\ntype = 'cmd'\nargs = ['true']\n")
    os.chmod(bad, 0o644)
    fake = scontrol()
    under_slurm = invoke(monkeypatch, fake, "--config", str(bad))
    assert under_slurm.exit_code == 0
    assert under_slurm.stderr.count("\n") == 1 and "unknown key 'args'" in under_slurm.stderr
    person = invoke(monkeypatch, fake, "--config", str(bad), slurm=False)
    assert person.exit_code == 2
    assert person.stderr.count("\n") == 1 and "unknown key 'args'" in person.stderr
    assert fake.calls_to("scontrol") == []


def test_no_drain_json_asks_slurm_nothing_and_exits_1_on_failure(env: Path, monkeypatch) -> None:
    fake = scontrol()
    path = str(config(env, True))
    result = invoke(monkeypatch, fake, "--no-drain", "--json", "--config", path, slurm=False)
    assert result.exit_code == 1 and fake.calls_to("scontrol") == []
    data = json.loads(result.stdout)
    assert (data["node"], data["passed"], data["checks"][0]["status"]) == (
        os.uname().nodename.split(".")[0],
        False,
        "fail",
    )
    (env / "broken").unlink()
    assert invoke(monkeypatch, fake, "--no-drain", "--config", path).exit_code == 0


def test_dry_run_reads_the_node_and_says_what_it_would_do(env: Path, monkeypatch) -> None:
    fake = scontrol()
    result = invoke(monkeypatch, fake, "--dry-run", "--config", str(config(env, True)))
    assert result.exit_code == 0 and fake.calls_to("scontrol", "update") == []
    assert "node-3: would drain, reason: slurmkit health: cmd:" in result.stdout
