"""Slurm drains a bad node by itself: HealthCheckProgram runs ``slurmkit health``.

The sandbox's slurm.conf names ``<dir>/bin/slurmkit-health`` every 5 s; the wrapper
runs ``slurmkit health --config <dir>/health.toml`` only while that file exists. These
tests write it with a ``cmd`` check that fails only where a marker for the node
exists, break node-3 with its marker, and wait for slurmd (not the test) to drain it.
Whatever happens, the finalizer removes the config and the markers and returns every
node still drained with a ``slurmkit health:`` reason.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from slurmkit import _proc, sandbox
from slurmkit.files import write_atomic
from slurmkit.hostlist import fold
from slurmkit.sandbox import configs
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from slurmkit.slurm.records import Node
from tests.integration.conftest import poll, recorded_pid

PREFIX = "slurmkit health:"
NODE = "node-3"
# a few health intervals (5 s) plus slurmd's and slurmctld's own latency
DRAIN_WITHIN = 90


def _node(name: str) -> Node:
    (node,) = query.nodes(name, exact_reasons=True)
    return node


def _ours() -> list[Node]:
    return [
        n
        for n in query.nodes(exact_reasons=True)
        if "DRAIN" in n.flags and (n.reason or "").startswith(PREFIX)
    ]


@dataclass
class Health:
    """The sandbox's health.toml and the per-node "broken" markers its check looks for."""

    cluster: sandbox.SandboxSpec
    work: Path

    @property
    def config(self) -> Path:
        return configs.health_config_path(self.cluster)

    def text(self, extra: str = "") -> str:
        marker = shlex.quote(str(self.work / "broken-"))
        return (
            "scontrol_timeout = 10\n"
            f"state_dir = '{self.work}/state'\n"
            "[[check]]\n"
            "type = 'cmd'\n"
            f"shell = 'test ! -e {marker}\"$SLURMKIT_HEALTH_NODE\"'\n" + extra
        )

    def enable(self, extra: str = "") -> None:
        write_atomic(self.config, self.text(extra), mode=0o644)

    def disable(self) -> None:
        self.config.unlink(missing_ok=True)

    def gate_config(self, extra: str = "") -> Path:
        """The same checks, where only undrain's check on the node reads them."""
        path = self.work / "gate.toml"
        write_atomic(path, self.text(extra), mode=0o644)
        return path

    def break_node(self, node: str) -> None:
        (self.work / f"broken-{node}").touch()

    def fix(self, node: str) -> None:
        (self.work / f"broken-{node}").unlink(missing_ok=True)


@pytest.fixture
def health(cluster: sandbox.SandboxSpec) -> Iterator[Health]:
    def ready() -> bool:
        node = _node(NODE)
        return "DRAIN" not in node.flags and not node.is_down

    poll(ready, 180, f"{NODE} free of any drain")
    work = Path(tempfile.mkdtemp(prefix="slurmkit-health-"))
    os.chmod(work, 0o755)
    made = Health(cluster, work)
    try:
        yield made
    finally:
        made.disable()
        for marker in work.glob("broken-*"):
            marker.unlink()
        _unmount(cluster, work / "disk")

        def clean() -> bool:
            ours = _ours()
            if ours:
                run_slurm(
                    [
                        "scontrol",
                        "update",
                        f"nodename={fold([n.name for n in ours])}",
                        "state=undrain",
                    ]
                )
            return not ours

        try:
            poll(clean, 60, "no node drained by slurmkit health")
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _drained_by_health(name: str) -> Node | None:
    node = _node(name)
    return node if "DRAIN" in node.flags and (node.reason or "").startswith(PREFIX) else None


@pytest.mark.smoke
def test_slurm_drains_the_broken_node_by_itself_and_resumes_it_once_fixed(
    health: Health,
) -> None:
    health.break_node(NODE)
    health.enable()
    node = poll(lambda: _drained_by_health(NODE), DRAIN_WITHIN, f"Slurm to drain {NODE}")
    assert isinstance(node, Node)
    assert node.reason is not None
    assert node.reason.startswith(f"{PREFIX} cmd: 'test ! -e ")
    assert node.reason.endswith("' exited 1")
    assert [n.name for n in _ours()] == [NODE]  # the other nodes pass the same check
    health.fix(NODE)
    poll(lambda: "DRAIN" not in _node(NODE).flags, DRAIN_WITHIN, f"{NODE} resumed by itself")


@pytest.mark.parametrize("via", ["pdsh", "ssh"])
def test_undrain_returns_a_health_drain_only_once_its_check_passes(
    health: Health, run_cli, monkeypatch: pytest.MonkeyPatch, via: str
) -> None:
    health.break_node(NODE)
    health.enable()
    poll(lambda: _drained_by_health(NODE), DRAIN_WITHIN, f"Slurm to drain {NODE}")
    health.disable()  # Slurm stops checking: only undrain can return the node now
    monkeypatch.setenv("SLURMKIT_HEALTH_CONFIG", str(health.gate_config()))
    args = ("undrain", "-w", NODE, "--reason", "slurmkit health", "--yes", "--json")
    args = (*args, "--via", via)
    refused = json.loads(run_cli(*args, exit_code=1).stdout)
    (outcome,) = refused["nodes"]
    assert outcome["action"] == "skipped"
    assert "slurmkit health still fails: cmd: fail: 'test ! -e" in outcome["why"]
    assert _drained_by_health(NODE) is not None
    health.fix(NODE)
    returned = json.loads(run_cli(*args).stdout)
    assert [o["action"] for o in returned["nodes"]] == ["returned"]
    assert "DRAIN" not in _node(NODE).flags


def _node_mount(cluster: sandbox.SandboxSpec, *argv: str) -> _proc.Completed:
    """Run in node-3's own mount namespace (and root): a mount there is that node's alone."""
    pid = recorded_pid(cluster, f"node-{NODE}")
    enter = shutil.which("nsenter") or "nsenter"
    return _proc.run([enter, "-t", str(pid), "-m", "-r", *argv], timeout=30)


def _unmount(cluster: sandbox.SandboxSpec, path: Path) -> None:
    if path.exists():
        _node_mount(cluster, "umount", "-l", str(path))


def test_a_really_full_disk_drains_only_that_node(
    health: Health, cluster: sandbox.SandboxSpec
) -> None:
    disk = health.work / "disk"
    disk.mkdir()
    mounted = _node_mount(cluster, "mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk))
    assert mounted.returncode == 0, mounted.stderr
    filled = _node_mount(
        cluster, "sh", "-c", f"dd if=/dev/zero of={disk}/fill bs=64k 2>/dev/null; true"
    )
    assert filled.returncode == 0, filled.stderr
    health.enable(f"[[check]]\ntype = 'disk'\npath = '{disk}'\nmin_free = '256K'\n")
    node = poll(lambda: _drained_by_health(NODE), DRAIN_WITHIN, f"Slurm to drain {NODE}")
    assert isinstance(node, Node) and node.reason is not None
    assert node.reason.startswith(f"{PREFIX} disk: {disk}: 0B free < 256.0K")
    assert [n.name for n in _ours()] == [NODE]
    _node_mount(cluster, "rm", "-f", f"{disk}/fill")
    poll(lambda: "DRAIN" not in _node(NODE).flags, DRAIN_WITHIN, f"{NODE} resumed by itself")


def test_a_controller_that_does_not_answer_is_one_stderr_line_and_exit_0(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    """The real scontrol against a SlurmctldPort nobody listens on, as slurmd would run it."""
    os.chmod(tmp_path, 0o755)
    conf = tmp_path / "slurm.conf"
    text = cluster.slurm_conf.read_text()
    conf.write_text(
        "\n".join(
            "SlurmctldPort=1" if line.startswith("SlurmctldPort=") else line
            for line in text.splitlines()
        )
        + "\n"
    )
    config = tmp_path / "health.toml"
    config.write_text("scontrol_timeout = 20\n[[check]]\ntype = 'cmd'\nargv = ['false']\n")
    os.chmod(config, 0o644)
    env = {**os.environ, "SLURM_CONF": str(conf), "SLURMD_NODENAME": NODE}
    argv = [sys.executable, "-m", "slurmkit", "health", "--config", str(config)]
    done = _proc.run(argv, env=env, timeout=60)
    assert (done.returncode, done.stdout) == (0, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"slurmkit: health: {NODE}: scontrol failed, this node left as it was: ")
    assert "cannot reach slurmctld" in line
