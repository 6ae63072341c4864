"""Node commands plan under their lock and change only what is still as planned (issue 29, 2).

``node drain|resume|reboot`` read the nodes under the node lock, but then ask (a person
may take minutes) and, for resume, check the nodes remotely; the node lock does not hold
off ``undrain``, Slurm or an admin's scontrol. Before the fix a node returned meanwhile
was resumed again, and a node drained meanwhile was drained over, losing its reason.

The fake slurmctld is ``test_node.Nodes``; ``meanwhile`` changes it right after the
plan's read of the nodes, the way another command would.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes import FakeSlurm
from tests.unit.test_node import Nodes

Change = Callable[[Nodes], None]


@pytest.fixture
def ctld(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Nodes:
    """test_node's cluster: node-1, node-2 idle, node-3 drained, node-4 down."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return Nodes(
        fake_slurm,
        {
            "node-1": ("IDLE", None),
            "node-2": ("IDLE", None),
            "node-3": ("IDLE+DRAIN", "gpu ECC error"),
            "node-4": ("DOWN", "Not responding"),
        },
    )


def _lock_is_held(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def meanwhile(ctld: Nodes, change: Change) -> None:
    """Run ``change`` once, right after the first read of the nodes (the plan's)."""
    answer = ctld._answer
    done: list[bool] = []

    def wrapped(argv: list[str]) -> tuple[int, str, str]:
        result = answer(argv)
        if not done and argv[:1] == ["scontrol"] and "show" in argv and "node" in argv:
            done.append(True)
            change(ctld)
        return result

    ctld._answer = wrapped  # type: ignore[method-assign]


def _node(tmp_path: Path, *args: str) -> list[str]:
    return ["node", *args, "--yes", "--lock", str(tmp_path / "node.lock")]


def test_a_node_returned_meanwhile_by_another_run_is_not_resumed_again(
    ctld: Nodes, run_cli, tmp_path: Path
) -> None:
    def undrain_returns_it(nodes: Nodes) -> None:
        nodes.nodes["node-3"] = ("IDLE", None)

    meanwhile(ctld, undrain_returns_it)
    result = run_cli(*_node(tmp_path, "resume", "node-3", "--no-check"), exit_code=1)
    assert ctld.changing() == []
    assert "node-3: changed since the plan (returned meanwhile (now IDLE)" in result.stderr


def test_a_node_drained_again_meanwhile_is_not_resumed_unchecked(
    ctld: Nodes, run_cli, tmp_path: Path
) -> None:
    def drained_again(nodes: Nodes) -> None:
        nodes.nodes["node-3"] = ("IDLE+DRAIN", "Kill task failed")

    meanwhile(ctld, drained_again)
    result = run_cli(*_node(tmp_path, "resume", "node-[3-4]", "--no-check"), exit_code=1)
    assert ctld.changing() == [["scontrol", "update", "nodename=node-4", "state=resume"]]
    assert ctld.nodes["node-3"] == ("IDLE+DRAIN", "Kill task failed")
    assert "drained again meanwhile (Kill task failed)" in result.stderr


def test_a_node_drained_meanwhile_keeps_its_reason(ctld: Nodes, run_cli, tmp_path: Path) -> None:
    def slurm_drains_it(nodes: Nodes) -> None:
        nodes.nodes["node-1"] = ("IDLE+DRAIN", "Kill task failed")

    meanwhile(ctld, slurm_drains_it)
    args = _node(tmp_path, "drain", "node-[1-2]", "--reason", "bad fan")
    result = run_cli(*args, exit_code=1)
    assert ctld.changing() == [
        ["scontrol", "update", "nodename=node-2", "state=drain", "reason=bad fan"]
    ]
    assert ctld.nodes["node-1"] == ("IDLE+DRAIN", "Kill task failed")
    assert "node-1: changed since the plan (drained meanwhile" in result.stderr


def test_a_reboot_asked_meanwhile_is_not_asked_again(ctld: Nodes, run_cli, tmp_path: Path) -> None:
    def rebooted_by_another(nodes: Nodes) -> None:
        nodes.nodes["node-1"] = ("IDLE+REBOOT_REQUESTED", "image")

    meanwhile(ctld, rebooted_by_another)
    args = _node(tmp_path, "reboot", "node-1", "--no-wait")
    result = run_cli(*args, exit_code=1)
    assert ctld.changing() == []
    assert "a reboot was asked meanwhile" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("drain", "node-[1-2]", "--reason", "x"),
        ("resume", "node-[3-4]", "--no-check"),
        ("reboot", "node-[1-2]", "--no-wait"),
    ],
)
def test_every_read_of_the_nodes_is_made_under_the_lock(
    ctld: Nodes, run_cli, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """The plan and the read again come from reads made while the node lock is held."""
    lock = tmp_path / "node.lock"
    answer = ctld._answer
    unlocked: list[list[str]] = []

    def watched(argv: list[str]) -> tuple[int, str, str]:
        if argv[0] in ("scontrol", "squeue") and not (lock.exists() and _lock_is_held(lock)):
            unlocked.append(argv)
        return answer(argv)

    ctld._answer = watched  # type: ignore[method-assign]
    run_cli(*_node(tmp_path, *args))
    reads = [c for c in ctld.slurm.calls if c[0] == "scontrol" and "show" in c and "node" in c]
    assert len(reads) >= 3  # the plan, the read again, the read-back
    assert unlocked == []
