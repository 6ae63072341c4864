"""26.05 sets SLURM_STEP_ID=-5 in the batch script: that is not an srun step (live on 26.05)."""

from __future__ import annotations

import pytest

from slurmkit.jobenv.allocation import Allocation


@pytest.mark.parametrize(
    ("step_id", "in_step"),
    [("0", True), ("3", True), ("", False), ("-5", False), ("4294967291", False), ("batch", False)],
)
def test_only_a_real_step_id_means_inside_srun(step_id: str, in_step: bool) -> None:
    env = {"SLURM_STEP_ID": step_id} if step_id else {"SLURM_JOB_ID": "1"}
    alloc = Allocation(("node-1",), "test", "1", env)
    assert alloc.in_step is in_step
