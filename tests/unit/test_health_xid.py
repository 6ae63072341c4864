"""Issue 28, items 5 and 6: an Xid drain is kept whatever else fails or passes, and the
xid check reads the kernel log from a position, not from a time.

``slurmkit health`` runs end to end at the _proc seam (the recorded ``scontrol show
node`` of test_health_cli, its state and reason swapped); the kernel log is a list of
``/dev/kmsg`` records read through :func:`kernlog.from_kmsg`, this node's GPUs one
injected address.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slurmkit.health import checks, kernlog, node, state
from slurmkit.health.checks import Result
from slurmkit.slurm.records import Node
from tests.fakes import FakeSlurm
from tests.unit.test_health_cli import invoke, scontrol, show_node

BOOT = "boot-1"
XID_REASON = "slurmkit health: xid: action: reset: PCI:0000:19:00: Xid 79 (1 event(s))"


def xid_record(seq: int, usec: int, code: int = 79) -> str:
    return f"3,{seq},{usec},-;NVRM: Xid (PCI:0000:19:00): {code}, pid=1, name=train, boom\n"


def other_record(seq: int, usec: int) -> str:
    return f"6,{seq},{usec},-;eth0: link up\n"


class Kernel:
    """The records /dev/kmsg holds now; each read goes through kernlog.from_kmsg."""

    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)
        self.boot = BOOT
        self.reads: list[kernlog.Position | None] = []

    def read(self, after: kernlog.Position | None, *, timeout: float) -> kernlog.KernelLog:
        self.reads.append(after)
        return kernlog.from_kmsg([ln.encode() for ln in self.lines], after, self.boot)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith(("SLURM", "SLURMKIT")):
            monkeypatch.delenv(name)
    os.chmod(tmp_path, 0o755)
    monkeypatch.setattr(checks, "nvidia_smi", lambda: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(checks, "node_gpus", lambda program, timeout: frozenset({(0, 0x19, 0)}))
    return tmp_path


def use(monkeypatch: pytest.MonkeyPatch, kernel: Kernel) -> Kernel:
    monkeypatch.setattr(kernlog, "read", kernel.read)
    return kernel


def health_config(env: Path, *, disk_full: bool = False) -> Path:
    """An xid check and a cmd check standing in for a disk that fills and empties."""
    marker = env / "disk-full"
    if disk_full:
        marker.touch()
    else:
        marker.unlink(missing_ok=True)
    path = env / "health.toml"
    path.write_text(
        f"scontrol_timeout = 4\nstate_dir = '{env}/state'\n"
        "[[check]]\ntype = 'xid'\n"
        f"[[check]]\ntype = 'cmd'\nname = 'disk'\nargv = ['test', '!', '-e', '{marker}']\n"
    )
    os.chmod(path, 0o644)
    return path


def run(monkeypatch: pytest.MonkeyPatch, env: Path, fake: FakeSlurm, *, disk_full: bool = False):
    result = invoke(monkeypatch, fake, "--config", str(health_config(env, disk_full=disk_full)))
    assert result.exit_code == 0, result.output
    return result


def saved(env: Path) -> dict[str, object]:
    return json.loads((env / "state" / "node-3.json").read_text())


# ---------------------------------------------------------------- item 5: the sticky drain


def res(label: str, status: str, kind: str = "cmd") -> Result:
    return Result(label, kind, status, "bad")


def mk(reason: str | None) -> Node:
    flags = frozenset({"DRAIN"}) if reason else frozenset()
    return Node(name="node-3", state="IDLE", flags=flags, reason=reason)


def test_another_failing_check_neither_replaces_an_xid_reason_nor_resumes_the_node() -> None:
    disk_fails = [res("xid", "pass", "xid"), res("disk", "fail")]
    decision = node.decide(mk(XID_REASON), disk_fails, {"xid"})
    assert (decision.action, decision.reason) == (node.KEEP, XID_REASON)
    assert "waits for a person" in decision.why and "failing now: disk" in decision.why
    disk_passes = [res("xid", "pass", "xid"), res("disk", "pass")]
    assert node.decide(mk(XID_REASON), disk_passes, {"xid"}).action == node.WAIT


def test_the_state_file_holds_the_drain_whatever_the_reason_says() -> None:
    replaced = "slurmkit health: disk: /scratch: 1K free < 10G"  # by an older slurmkit
    passes = [res("xid", "pass", "xid"), res("disk", "pass")]
    assert node.decide(mk(replaced), passes, {"xid"}).action == node.RESUME
    assert node.decide(mk(replaced), passes, {"xid"}, held=True).action == node.WAIT
    fails = [res("disk", "fail")]
    assert node.decide(mk(replaced), fails, {"xid"}, held=True).action == node.KEEP
    assert node.decide(mk("admin: DIMM"), fails, {"xid"}, held=True).action == node.ADMIN


def test_a_user_who_fills_and_empties_a_disk_cannot_return_an_xid_drained_node(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = use(monkeypatch, Kernel(other_record(1, 10), xid_record(2, 20)))
    fake = scontrol()
    run(monkeypatch, env, fake)
    ((*_, reason),) = fake.calls_to("scontrol", "update")
    assert reason.startswith("reason=slurmkit health: xid: ") and "Xid 79" in reason
    xid_reason = reason.removeprefix("reason=")
    assert saved(env)["xid_drain"] == {"check": "xid", "reason": xid_reason}

    drained = scontrol(show_node("IDLE+DRAIN", xid_reason))
    run(monkeypatch, env, drained, disk_full=True)  # the user fills the disk
    assert drained.calls_to("scontrol", "update") == []
    run(monkeypatch, env, drained, disk_full=False)  # and empties it
    assert drained.calls_to("scontrol", "update") == []
    assert saved(env)["xid_drain"] == {"check": "xid", "reason": xid_reason}
    assert kernel.reads[-1] == kernlog.Position("kmsg", BOOT, seq=2)


def test_a_person_returning_the_node_ends_the_xid_drain(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, Kernel(xid_record(1, 10)))
    run(monkeypatch, env, scontrol())
    assert "xid_drain" in saved(env)
    # slurmkit undrain's gate runs this on the node: the Xid is behind the position now
    gate = invoke(monkeypatch, scontrol(), "--no-drain", "--config", str(health_config(env)))
    assert gate.exit_code == 0, gate.output
    run(monkeypatch, env, scontrol(show_node("IDLE")))  # a person returned it
    assert "xid_drain" not in saved(env)
    disk = "slurmkit health: disk: 'test ! -e x' exited 1"
    later = scontrol(show_node("IDLE+DRAIN", disk))
    run(monkeypatch, env, later)  # a later disk drain is an ordinary one again
    assert later.calls_to("scontrol", "update") == [
        ("scontrol", "update", "nodename=node-3", "state=undrain")
    ]


def test_an_xid_on_a_node_someone_else_drained_drains_it_once_they_return_it(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(monkeypatch, Kernel(other_record(1, 10), xid_record(2, 20)))
    admin = scontrol(show_node("IDLE+DRAIN", "admin: new NIC"))
    run(monkeypatch, env, admin)
    assert admin.calls_to("scontrol", "update") == []
    assert not (env / "state" / "node-3.json").exists()  # the Xid's record stays unread
    back = scontrol(show_node("IDLE"))
    run(monkeypatch, env, back)
    ((*_, reason),) = back.calls_to("scontrol", "update")
    assert reason.startswith("reason=slurmkit health: xid: ")


# ---------------------------------------------------------------- item 6: positions, not times


def test_an_xid_stamped_before_the_last_run_but_logged_after_it_is_counted(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's clock runs behind the wall clock: a record logged after run 1 can
    carry an earlier time than run 1's start. Only its sequence number says it is new."""
    kernel = use(monkeypatch, Kernel(other_record(1, 5_000_000), other_record(2, 9_000_000)))
    run(monkeypatch, env, scontrol())
    assert saved(env)["kernel_log"] == {"source": "kmsg", "boot_id": BOOT, "seq": 2}
    kernel.lines.append(xid_record(3, 8_200_000))  # stamped 0.8 s before record 2
    fake = scontrol()
    run(monkeypatch, env, fake)
    assert kernel.reads[-1] == kernlog.Position("kmsg", BOOT, seq=2)
    ((*_, reason),) = fake.calls_to("scontrol", "update")
    assert "Xid 79" in reason
    assert saved(env)["kernel_log"] == {"source": "kmsg", "boot_id": BOOT, "seq": 3}


def test_each_record_is_judged_once(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, Kernel(xid_record(1, 10, code=13)))  # an application's Xid: a warning
    run(monkeypatch, env, scontrol())
    report = invoke(monkeypatch, scontrol(), "--dry-run", "--json", "--config",
                    str(health_config(env)))  # fmt: skip
    (xid_result,) = [c for c in json.loads(report.stdout)["checks"] if c["type"] == "xid"]
    assert xid_result["detail"].startswith("no Xid event in the kernel log (kmsg, after the last")


def test_a_drain_slurm_did_not_take_is_tried_again_with_the_same_records(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = use(monkeypatch, Kernel(xid_record(1, 10)))
    run(monkeypatch, env, scontrol(hang=True))
    assert not (env / "state" / "node-3.json").exists()
    fake = scontrol()
    run(monkeypatch, env, fake)
    assert kernel.reads == [None, None] and len(fake.calls_to("scontrol", "update")) == 1


def test_a_new_boot_or_a_restarted_log_reads_from_the_start() -> None:
    lines = [xid_record(1, 10).encode(), other_record(2, 20).encode()]
    old_boot = kernlog.Position("kmsg", "boot-0", seq=2)
    assert len(kernlog.from_kmsg(lines, old_boot, BOOT).records) == 1
    ahead = kernlog.Position("kmsg", BOOT, seq=900)
    log = kernlog.from_kmsg(lines, ahead, BOOT)
    assert len(log.records) == 1 and "restarted" in log.notes[0]
    assert log.position == kernlog.Position("kmsg", BOOT, seq=2)
    behind = kernlog.Position("kmsg", BOOT, seq=0)
    wrapped = [xid_record(5, 50).encode(), None, other_record(7, 70).encode()]
    log = kernlog.from_kmsg(wrapped, behind, BOOT)
    assert len(log.records) == 1
    assert log.notes == [
        "1 record(s) overwritten while this run read them",
        "4 record(s) overwritten before this run read them",
    ]


def test_the_state_file_round_trip_and_trust(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    assert state.read(directory, "node-3") == state.NodeState()
    position = kernlog.Position("kmsg", BOOT, seq=41)
    held = state.XidDrain("xid", XID_REASON)
    state.write(directory, "node-3", state.NodeState(position, held))
    assert state.read(directory, "node-3") == state.NodeState(position, held)
    assert state.read(directory, "node-4") == state.NodeState()
    assert oct(directory.stat().st_mode & 0o777) == "0o700"
    (directory / "node-3.json").write_text("{broken")
    assert state.read(directory, "node-3") == state.NodeState()  # reads more, never less
    (directory / "node-3.json").write_text('{"last_run": "2026-11-25T21:00:00+00:00"}')
    assert state.read(directory, "node-3") == state.NodeState()  # the old time: no position
    os.chmod(directory, 0o777)
    with pytest.raises(state.trust.UntrustedPath):
        state.read(directory, "node-3")
