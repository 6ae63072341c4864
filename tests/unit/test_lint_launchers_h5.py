"""Launcher rules judged on scripts from the spent fourth hold-out (issue 32).

Each case is a small synthetic script of a class found there, not a copy of one file.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V = LintContext(SlurmVersion.parse("24.11.5"))
TWO_NODES = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n"


def rules(text: str) -> set[str]:
    return {f.rule for f in lint_text(text, "t.slurm", V)}


SERVER_IN_DOCKER = (
    TWO_NODES + "srun -N 1 bash -c \"docker exec -d node0 bash -c 'vllm serve m --port 8000'\"\n"
)
RAY_IN_DOCKER_FUNCTION = (
    TWO_NODES
    + "start() {\n"
    + '  local name="$1"; shift\n'
    + '  docker run --gpus all -d --name "$name" --net=host img "$@"\n'
    + "}\n"
    + 'srun -N 1 bash -c "\n'
    + "  $(declare -f start)\n"
    + "  start head ray start --head --port=6379 --block\n"
    + '"\n'
)


@pytest.mark.parametrize("text", [SERVER_IN_DOCKER, RAY_IN_DOCKER_FUNCTION])
def test_a_launcher_docker_starts_is_not_held_to_the_steps_cpu(text: str) -> None:
    # dockerd starts the container in its own cgroup: Slurm's CPU limit never reaches it
    assert "launcher-cpus-per-task" not in rules(text)


def test_the_same_launcher_run_by_the_step_itself_gets_its_one_cpu() -> None:
    plain = SERVER_IN_DOCKER.replace("docker exec -d node0 bash -c", "bash -c")
    assert "launcher-cpus-per-task" in rules(plain)
    # a function that does not run docker is no container
    local = RAY_IN_DOCKER_FUNCTION.replace("docker run --gpus all -d --name", "env NAME=")
    assert "launcher-cpus-per-task" in rules(local)


def test_a_launcher_named_in_a_message_of_a_printing_function_is_not_run() -> None:
    text = (
        TWO_NODES
        + 'info() { echo -e "[info] $*"; }\n'
        + 'info "Launching torchrun on every node"\n'
        + "srun python train.py\n"
    )
    assert not {r for r in rules(text) if r.startswith("launcher-")}
    run = text.replace('info() { echo -e "[info] $*"; }', 'info() { eval "$*"; }')
    assert "launcher-cpus-per-task" in rules(run)


def test_a_template_tag_among_the_directives_may_ask_for_cpus() -> None:
    text = (
        "#!/bin/bash\n#SBATCH -N {{NODES}}\n#SBATCH --ntasks-per-node=1\n"
        "{{PARTITION_SPECIFICS}}\n\n"
        "srun -N 1 -n 1 ray start --head --block &\n"
    )
    assert "launcher-cpus-per-task" not in rules(text)
    assert "launcher-cpus-per-task" in rules(text.replace("{{PARTITION_SPECIFICS}}\n", ""))


CUT_SRUN = (
    TWO_NODES
    + "set -e\n"
    + "srun singularity exec --nv \\\n"
    + "  -B /data:/data \\\n"
    + "  # bind more directories here\n"
    + '  "$IMAGE" bash -lc "\n'
    + "    torchrun --nnodes 2 --nproc_per_node 4 train.py\n"
    + '  "\n'
)


def test_a_launcher_cut_from_its_srun_by_a_comment_line_is_not_a_batch_step_launcher() -> None:
    # the comment ends the srun command; the broken continuation is the defect, and the
    # launcher was written for the step
    assert "launcher-outside-srun" not in rules(CUT_SRUN)


def test_a_launcher_after_a_finished_srun_still_runs_in_the_batch_step() -> None:
    finished = CUT_SRUN.replace("  -B /data:/data \\\n", "  -B /data:/data img true\n")
    assert "launcher-outside-srun" in rules(finished)
