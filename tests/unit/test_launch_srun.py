"""``launch-env --launcher srun``: each srun task's RANK, LOCAL_RANK and WORLD_SIZE."""

from __future__ import annotations

import pytest
from test_jobenv_launch import BATCH, STEP_NODE2, _build

from slurmkit.errors import UsageError

TASK = {**STEP_NODE2, "SLURM_PROCID": "6", "SLURM_LOCALID": "2", "SLURM_NTASKS": "8"}


def test_a_task_gets_its_own_rank_and_the_steps_world_size() -> None:
    values = _build(TASK, launcher="srun")
    assert (values["RANK"], values["LOCAL_RANK"], values["WORLD_SIZE"]) == ("6", "2", "8")
    assert values["MASTER_ADDR"] == "node-1"


def test_world_size_is_exported_once(capsys) -> None:
    from slurmkit.jobenv import allocation, launch, slots

    alloc = allocation.resolve(TASK, step=True)
    env = launch.build(alloc, slots.resolve_slots(alloc), port=6000, launcher="srun")
    assert [name for name, _ in env.variables].count("WORLD_SIZE") == 1


@pytest.mark.parametrize(
    "env",
    [BATCH, {**STEP_NODE2, "SLURM_PROCID": "1"}, {**TASK, "SLURM_PROCID": "x"}],
)
def test_outside_a_task_it_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(UsageError, match="inside the srun step"):
        _build(env, launcher="srun")


def test_the_cli_offers_srun(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in TASK.items():
        monkeypatch.setenv(name, value)
    out = run_cli("launch-env", "--launcher", "srun").stdout
    assert "export RANK=6\n" in out and "export LOCAL_RANK=2\n" in out
