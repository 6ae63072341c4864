"""Launcher variables: values, NODE_RANK only inside a step, quoting, the NNODES mismatch check."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from slurmkit.errors import SlurmkitError, UsageError
from slurmkit.jobenv import allocation, launch, slots

BATCH = {
    "SLURM_JOB_ID": "87",
    "SLURM_JOB_NODELIST": "node-[1-2]",
    "SLURM_NNODES": "2",
    "SLURM_GPUS_ON_NODE": "4",
    "SLURM_NODEID": "0",  # set in the batch script too: it must not become NODE_RANK
    "SLURMD_NODENAME": "node-1",
}
STEP_NODE2 = {
    **BATCH,
    "SLURM_STEP_ID": "0",
    "SLURM_STEP_NODELIST": "node-[1-2]",
    "SLURM_NODEID": "1",
    "SLURMD_NODENAME": "node-2",
}


def _build(env: dict[str, str], launcher: str | None = None, port: int = 6000) -> dict[str, str]:
    alloc = allocation.resolve(env, step=True)
    found = slots.resolve_slots(alloc)
    return launch.build(alloc, found, port=port, launcher=launcher).as_dict()


def test_batch_script_values_without_node_rank() -> None:
    assert _build(BATCH) == {
        "MASTER_ADDR": "node-1",
        "MASTER_PORT": "6000",
        "NNODES": "2",
        "GPUS_PER_NODE": "4",
        "WORLD_SIZE": "8",
    }


def test_step_adds_this_nodes_rank() -> None:
    values = _build(STEP_NODE2)
    assert values["NODE_RANK"] == "1"
    assert values["MASTER_ADDR"] == "node-1"


def test_master_is_first_in_slurm_order_not_sorted() -> None:
    env = {**BATCH, "SLURM_JOB_NODELIST": "gpu-b7,gpu-a[3,1]"}
    assert _build(env)["MASTER_ADDR"] == "gpu-b7"


def test_step_on_fewer_nodes_uses_the_step_nodes() -> None:
    env = {**STEP_NODE2, "SLURM_STEP_NODELIST": "node-2", "SLURM_NODEID": "0"}
    values = _build(env)
    assert (values["MASTER_ADDR"], values["NNODES"], values["NODE_RANK"]) == ("node-2", "1", "0")


def test_inconsistent_node_id_is_an_error() -> None:
    env = {**STEP_NODE2, "SLURM_NODEID": "0"}  # says node-1, but this is node-2
    with pytest.raises(
        SlurmkitError, match=r"SLURM_NODEID=0 does not point at this node \(node-2\)"
    ):
        _build(env)


def test_torchrun_reads_pet_variables() -> None:
    values = _build(STEP_NODE2, "torchrun")
    assert {k: v for k, v in values.items() if k.startswith("PET_")} == {
        "PET_NNODES": "2",
        "PET_NPROC_PER_NODE": "4",
        "PET_MASTER_ADDR": "node-1",
        "PET_MASTER_PORT": "6000",
        "PET_NODE_RANK": "1",
    }
    assert "PET_NODE_RANK" not in _build(BATCH, "torchrun")


def test_accelerate_and_deepspeed_extras() -> None:
    acc = _build(STEP_NODE2, "accelerate")
    assert (acc["NUM_MACHINES"], acc["NUM_PROCESSES"], acc["MACHINE_RANK"]) == ("2", "8", "1")
    assert "MACHINE_RANK" not in _build(BATCH, "accelerate")
    ds = _build(BATCH, "deepspeed")
    assert (ds["NUM_NODES"], ds["NUM_GPUS"]) == ("2", "4")


def test_different_counts_need_the_node() -> None:
    env = {k: v for k, v in BATCH.items() if k != "SLURM_GPUS_ON_NODE"}
    env["SLURM_TASKS_PER_NODE"] = "1,2"
    with pytest.raises(SlurmkitError, match=r"different slot counts \(node-1: 1, node-2: 2\)"):
        _build(env)
    step = {k: v for k, v in STEP_NODE2.items() if k != "SLURM_GPUS_ON_NODE"}
    values = _build({**step, "SLURM_TASKS_PER_NODE": "1,2"})
    assert (values["GPUS_PER_NODE"], values["WORLD_SIZE"]) == ("2", "3")


@pytest.mark.parametrize("nnodes", ["", "2"])
def test_nnodes_check_passes(nnodes: str) -> None:
    launch.check_nnodes({"NNODES": nnodes, "SLURM_NNODES": "2"}, 2)


def test_nnodes_mismatch_names_both_values() -> None:
    with pytest.raises(UsageError, match=r"NNODES=64 .* SLURM_NNODES=40"):
        launch.check_nnodes({"NNODES": "64", "SLURM_NNODES": "40"}, 40)


@pytest.mark.parametrize(
    ("text", "port"), [("6000", 6000), ("1", 1), ("65535", 65535), ("auto", "auto")]
)
def test_ports(text: str, port: object) -> None:
    assert launch.parse_port(text) == port


@pytest.mark.parametrize("text", ["0", "65536", "-1", "http"])
def test_bad_ports(text: str) -> None:
    with pytest.raises(UsageError, match="--port"):
        launch.parse_port(text)


def test_auto_port_follows_the_job_id() -> None:
    assert launch.resolve_port("auto", "12345") == 32345
    assert launch.resolve_port("auto", "100_3") == 20100
    assert launch.resolve_port(7000, None) == 7000
    with pytest.raises(UsageError, match="needs a job id"):
        launch.resolve_port("auto", None)


def test_exports_are_quoted_and_survive_a_real_shell() -> None:
    """A hostname with shell syntax (not valid DNS, but never trust input) evaluates inert."""
    env = launch.LaunchEnv(
        (("MASTER_ADDR", "n1; touch /tmp/x $(id)"), ("NNODES", "2"), ("EMPTY", ""))
    )
    text = env.exports()
    assert text.splitlines()[0] == "export MASTER_ADDR='n1; touch /tmp/x $(id)'"
    assert text.splitlines()[2] == "export EMPTY=''"
    out = subprocess.run(
        ["bash", "-c", 'eval "$1"; printf "%s|%s" "$MASTER_ADDR" "$NNODES"', "_", text],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "n1; touch /tmp/x $(id)|2"
    assert shlex.split(text.splitlines()[1]) == ["export", "NNODES=2"]
