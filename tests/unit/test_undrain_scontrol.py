"""The node-state update undrain sends: one ``scontrol update`` for a folded list."""

from __future__ import annotations

import pytest
from fixtures_path import VERSIONS, entry

from slurmkit.errors import ControllerUnreachable, NotFound
from slurmkit.slurm import _exec, query
from tests.fakes import FakeSlurm

SCENARIO = "02_nodes_degraded"


UPDATE = ["scontrol", "update", "**"]


@pytest.fixture
def scontrol(fake_slurm: FakeSlurm) -> FakeSlurm:
    """The shared fake Slurm; ``scontrol update`` succeeds unless a test says otherwise."""
    return fake_slurm.on(UPDATE)


def test_argv_keeps_each_value_one_word() -> None:
    assert query.update_node_state_argv("node-[2-3]", "undrain") == [
        "scontrol",
        "update",
        "nodename=node-[2-3]",
        "state=undrain",
    ]
    assert query.update_node_state_argv(["n1", "n2"], "drain", "Kill task failed")[2:] == [
        "nodename=n1,n2",
        "state=drain",
        "reason=Kill task failed",
    ]


def test_one_call_for_many_nodes(scontrol: FakeSlurm) -> None:
    before = len(_exec.call_log)
    query.update_node_state("node-[1-500]", "undrain")
    assert scontrol.calls == [("scontrol", "update", "nodename=node-[1-500]", "state=undrain")]
    assert len(_exec.call_log) - before == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_unknown_node_is_not_found(scontrol: FakeSlurm, version: str) -> None:
    name = "err_scontrol_update_unknown_node.txt"
    recorded = entry(version, SCENARIO, name)
    assert recorded["command"].startswith("scontrol update nodename=node-9")
    # recorded with state=resume; slurmkit sends state=undrain: the same refusal
    scontrol.replay(version, SCENARIO, name, pattern=UPDATE)
    with pytest.raises(NotFound, match="Invalid node name"):
        query.update_node_state("node-9", "undrain")


def test_controller_down_is_its_own_error(scontrol: FakeSlurm) -> None:
    scontrol.on(
        UPDATE,
        rc=1,
        stderr="slurm_update error: Unable to contact slurm controller (connect failure)\n",
    )
    with pytest.raises(ControllerUnreachable, match="cannot reach slurmctld"):
        query.update_node_state("node-1", "undrain")
