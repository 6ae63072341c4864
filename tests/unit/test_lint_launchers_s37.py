"""Launcher rules judged on scripts from the spent second hold-out (issue 32).

Each case is a small synthetic script of a class found there, not a copy of one file.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.lint.rules.launchers import launcher_in

V = LintContext(SlurmVersion.parse("24.11.5"))
GPU_NODE = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2\n#SBATCH --gpus-per-node=8\n"


def found(text: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", V)]


def rules(text: str) -> set[str]:
    return {rule for _, _, rule in found(text)}


@pytest.mark.parametrize(
    "line",
    [
        "export TORCH_EXTENSIONS_DIR=$PWD/deepspeed",
        'echo "TORCH_EXTENSIONS_DIR=$PWD/deepspeed" >> .deepspeed_env',
        "python train.py --deepspeed configs/deepspeed/zero3.json",
        "module load deepspeed",
        "pip install deepspeed torch",
        'echo "torchrun --nproc_per_node=8 train.py"',
        'cd "$WORK/torchrun"',
    ],
)
def test_a_launcher_named_but_not_run(line: str) -> None:
    assert launcher_in(line) is None


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("srun ./venv/bin/torchrun \\", "torchrun"),
        ('srun "$VENV/bin/torchrun" --nproc_per_node 8 t.py', "torchrun"),
        ("$HOME/.local/bin/deepspeed --num_gpus 8 train.py", "deepspeed"),
        ("module load cuda; torchrun --nproc_per_node 8 t.py", "torchrun"),
        ('LAUNCHER="deepspeed --num_gpus 8"', "deepspeed"),
    ],
)
def test_a_launcher_run(line: str, name: str) -> None:
    assert launcher_in(line) == name


def test_a_deepspeed_directory_is_no_launcher_of_the_job() -> None:
    script = GPU_NODE + (
        "export TORCH_EXTENSIONS_DIR=$PWD/deepspeed\n"
        "srun -n16 -c2 --ntasks-per-node=8 python train.py --deepspeed ds.json\n"
    )
    assert "launcher-cpus-per-task" not in rules(script)


FOUR_TASKS = (
    "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n"
)
LAUNCH = 'LAUNCHER="accelerate launch --num_processes 8 --machine_rank $SLURM_PROCID"\n'


def test_step_counts_kept_in_a_variable_replace_the_jobs() -> None:
    script = (
        FOUR_TASKS
        + LAUNCH
        + (
            'SRUN_ARGS="--wait=60 --nodes=$NUM_NODES --ntasks=$NUM_NODES"\n'
            'srun $SRUN_ARGS bash -c "$LAUNCHER train.py"\n'
        )
    )
    assert "launcher-tasks-per-node" not in rules(script)


def test_step_options_in_a_variable_without_a_count_keep_the_jobs() -> None:
    script = (
        FOUR_TASKS
        + LAUNCH
        + ('SRUN_ARGS="--wait=60 --kill-on-bad-exit=1"\nsrun $SRUN_ARGS bash -c "$LAUNCHER t.py"\n')
    )
    assert (8, "error", "launcher-tasks-per-node") in found(script)


@pytest.mark.parametrize(
    "options", ["--ntasks=$SLURM_NNODES", "-n ${SLURM_JOB_NUM_NODES}", "--ntasks-per-node=$PER"]
)
def test_a_step_count_lint_cannot_read_is_not_the_jobs(options: str) -> None:
    script = FOUR_TASKS + f"srun {options} torchrun --nproc_per_node 4 train.py\n"
    assert "launcher-tasks-per-node" not in rules(script)


def test_several_launchers_per_node_are_one_defect_not_two() -> None:
    script = FOUR_TASKS + "srun torchrun --nproc_per_node 4 train.py\n"
    assert rules(script) & {"launcher-tasks-per-node", "launcher-cpus-per-task"} == {
        "launcher-tasks-per-node"
    }


def test_no_cpu_warning_when_the_tasks_per_node_are_a_template() -> None:
    head = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --gpus-per-node=4\n"
    script = head + "#SBATCH --ntasks-per-node=${G}\nsrun torchrun --nproc_per_node=4 t.py\n"
    assert "launcher-cpus-per-task" not in rules(script)
    # the same launcher with one task per node and no CPUs asked still warns
    one = head + "#SBATCH --ntasks-per-node=1\nsrun torchrun --nproc_per_node=4 t.py\n"
    assert "launcher-cpus-per-task" in rules(one)


def test_an_exclusive_job_gives_a_whole_step_its_cpus() -> None:
    """srun without --exact is a whole step: every CPU the job has on the node."""
    head = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --gpus-per-node=4\n#SBATCH --ntasks-per-node=1\n"
    script = head + "#SBATCH --exclusive\nsrun torchrun --nproc_per_node=4 t.py\n"
    assert "launcher-cpus-per-task" not in rules(script)


ONE_GPU = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --ntasks-per-node=1\n#SBATCH -c 8 --gres=gpu:1\n"
EIGHT = (
    "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2 --ntasks-per-node=1\n#SBATCH -c 8 --gpus-per-node=8\n"
)


def mismatches(text: str) -> list[tuple[int, str]]:
    return [(line, sev) for line, sev, rule in found(text) if rule == "gpus-per-node-mismatch"]


def test_a_programs_own_gpu_total_in_an_argument_array_is_not_a_launcher_count() -> None:
    script = EIGHT + (
        "parallel_args=(\n  --num_gpus 64\n  --sp_size 1\n)\n"
        'srun torchrun --nnodes 2 --nproc_per_node 8 train.py "${parallel_args[@]}"\n'
    )
    assert mismatches(script) == []


def test_deepspeed_counts_still_read_in_a_command_or_a_launcher_variable() -> None:
    assert mismatches(EIGHT + "deepspeed --num_gpus 16 train.py\n") == [(5, "info")]
    assert mismatches(EIGHT + 'LAUNCHER="deepspeed --num_gpus 16"\n$LAUNCHER t.py\n') == [
        (5, "info")
    ]


def test_accelerate_processes_are_counted_per_machine() -> None:
    launch = "accelerate launch \\\n  --num_processes {n} {machines}\\\n  train.py\n"
    assert mismatches(ONE_GPU + launch.format(n=4, machines="")) == [(6, "info")]
    two = "--num_machines 2 "
    assert mismatches(EIGHT + "srun " + launch.format(n=16, machines=two)) == []
    assert mismatches(EIGHT + "srun " + launch.format(n=32, machines=two)) == [(6, "info")]
    unknown = "--num_machines $NNODES "
    assert mismatches(EIGHT + "srun " + launch.format(n=32, machines=unknown)) == []


def test_num_processes_of_another_program_is_not_judged() -> None:
    assert mismatches(ONE_GPU + "python prep.py --num_processes 4\n") == []


TWO = (
    "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2 --ntasks-per-node=1\n#SBATCH -c 8 --gpus-per-node=4\n"
)


@pytest.mark.parametrize(
    "step",
    [
        "srun python tools/train_net.py --num-gpus 4 --num-machines 2 --config-file c.yaml",
        "srun accelerate launch --num_machines $SLURM_NNODES --num_processes 8 t.py",
    ],
)
def test_several_machines_without_a_machine_rank(step: str) -> None:
    assert (5, "error", "launcher-without-node-rank") in found(TWO + step + "\n")


@pytest.mark.parametrize(
    "step",
    [
        "srun bash -c 'python train_net.py --num-machines 2 --machine-rank $SLURM_NODEID'",
        "srun accelerate launch --num_machines 2 --rdzv_backend c10d t.py",
        "srun accelerate launch --config_file multi.yaml --num_machines 2 t.py",
        "srun -N1 python train_net.py --num-machines 2",
        "srun python train_net.py --num-machines 1",
        'srun python train_net.py --num-machines 2 "$@"',
    ],
)
def test_machines_with_a_rank_or_a_rendezvous_or_one_node(step: str) -> None:
    assert "launcher-without-node-rank" not in rules(TWO + step + "\n")


def test_a_server_on_one_cpu_is_told_what_shares_it() -> None:
    head = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --gpus-per-node=4\n"
    [finding] = [
        f
        for f in lint_text(head + "vllm serve m --tensor-parallel-size 4\n", "t.slurm", V)
        if f.rule == "launcher-cpus-per-task"
    ]
    assert "data loaders" not in finding.message
    assert "engine" in finding.message and "gives CPUs with each GPU" in finding.message
    assert "2 + GPUs per node" in finding.fix


def test_one_task_per_gpu_each_starting_a_worker_per_gpu() -> None:
    head = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2\n#SBATCH -c 8 --gpus-per-node=4\n"
    step = "srun --ntasks-per-node=$G torchrun --nproc_per_node={w} t.py\n"
    assert (5, "error", "launcher-tasks-per-node") in found(head + step.format(w="${G}"))
    assert "launcher-tasks-per-node" not in rules(head + step.format(w="$W"))
    job = head + "#SBATCH --ntasks-per-node=${G}\n"
    wrapped = "srun bash -c 'torchrun --nproc_per_node=${G} t.py'\n"
    assert (6, "error", "launcher-tasks-per-node") in found(job + wrapped)
    own = "srun --ntasks=$N torchrun --nproc_per_node=$G t.py\n"
    assert "launcher-tasks-per-node" not in rules(job + own)


def test_the_jobs_own_count_passed_to_the_step_is_the_jobs() -> None:
    step = "srun --ntasks-per-node=$SLURM_NTASKS_PER_NODE torchrun --nproc_per_node 4 t.py\n"
    assert (6, "error", "launcher-tasks-per-node") in found(FOUR_TASKS + step)
    one = (
        "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2 --ntasks-per-node=1\n#SBATCH --gpus-per-node=4\n"
    )
    assert (5, "info", "launcher-cpus-per-task") in found(one + step)


def test_a_launcher_in_a_comment_after_code_runs_nothing() -> None:
    head = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --gpus-per-node=4\n"
    assert found(head + "python train.py  # was: torchrun --nproc_per_node 4 train.py\n") == []
    assert (4, "info", "launcher-cpus-per-task") in found(
        head + "torchrun --nproc_per_node 4 train.py  # four workers\n"
    )


def test_one_worker_read_from_the_whole_command() -> None:
    head = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --gpus-per-node=4\n"
    launch = "torchrun --standalone \\\n  --nproc_per_node {n} \\\n  train.py\n"
    assert "launcher-cpus-per-task" not in rules(head + launch.format(n=1))
    assert "launcher-cpus-per-task" in rules(head + launch.format(n=4))


def test_the_batch_step_of_several_tasks_has_their_cpus() -> None:
    head = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --gpus-per-node=4\n#SBATCH --ntasks-per-node=4\n"
    assert "launcher-cpus-per-task" not in rules(head + "torchrun --nproc_per_node 4 t.py\n")


def test_workers_beyond_the_gpus_are_the_mismatch_alone() -> None:
    launch = "accelerate launch --num_processes 4 train.py\n"
    one_gpu = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --gres=gpu:1\n"
    assert rules(one_gpu + launch) & {"launcher-cpus-per-task", "gpus-per-node-mismatch"} == {
        "gpus-per-node-mismatch"
    }


def test_accelerate_machines_from_its_config_are_unknown_on_several_nodes() -> None:
    step = "srun accelerate launch --config_file multi.yaml --num_processes 16 t.py\n"
    assert mismatches(EIGHT + step) == []


def test_a_whole_step_of_one_task_has_every_cpu_of_the_jobs_tasks() -> None:
    """srun --ntasks-per-node=1 without --exact in a job of 8 tasks per node: 8 CPUs."""
    head = "#!/bin/bash\n#SBATCH -t 10 -N 2\n#SBATCH --gpus-per-node=8 --ntasks-per-node=8\n"
    step = "srun --ntasks-per-node=1 torchrun --nnodes 2 --nproc_per_node 8 t.py\n"
    assert "launcher-cpus-per-task" not in rules(head + step)


@pytest.mark.parametrize(
    "guard", ['[ "$SLURM_LOCALID" -eq 0 ]', "[[ $SLURM_LOCALID == 0 ]]", "(( SLURM_LOCALID == 0 ))"]
)
def test_a_launcher_started_by_the_first_task_of_each_node_only(guard: str) -> None:
    head = "#!/bin/bash\n#SBATCH -t 10 -N 2 --ntasks-per-node=8 --gpus-per-node=8 -c 8\n"
    body = f"if {guard}; then torchrun --nnodes 2 --node_rank $SLURM_NODEID t.py; fi"
    assert "launcher-tasks-per-node" not in rules(head + f"srun bash -c '{body}'\n")
    unguarded = "srun bash -c 'torchrun --nnodes 2 --node_rank $SLURM_NODEID t.py'\n"
    assert "launcher-tasks-per-node" in rules(head + unguarded)


def test_tasks_that_each_start_one_worker_are_the_launchers_nodes() -> None:
    head = "#!/bin/bash\n#SBATCH -t 10 -N 2 --ntasks-per-node=4 --gpus-per-node=4 -c 8\n"
    step = (
        "srun bash -c 'CUDA_VISIBLE_DEVICES=$SLURM_LOCALID torchrun --nnodes $SLURM_NTASKS "
        "--node_rank $SLURM_PROCID --nproc_per_node {n} t.py'\n"
    )
    assert "launcher-tasks-per-node" not in rules(head + step.format(n=1))
    assert "launcher-tasks-per-node" in rules(head + step.format(n=4))
