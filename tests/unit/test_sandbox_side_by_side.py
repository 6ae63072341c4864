"""Sandboxes side by side (issue 27): the test sessions of every Slurm version run at once,
each in its own slot. Two slots never share a port, a directory, a munge socket, a node
address or an ssh config entry; and an ``up`` that would share one is refused."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from slurmkit.errors import UsageError
from slurmkit.sandbox import configs, daemons, registry
from slurmkit.sandbox.spec import SandboxSpec
from tests.integration.conftest import SLOTS, SPARE_SLOT, slot_spec

# every slot a test session uses: each version's, its spare sandbox's, its reboot sandbox's
ALL_SLOTS = sorted({s + k * SPARE_SLOT for s in [*SLOTS.values(), 5] for k in (0, 1, 2)})


def _ports(spec: SandboxSpec) -> set[int]:
    used = {spec.ctld_port, spec.dbd_port, spec.mysql_port, spec.ssh_port}
    return used | {spec.slurmd_port(i) for i in range(1, spec.nodes + 1)}


def _ssh_hosts(spec: SandboxSpec) -> dict[str, str]:
    """What the sandbox's ssh config maps each node name to (address:port)."""
    text = configs.ssh_client_config(spec)
    names = {}
    for block in text.split("Host ")[1:]:
        head, *body = block.strip().splitlines()
        settings = dict(line.split(None, 1) for line in (b.strip() for b in body) if line)
        if "HostName" in settings:
            names[head] = f"{settings['HostName']}:{spec.ssh_port}"
    return names


@pytest.mark.parametrize("a,b", list(itertools.combinations([0, *ALL_SLOTS], 2)))
def test_two_slots_share_nothing(a: int, b: int) -> None:
    """Slot 0 is the default sandbox (the demo's): no test slot touches it either."""
    one = slot_spec(a, nodes=4) if a else SandboxSpec()
    two = slot_spec(b, nodes=4)
    assert one.dir != two.dir and one.munge_socket != two.munge_socket
    assert not _ports(one) & _ports(two)
    assert not set(one.port_range) & set(two.port_range)
    addresses = {one.node_addr(i) for i in range(1, 5)}
    assert not addresses & {two.node_addr(i) for i in range(1, 5)}
    assert not set(_ssh_hosts(one).values()) & set(_ssh_hosts(two).values())
    assert registry.collision(one, two) == "" == registry.collision(two, one)


def test_every_node_line_and_listener_uses_the_slots_addresses(tmp_path: Path) -> None:
    spec = SandboxSpec(dir=tmp_path, net=7, port_base=20000)
    conf = configs.slurm_conf(spec)
    assert "NodeAddr=127.0.7.3 Port=20103" in conf
    assert f"ListenAddress 127.0.7.2:{spec.ssh_port}" in configs.sshd_config(spec, 2)
    assert "127.0.7.4 node-4\n" in configs.hosts_file(spec, "")
    assert _ssh_hosts(spec)["node-1"] == "127.0.7.1:20022"


@pytest.mark.parametrize(
    "other,shared",
    [
        ({"port_base": 17800 + 50, "net": 2}, "ports 17800-17904"),
        ({"port_base": 17800 - 100, "net": 2}, "ports 17800-17904"),
        ({"port_base": 18200, "net": 1}, "node addresses 127.0.1.1-4"),
    ],
)
def test_a_sandbox_that_would_share_a_port_or_an_address_collides(
    tmp_path: Path, other: dict[str, int], shared: str
) -> None:
    running = SandboxSpec(dir=tmp_path / "a")
    second = SandboxSpec(dir=tmp_path / "b", **other)
    assert registry.collision(second, running).startswith(shared)


def test_up_refuses_a_collision_and_names_the_running_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    running = SandboxSpec(dir=tmp_path / "a", slurm="22.05")
    monkeypatch.setattr(registry, "running_sandboxes", lambda: [running])
    registry.refuse_if_another_runs(SandboxSpec(dir=tmp_path / "b", port_base=18200, net=2))
    with pytest.raises(UsageError, match=r"already running in .*/a with node addresses 127\.0\.1"):
        registry.refuse_if_another_runs(SandboxSpec(dir=tmp_path / "b", port_base=18200, net=1))
    registry.refuse_if_another_runs(running)  # itself: the same dir is no collision


@pytest.mark.parametrize("bad", [{"net": 0}, {"net": 255}, {"profile": "fast"}])
def test_spec_rejects_a_bad_net_or_profile(tmp_path: Path, bad: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        SandboxSpec(dir=tmp_path, **bad)  # type: ignore[arg-type]


def test_a_spec_saved_before_net_and_profile_existed_loads_with_the_defaults(
    tmp_path: Path,
) -> None:
    spec = SandboxSpec(dir=tmp_path, net=3, profile="test")
    spec.save()
    assert SandboxSpec.load(tmp_path) == spec
    data = json.loads((tmp_path / "spec.json").read_text())
    del data["net"], data["profile"]
    (tmp_path / "spec.json").write_text(json.dumps(data))
    old = SandboxSpec.load(tmp_path)
    assert old is not None and (old.net, old.profile) == (1, "production")


def _settings(spec: SandboxSpec) -> dict[str, str]:
    lines = [ln for ln in configs.slurm_conf(spec).splitlines() if "=" in ln]
    return {k: v for k, v in (ln.split("=", 1) for ln in lines) if not k.startswith("#")}


def test_the_production_profile_keeps_slurms_timings(tmp_path: Path) -> None:
    conf = _settings(SandboxSpec(dir=tmp_path))
    assert conf["SlurmdTimeout"] == "30"
    assert "MessageTimeout" not in conf and "SchedulerParameters" not in conf


def test_the_test_profile_shortens_what_tests_wait_on(tmp_path: Path) -> None:
    conf = _settings(SandboxSpec(dir=tmp_path, profile="test"))
    assert int(conf["MessageTimeout"]) < 10 and int(conf["SlurmdTimeout"]) == 30
    sched = dict(kv.split("=") for kv in conf["SchedulerParameters"].split(","))
    assert int(sched["sched_interval"]) < 60 and int(sched["bf_interval"]) < 30
    # the same keys appear once: slurmctld takes the last of a repeated key
    keys = [
        ln.split("=", 1)[0] for ln in configs.slurm_conf(SandboxSpec(dir=tmp_path)).splitlines()
    ]
    assert len([k for k in keys if k == "SlurmdTimeout"]) == 1


def test_a_failed_install_names_the_line_that_says_why() -> None:
    """MariaDB ends with a bare "[ERROR] Aborting"; the line before it is the cause."""
    from slurmkit import _proc
    from slurmkit.errors import EnvironmentProblem

    out = (
        "Installing MariaDB/MySQL system tables in '/tmp/x/db/data' ...\n"
        "ERROR: 1  Can't create/write to file '/tmp/#sql-temptable-1f-1-3.MAI' (Errcode: 17)\n"
        "2026-11-28 18:15:29 0 [ERROR] Aborting\n"
    )
    failed = _proc.Completed(("mariadb-install-db",), 1, "", out, 0.4)
    with pytest.raises(EnvironmentProblem, match=r"exit 1\): ERROR: 1  Can't create/write"):
        daemons.must(failed, "mariadb-install-db")
