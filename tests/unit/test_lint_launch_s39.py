"""Launcher rules judged on classes found in the spent fifth hold-out (issue 32).

Each case is a small synthetic script of a class found there, not a copy of one file.
"""

from __future__ import annotations

from pathlib import Path

from slurmkit.lint import LintContext, SlurmVersion, lint_path, lint_text

V22 = LintContext(SlurmVersion.parse("22.05.8"))
V24 = LintContext(SlurmVersion.parse("24.11.5"))
NODES = (
    "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 4\n#SBATCH --ntasks-per-node=1\n#SBATCH --gres=gpu:4\n"
)


def found(text: str, context: LintContext = V24) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", context)]


def rules(text: str, context: LintContext = V24) -> set[str]:
    return {rule for _, _, rule in found(text, context)}


ACCELERATE = "--multi_gpu --num_processes 16 --num_machines 4 train.py\n"


def test_machines_given_to_a_wrapper_script_lint_cannot_read_are_unknown() -> None:
    # the wrapper may run accelerate launch --machine_rank $SLURM_PROCID "$@"
    for program in ("$WORK/bin/launch.sh", "bash $WORK/bin/launch.sh"):
        script = NODES + f"srun {program} {ACCELERATE}"
        assert "launcher-without-node-rank" not in rules(script)
    # accelerate itself, in the step: no rank anywhere
    direct = NODES + f"srun accelerate launch {ACCELERATE}"
    assert (6, "error", "launcher-without-node-rank") in found(direct)
    # bash -c runs a command string that is the step's own text
    string = NODES + f"srun bash -c 'accelerate launch {ACCELERATE.strip()}'\n"
    assert (6, "error", "launcher-without-node-rank") in found(string)


def _repo(tmp_path: Path, helper: str) -> Path:
    top = tmp_path / "repo"
    (top / ".git").mkdir(parents=True)
    (top / "launch.sh").write_text("#!/bin/bash\n" + helper)
    job = top / "job.sh"
    job.write_text(NODES + f"srun ./launch.sh {ACCELERATE}")
    return job


def test_a_wrapper_script_lint_reads_is_judged_by_what_it_adds(tmp_path: Path) -> None:
    passes = _repo(tmp_path / "a", 'accelerate launch "$@"\n')
    assert "launcher-without-node-rank" in {f.rule for f in lint_path(passes, V24)}
    ranks = _repo(tmp_path / "b", 'accelerate launch --machine_rank "$SLURM_PROCID" "$@"\n')
    assert "launcher-without-node-rank" not in {f.rule for f in lint_path(ranks, V24)}


def test_quotes_spliced_into_a_single_quoted_string_are_read() -> None:
    # '…--nnodes='"$SLURM_NNODES"' …': the batch shell's value spliced into the string
    script = NODES + (
        "srun bash -c '\n"
        "  torchrun --nnodes='\"$SLURM_NNODES\"' --nproc-per-node=4 \\\n"
        "    --rdzv_backend='\"c10d\"' --rdzv_endpoint='\"$MASTER_ADDR\"':29500 train.py\n"
        "'\n"
    )
    assert rules(script) & {"launcher-without-nnodes", "launcher-without-node-rank"} == set()


def test_srun_by_its_path_starts_a_step() -> None:
    script = (
        NODES
        + "#SBATCH -c 16\n"
        + (
            "/opt/slurm/bin/srun bash -c 'torchrun --nnodes=$SLURM_NNODES --nproc-per-node=4 "
            "--rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500 train.py'\n"
        )
    )
    assert "launcher-outside-srun" not in rules(script)
    assert (7, "warning", "srun-cpus-per-task") in found(script, V22)


def test_a_header_with_no_shape_leaves_the_cpus_to_the_command_line() -> None:
    command = "torchrun --nproc_per_node 4 train.py\n"
    # a name and a time limit only: the submitter passes nodes, GPUs and CPUs
    assert "launcher-cpus-per-task" not in rules("#!/bin/bash\n#SBATCH -J x -t 10\n" + command)
    shaped = "#!/bin/bash\n#SBATCH -J x -t 10\n#SBATCH --gres=gpu:4\n" + command
    assert (4, "info", "launcher-cpus-per-task") in found(shaped)


def test_workers_of_a_job_with_no_gpus_are_cpu_workers() -> None:
    head = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 1 -n 1 -c 72\n#SBATCH --gres=gpu:%d\n"
    command = "srun torchrun --nnodes=1 --nproc_per_node=72 relabel.py\n"
    assert "gpus-per-node-mismatch" not in rules(head % 0 + command)
    assert (5, "info", "gpus-per-node-mismatch") in found(head % 4 + command)


def test_a_gpu_count_variable_beyond_a_one_node_jobs_gpus() -> None:
    head = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --nodes=%d\n#SBATCH --gpus-per-node=1\n"
    body = (
        "NUM_GPUS=$SLURM_GPUS_PER_NODE\nNUM_GPUS=4\n"
        "lm_eval --model vllm --model_args pretrained=m,tensor_parallel_size=$NUM_GPUS\n"
    )
    assert (6, "info", "gpus-per-node-mismatch") in found(head % 1 + body)
    assert "gpus-per-node-mismatch" not in rules(head % 1 + body.replace("=4", "=1"))
    # on several nodes a tensor parallel group may span them
    assert "gpus-per-node-mismatch" not in rules(head % 2 + body)
    # a count no GPU option reads is not judged
    assert "gpus-per-node-mismatch" not in rules(head % 1 + "NUM_GPUS=4\necho $NUM_GPUS\n")
