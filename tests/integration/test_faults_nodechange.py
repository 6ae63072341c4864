"""A node command killed half way is settled by the next run of any node command (issue 30).

Every node change goes through one core (slurmkit.nodechange.change): the intent is on disk
before Slurm is asked, the outcome after the read-back. Here each of ``node drain``,
``resume`` and ``reboot`` is killed with ``-9`` at the core's two faultpoints: after the
intent (nothing asked of Slurm yet) and after the update (Slurm changed, nothing recorded).
The next run of *another* node command settles the open intent by evidence: "not done" for
the first, "done" for the second, and leaves no intent open. One idle node of the shared
sandbox per case, no job; the reboot cases wait for the node to come back (its slurmd is
restarted by the sandbox's RebootProgram).
"""

from __future__ import annotations

import signal
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.nodechange import auditlog
from slurmkit.slurm import nodeops, query
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll
from tests.integration.test_faults_admin import _errors, slurmkit
from tests.integration.test_undrain import _idle_nodes

# verb killed -> (how it is run, the other command that settles it)
SETTLER = {"drain": "resume", "resume": "drain", "reboot": "resume"}
POINTS = {"after-intent": "not done", "after-change": "done"}
REASON = "sk-fault-test"


def _run(verb: str, node: str, common: tuple[str, ...], reason: str, point: str | None = None):
    extra = {
        "drain": ("--reason", reason),
        "resume": ("--no-check",),
        "reboot": ("--no-wait",),
    }[verb]
    return slurmkit("node", verb, node, *extra, *common, point=point)


def _registered(node: str) -> bool:
    (now,) = query.nodes(node)
    return now.boot_time is not None


def _back(node: str) -> bool:
    """Idle, no flag, and booted two seconds ago at least: the next test's intents are then
    stamped after this boot (a boot in an intent's own second is evidence of a reboot)."""
    (now,) = query.nodes(node)
    settled = datetime.now().astimezone() - timedelta(seconds=2)
    booted = now.boot_time is not None and now.boot_time <= settled
    return now.state == "IDLE" and not now.flags and booted


@pytest.mark.parametrize("stage", list(POINTS))
@pytest.mark.parametrize("verb", list(SETTLER))
def test_a_node_command_killed_half_way_is_settled_by_another(
    cluster: sandbox.SandboxSpec, tmp_path: Path, verb: str, stage: str
) -> None:
    if verb == "reboot" and nodeops.reboot_program(nodeops.show_config()) is None:
        pytest.skip("this sandbox has no RebootProgram (started before it existed)")
    (node,) = _idle_nodes(1)
    # A resume (the previous case's clean-up) makes slurmctld forget the node's boot time
    # until slurmd registers again (node_mgr.c, _require_node_reg); the reboot verdict needs
    # it, and CI on 24.11 once read the node inside that window.
    poll(lambda: _registered(node), 60, f"{node} to register its boot time")
    reason = f"{REASON} {uuid.uuid4().hex[:6]}"
    log = tmp_path / "node.log"
    common = ("--yes", "--log", str(log), "--lock", str(tmp_path / "lock"))
    if verb == "resume":  # something to resume: a drain of the test's own
        run_slurm(["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}"])
    try:
        killed = _run(verb, node, common, reason, point=f"node-{verb}.{stage}")
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert [r.action for r in auditlog.read(log)] == [f"will-{verb}"]  # no outcome yet
        settler = SETTLER[verb]
        again = _run(settler, node, common, reason)
        assert again.returncode in (0, 1), again.stderr  # (1: a node rebooting is skipped)
        (note,) = [ln for ln in _errors(again.stderr) if "settled" in ln]
        assert f"{node} {verb} {POINTS[stage]}" in note, note
        records = auditlog.read(log)
        assert records[1].action == verb + ("" if stage == "after-change" else "-failed")
        assert records[1].fields["reconciled"] == "yes"
        assert auditlog.open_intents(log) == []  # nothing left half done
    finally:
        if verb == "reboot":
            poll(lambda: _back(node), 180, f"{node} back from its reboot")
        (now,) = query.nodes(node, exact_reasons=True)
        if "DRAIN" in now.flags and (now.reason or "").startswith(REASON):
            run_slurm(["scontrol", "update", f"nodename={node}", "state=resume"])
