"""Review of round six's lint changes (issue 32), items 1d and 4.

A thread count of one asks for one thread, so it cannot make a Julia step threaded; nccl-tests'
long ``--nthreads`` asks for threads like ``-t``; a script that gives its task index a
default, or tests whether it is set, is built to run alone too, not only as an array.
"""

from __future__ import annotations

import pytest

from tests.lint_headers import of_rule

CPUS = "srun-cpus-per-task"
COLLIDES = "output-collides"


def step(*body: str, cpus: int = 8) -> str:
    head = f"#!/bin/bash\n#SBATCH --ntasks=4\n#SBATCH --cpus-per-task={cpus}\n#SBATCH -t 60\n"
    return head + "\n".join(body) + "\n"


@pytest.mark.parametrize(
    "export",
    [
        "export OMP_NUM_THREADS=1",
        "export MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1",
        'export JULIA_NUM_THREADS="1"',
    ],
)
def test_one_thread_exported_keeps_julia_one_threaded(export: str) -> None:
    # /tmp/rv/julia.sh: quiet like the same script without the export.
    assert of_rule(step(export, "srun julia run.jl"), CPUS) == []


@pytest.mark.parametrize(
    "export",
    [
        "export JULIA_NUM_THREADS=8",
        "export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK",  # OpenBLAS under Julia reads it
        "export NWORKERS=1",  # addprocs(1): a worker beside the main process
    ],
)
def test_threads_or_workers_exported_still_need_the_cpus(export: str) -> None:
    assert of_rule(step(export, "srun julia run.jl"), CPUS) == [(6, "warning")]


@pytest.mark.parametrize(
    "threads",
    ["--nthreads 4", "--nthreads=4", "-t 4", "-t4", "-t ${NGPUS}"],
)
def test_nccl_tests_asking_for_threads_need_the_cpus(threads: str) -> None:
    # /tmp/rv/nccl.sh: --nthreads is -t's long name in nccl-tests' getopt_long table.
    srun = f"srun all_reduce_perf -b 8 -e 8G {threads}"
    assert of_rule(step(srun), CPUS) == [(5, "warning")]


@pytest.mark.parametrize(
    "srun",
    [
        "srun all_reduce_perf -b 8 -e 8G --nthreads 1",
        "srun all_reduce_perf -b 8 -e 8G -t 1 -g 1",
        "srun bash -c 'all_reduce_perf_mpi --nthreads 1 --ngpus 1'",
    ],
)
def test_nccl_tests_with_one_thread_per_rank_need_one_cpu(srun: str) -> None:
    assert of_rule(step(srun), CPUS) == []


def test_nccl_tests_threads_asked_inside_bash_c_need_the_cpus() -> None:
    srun = "srun bash -c 'hostname && all_reduce_perf_mpi --nthreads 4'"
    assert of_rule(step(srun), CPUS) == [(5, "warning")]


def shard_job(*body: str) -> str:
    return "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --output=run.log\n" + "\n".join(body)


@pytest.mark.parametrize(
    "body",
    [
        # /tmp/rv/idx.sh
        ("IDX=${SLURM_ARRAY_TASK_ID:-0}", "srun python run.py --idx $IDX"),
        ("srun python run.py --idx ${SLURM_ARRAY_TASK_ID-0}",),
        ("srun python run.py --idx ${SLURM_ARRAY_TASK_ID:=0}",),
        (
            'if [ -z "$SLURM_ARRAY_TASK_ID" ]; then IDX=0; else IDX=$SLURM_ARRAY_TASK_ID; fi',
            "srun python run.py --idx $IDX",
        ),
        (
            "if [[ -n ${SLURM_ARRAY_TASK_ID} ]]; then",
            "  zcat part_${SLURM_ARRAY_TASK_ID}.gz | wc -l",
            "fi",
        ),
    ],
)
def test_a_task_index_with_a_default_or_a_test_runs_alone_too(body: tuple[str, ...]) -> None:
    assert of_rule(shard_job(*body), COLLIDES) == []


@pytest.mark.parametrize(
    "body",
    [
        ("srun python run.py --idx ${SLURM_ARRAY_TASK_ID:?no array}",),
        ("SEED=${SLURM_ARRAY_TASK_ID:-0}", "zcat part_${SLURM_ARRAY_TASK_ID}.gz | wc -l"),
    ],
)
def test_a_task_index_read_without_a_default_is_still_an_array(body: tuple[str, ...]) -> None:
    assert of_rule(shard_job(*body), COLLIDES) == [(3, "warning")]
