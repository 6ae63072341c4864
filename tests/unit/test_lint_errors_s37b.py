"""sbatch header and srun CPU rules, fixed on the spent third hold-out (issue 32)."""

from __future__ import annotations

import pytest

from tests.lint_headers import V24, header, of_rule


@pytest.mark.parametrize(
    "option",
    ["--account=[budget code]", "--gres=[4 A100 80g]", "--partition=[your partition name]"],
)
def test_a_bracketed_placeholder_of_several_words_is_a_template_not_refused(option: str) -> None:
    assert of_rule(header(option), "sbatch-unknown-option") == []


def test_a_hostlist_bracket_does_not_hide_a_refused_word() -> None:
    assert of_rule(header("--nodelist=gpu[01-04] extra"), "sbatch-unknown-option") == [(3, "error")]


def job(*body: str, cpus: int = 16) -> str:
    return f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH --cpus-per-task={cpus}\n" + "\n".join(body) + "\n"


@pytest.mark.parametrize(
    "step",
    [
        "srun -l rsync -rvlogtP $IMAGE /mnt/image.sqsh",
        "srun --ntasks-per-node=1 scp head:/data/x.tar /tmp/",
        "srun bash -c 'pkill -f vllm || true; sync'",
    ],
)
def test_a_copy_or_kill_step_uses_one_cpu_at_22_05(step: str) -> None:
    assert of_rule(job(step), "srun-cpus-per-task") == []


def test_a_shell_after_options_from_a_variable_runs_the_real_program() -> None:
    text = job(
        "export OMP_NUM_THREADS=1",
        'SRUN_ARGS="--wait=60 --kill-on-bad-exit=1"',
        'RUN="torchrun --nproc_per_node 4 train.py"',
        'srun $SRUN_ARGS --jobid $SLURM_JOBID bash -c "$RUN"',
    )
    assert of_rule(text, "srun-cpus-per-task") == [(7, "warning")]
    assert of_rule(text, "srun-cpus-per-task", V24) == []


def test_one_thread_per_task_of_a_compiled_program_still_needs_no_cpus() -> None:
    text = job("export OMP_NUM_THREADS=1", 'OPTS="--wait=60"', "srun $OPTS ./lmp -in in.lj")
    assert of_rule(text, "srun-cpus-per-task") == []
