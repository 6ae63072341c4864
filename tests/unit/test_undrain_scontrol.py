"""The node-state update undrain sends: one ``scontrol update`` for a folded list."""

from __future__ import annotations

import shlex
from collections.abc import Iterator

import pytest
from fixtures_path import VERSIONS, entry, read, stderr

from slurmkit import _proc
from slurmkit.errors import ControllerUnreachable, NotFound
from slurmkit.slurm import _exec, query

SCENARIO = "02_nodes_degraded"


class Replay:
    def __init__(self) -> None:
        self.answer: tuple[int, str, str] = (0, "", "")
        self.calls: list[list[str]] = []

    def __call__(self, argv, *, timeout, input, env, cwd) -> _proc.Completed:
        if argv[:2] != ["scontrol", "update"]:
            raise AssertionError(f"unexpected command: {shlex.join(argv)}")
        self.calls.append(list(argv))
        rc, out, err = self.answer
        return _proc.Completed(tuple(argv), rc, out, err, 0.0)


@pytest.fixture
def scontrol(monkeypatch: pytest.MonkeyPatch) -> Iterator[Replay]:
    fake = Replay()
    monkeypatch.setattr(_proc, "runner", fake)
    yield fake


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


def test_one_call_for_many_nodes(scontrol: Replay) -> None:
    before = len(_exec.call_log)
    query.update_node_state("node-[1-500]", "undrain")
    assert scontrol.calls == [["scontrol", "update", "nodename=node-[1-500]", "state=undrain"]]
    assert len(_exec.call_log) - before == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_unknown_node_is_not_found(scontrol: Replay, version: str) -> None:
    name = "err_scontrol_update_unknown_node.txt"
    recorded = entry(version, SCENARIO, name)
    assert recorded["command"].startswith("scontrol update nodename=node-9")
    scontrol.answer = (
        recorded["exit_code"],
        read(version, SCENARIO, name),
        stderr(version, SCENARIO, name),
    )
    with pytest.raises(NotFound, match="Invalid node name"):
        query.update_node_state("node-9", "undrain")


def test_controller_down_is_its_own_error(scontrol: Replay) -> None:
    scontrol.answer = (
        1,
        "",
        "slurm_update error: Unable to contact slurm controller (connect failure)\n",
    )
    with pytest.raises(ControllerUnreachable, match="cannot reach slurmctld"):
        query.update_node_state("node-1", "undrain")
