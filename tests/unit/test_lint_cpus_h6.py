"""srun-cpus-per-task fixes from the sixth hold-out: steps that need one CPU per task.

nccl-tests drive their GPUs from one host thread per rank (unless -t asks for more), and
`sudo sysctl` is a one-shot helper: their tasks lose nothing when srun gives them 1 CPU.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.slurm.records import SlurmVersion

V22 = LintContext(SlurmVersion.parse("22.05.8"))
RULE = "srun-cpus-per-task"


def found(*body: str) -> list[int]:
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --cpus-per-task=16\n" + "\n".join(body) + "\n"
    return [f.line for f in lint_text(text, "t.slurm", V22) if f.rule == RULE]


@pytest.mark.parametrize(
    "step",
    [
        "srun --mpi=pmix all_reduce_perf_mpi -b 8 -e 8G -g 1",
        "srun --container-name=c /opt/nccl-tests/build/alltoall_perf -b 8",
        "srun bash -c 'echo on $(hostname) && all_gather_perf_mpi -g 1'",
        'srun bash -c "hostname && sync && sudo /sbin/sysctl vm.drop_caches=3"',
    ],
)
def test_one_host_thread_steps_are_no_finding(step: str) -> None:
    assert found(step) == []


@pytest.mark.parametrize(
    "step",
    [
        "srun all_reduce_perf -t 8 -g 1",
        "srun bash -c 'sudo python train.py'",
        "srun bash -c 'echo go && python train.py'",
    ],
)
def test_threaded_or_real_work_still_found(step: str) -> None:
    assert found(step) == [4]


@pytest.mark.parametrize(
    "step",
    [
        "export NWORKERS=21\nsrun julia --project=. run.jl",
        "srun julia -p 8 run.jl",
        "srun julia --procs=auto run.jl",
    ],
)
def test_julia_starting_workers_needs_its_cpus(step: str) -> None:
    assert found(step) == [4 + step.count("\n")]


def test_julia_alone_is_still_one_thread() -> None:
    assert found("export DATA=/scratch/x\nsrun julia --project=. run.jl") == []
