"""sbatch header and srun CPU rules, judged by what sbatch's getopt and srun do (issue 32)."""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from tests.lint_headers import V22, V24, V26, header, of_rule


@pytest.mark.parametrize(
    "option",
    [
        "--image=docker:nersc/pytorch:24.01",
        "--image docker:nersc/pytorch:24.01",
        "--module=gpu",
        "--container-image=nvcr.io#nvidia/pytorch:24.01-py3",
        "--container-writable",
        "--environment=/capstor/env.toml",
    ],
)
def test_a_spank_plugin_option_is_info_not_an_error(option: str) -> None:
    assert of_rule(header(option), "sbatch-unknown-option") == [(3, "info")]


def test_a_spank_plugin_option_does_not_hide_a_refused_one() -> None:
    assert of_rule(header("--image=x --partiton=1"), "sbatch-unknown-option") == [(3, "error")]


@pytest.mark.parametrize("context", [V22, V24, V26])
@pytest.mark.parametrize("option", ["--cluster=wice", "--context=x", "--ntasks-per-tres=2"])
def test_aliases_and_rare_options_of_sbatch_are_known(option: str, context: LintContext) -> None:
    assert of_rule(header(option), "sbatch-unknown-option", context) == []


def test_external_is_an_option_from_26_05_only() -> None:
    assert of_rule(header("--external"), "sbatch-unknown-option", V26) == []
    assert of_rule(header("--external"), "sbatch-unknown-option", V24) == [(3, "error")]


@pytest.mark.parametrize(
    "option",
    [
        "-N ${NODES}",
        "-N$NODES",
        "--gpus-per-node=${GPUS}",
        "--ntasks-per-node ${N}",
        "-c $CPUS",
        "--ntasks=$((NODES * 4))",
    ],
)
def test_a_shell_variable_as_a_count_is_refused(option: str) -> None:
    assert of_rule(header(option), "sbatch-unknown-option") == [(3, "error")]


@pytest.mark.parametrize(
    "option",
    [
        "--chdir=/home/${USER}/run",
        "--job-name=${NAME}",
        "--nodes={{ nodes }}",
        "--nodes=<NODES>",
        "--ntasks-per-node=your_own_tasks_per_node",
    ],
)
def test_variables_in_text_options_and_templates_stay_unknown(option: str) -> None:
    assert of_rule(header(option), "sbatch-unknown-option") == []


@pytest.mark.parametrize("option", ["-constraint=gpu", "-partition=gpu", "-time=1:00:00"])
def test_a_long_option_with_one_dash_is_a_short_one_with_a_wrong_value(option: str) -> None:
    assert of_rule(header(option), "sbatch-unknown-option") == [(3, "error")]


MAILS = header("--mail-type=BEGIN", "--mail-type=END,FAIL")


def test_mail_types_given_twice_add_up_before_25_05() -> None:
    assert of_rule(MAILS, "sbatch-option-twice", V24) == []


def test_the_last_mail_type_replaces_the_others_from_25_05() -> None:
    assert of_rule(MAILS, "sbatch-option-twice", V26) == [(3, "warning")]


def job(*body: str, cpus: int = 16) -> str:
    return f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH --cpus-per-task={cpus}\n" + "\n".join(body) + "\n"


@pytest.mark.parametrize(
    "step",
    [
        "srun bash -c 'rm -rf /tmp/cache_* || true; echo \"$(hostname): wiped\"'",
        "srun -lu bash -c 'echo $(hostname) $(nvidia-smi | grep -o \"|[0-9]*MiB\")'",
        'srun bash -c "apt update && apt-get install -y infiniband-diags"',
        "srun bash -c 'ulimit -a; lscpu; nproc'",
        "srun julia --project=. run.jl",
        "export OMP_NUM_THREADS=1\nsrun -n 8 ./warpx inputs",
    ],
)
def test_a_step_that_uses_one_cpu_loses_nothing_at_22_05(step: str) -> None:
    assert of_rule(job(step), "srun-cpus-per-task") == []


@pytest.mark.parametrize(
    "step",
    [
        'srun env TMPDIR="$TMPDIR" python -m train --num-workers 4',
        "srun bash -c 'cd /work && python train.py'",
        "srun julia -t 16 run.jl",
        "export OMP_NUM_THREADS=1\nsrun python train.py",
        "export OMP_NUM_THREADS=1\nsrun singularity exec img.sif bash -c 'torchrun train.py'",
    ],
)
def test_a_step_that_runs_threads_or_workers_still_lacks_its_cpus_at_22_05(step: str) -> None:
    assert of_rule(job(step), "srun-cpus-per-task") == [(3 + step.count("\n") + 1, "warning")]


@pytest.mark.parametrize("value", ['"$SLURM_CPUS_PER_TASK"', "${SLURM_CPUS_PER_TASK}", "16"])
def test_srun_cpus_per_task_env_of_the_jobs_own_value_loses_nothing_at_24_11(value: str) -> None:
    text = job(f"export SRUN_CPUS_PER_TASK={value}", "srun python train.py")
    assert of_rule(text, "srun-cpus-per-task", V22) == []
    assert of_rule(text, "srun-cpus-per-task", V24) == []


def test_srun_cpus_per_task_env_of_another_value_is_lost_at_24_11() -> None:
    text = job("export SRUN_CPUS_PER_TASK=8", "srun python train.py")
    assert of_rule(text, "srun-cpus-per-task", V24) == [(5, "warning")]


def test_an_ignored_line_that_a_read_line_repeats_loses_nothing() -> None:
    text = header("--ntasks=4", "--cpus-per-task=1").replace(
        "#SBATCH --cpus-per-task=1", "#sbatch --cpus-per-task=1\n#SBATCH --cpus-per-task=1"
    )
    assert of_rule(text, "sbatch-directive-ignored") == []


def test_an_ignored_line_with_another_value_is_lost() -> None:
    text = header("--ntasks=4", "--cpus-per-task=1").replace(
        "#SBATCH --cpus-per-task=1", "#sbatch --cpus-per-task=8\n#SBATCH --cpus-per-task=1"
    )
    assert of_rule(text, "sbatch-directive-ignored") == [(4, "warning")]


@pytest.mark.parametrize(
    "comment",
    ["#sbatch --dependency afterok:$a:$b << EOF", "#sbatch --array=1-4 job.sh"],
)
def test_an_sbatch_command_shown_in_a_comment_is_no_directive(comment: str) -> None:
    assert of_rule(header("-n 1") + comment + "\n", "sbatch-directive-ignored") == []


def test_a_wrong_case_directive_after_a_command_is_still_ignored() -> None:
    text = header("-n 1") + "#sbatch --mem=4G\n"
    assert of_rule(text, "sbatch-directive-ignored") == [(5, "warning")]


@pytest.mark.parametrize(
    "step",
    [
        'ARGS="--cpus-per-task=16 -n 2"\nsrun $ARGS python train.py',
        'ARGS="-c 16"\nsrun ${ARGS} python train.py',
        'ARGS=(-c 16 -n 2)\nsrun "${ARGS[@]}" python train.py',
        "srun $SRUN_OPTS python train.py",
    ],
)
def test_cpus_per_task_given_to_srun_through_a_variable_reaches_it(step: str) -> None:
    assert of_rule(job(step), "srun-cpus-per-task") == []


@pytest.mark.parametrize("step", ['ARGS="-n 2"\nsrun $ARGS python train.py', "srun $EXE in"])
def test_a_variable_without_cpus_per_task_leaves_srun_without_it(step: str) -> None:
    assert of_rule(job(step), "srun-cpus-per-task") == [(3 + step.count("\n") + 1, "warning")]


def test_a_variable_in_a_heredoc_job_may_be_expanded_by_the_shell_that_feeds_it() -> None:
    job_script = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH -N ${N}\nhostname\n"
    text = f"#!/bin/bash\nN=4\nsbatch <<EOF\n{job_script}EOF\n"
    assert of_rule(text, "sbatch-unknown-option") == []


@pytest.mark.parametrize("path", ["job.sbatch.template", "submit.tmpl", "run.slurm.j2"])
def test_a_variable_in_a_template_file_is_filled_in_before_sbatch(path: str) -> None:
    text = header("-N ${NODES}")
    assert [f.rule for f in lint_text(text, path, V22) if f.rule == "sbatch-unknown-option"] == []
    assert of_rule(text, "sbatch-unknown-option") == [(3, "error")]


def test_the_fix_names_the_long_option_with_two_dashes() -> None:
    (finding,) = [
        f for f in lint_text(header("-partition=gpu"), "t.slurm", V22) if f.rule.endswith("option")
    ]
    assert "--partition=gpu" in finding.fix
