"""Warning rules judged on scripts from the spent third hold-out (issue 32).

Each case is a small synthetic script of a class found there, not a copy of one file.
"""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text

OLD = LintContext(SlurmVersion.parse("22.05.8"))
NEW = LintContext(SlurmVersion.parse("24.11.5"))


def found(text: str, context: LintContext = NEW) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", context)]


def rules(text: str, context: LintContext = NEW) -> set[str]:
    return {rule for _, _, rule in found(text, context)}


END_TIME = (
    "#!/bin/bash\n#SBATCH -t 60\n"
    "now=$(date +%s)\n"
    'left=$(echo "${SLURM_JOB_END_TIME} - ${now} - 600" | bc)\n'
    'stress-ng --timeout "${left}s"\n'
)


def test_job_end_time_is_empty_before_23_02() -> None:
    assert (4, "warning", "slurm-variable-unset") in found(END_TIME, OLD)


def test_job_end_time_is_set_from_23_02() -> None:
    assert "slurm-variable-unset" not in rules(END_TIME, NEW)


def test_job_end_time_with_a_fallback_is_fine_at_22_05() -> None:
    text = END_TIME.replace("${SLURM_JOB_END_TIME}", "${SLURM_JOB_END_TIME:-0}")
    assert "slurm-variable-unset" not in rules(text, OLD)


STORED = (
    "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
    'export CMD="torchrun \\\n    --nnodes \\$SLURM_NNODES --nproc-per-node 8 train.py"\n'
    "export CACHE=/scratch/cache\n"
)


def test_a_launcher_stored_in_a_variable_runs_where_it_is_expanded() -> None:
    text = STORED + 'srun --container-image=img:1 --container-mounts=a:b bash -c "$CMD" > log\n'
    lines = {(line, rule) for line, _, rule in found(text)}
    assert (8, "launcher-cpus-per-task") in lines  # the step's one CPU, said at the srun
    assert not {(5, "launcher-cpus-per-task"), (5, "launcher-outside-srun")} & lines


def test_a_stored_launcher_that_no_batch_command_runs_is_not_judged_there() -> None:
    # the srun that runs it is unread (here: after a line bash itself refuses)
    text = STORED + 'export DATA=<data_dir>\nsrun -l \\\n  bash -c "$CMD"\n'
    assert not {"launcher-outside-srun", "launcher-cpus-per-task"} & rules(text)


def test_a_stored_launcher_run_by_the_batch_step_is_still_outside_srun() -> None:
    assert (5, "info", "launcher-outside-srun") in found(STORED + 'bash -c "$CMD"\n')
    assert (5, "info", "launcher-outside-srun") in found(STORED + "$CMD\n")


TRIALS = (
    "#!/bin/bash\n#SBATCH -N 2\n#SBATCH -t 60\nset -eux\n"
    "(srun all_reduce_perf -b 8 -e 128M) |& tee nccl.log\n"
    'for trial in $(seq 1 "$NEXP"); do\n'
    "    (srun python train.py) |& tee run_${trial}.log\n"
    "    python check_log.py run_${trial}.log || true\n"
    "done\n"
)


def test_a_loop_of_runs_with_a_log_each_goes_on_past_a_failed_run() -> None:
    assert "tee-without-pipefail" not in rules(TRIALS)


def test_a_pipeline_after_the_loop_of_runs_is_still_judged() -> None:
    text = TRIALS + "srun python summarize.py | tee summary.log\nrm -f run_*.tmp\n"
    assert (10, "warning", "tee-without-pipefail") in found(text)


def test_the_last_command_of_the_job_is_judged_in_a_loop_too() -> None:
    text = (
        "#!/bin/bash\n#SBATCH -t 60\nset -e\n"
        "for stage in 1 2; do\n    srun python train.py --stage $stage | tee log_$stage\ndone\n"
    )
    assert (5, "warning", "tee-without-pipefail") in found(text)


FROM_ENV = (
    "#!/bin/bash\n#SBATCH --ntasks-per-node=1\n#SBATCH --nodes={nodes}\n#SBATCH --gpus-per-task=8\n"
    "srun torchrun --nproc_per_node=$NUM_TRAINERS --nnodes=$NUM_NODES train.py\n"
)


def test_a_script_whose_directives_name_shell_variables_takes_them_from_the_submitter() -> None:
    assert "variable-never-set" not in rules(FROM_ENV.format(nodes="$NUM_NODES"))


def test_counts_nobody_sets_are_still_found_in_a_script_with_literal_directives() -> None:
    assert (5, "info", "variable-never-set") in found(FROM_ENV.format(nodes="2"))


def _server_job(gres: str) -> str:
    return (
        f"#!/bin/bash\n#SBATCH -t 60\n#SBATCH --cpus-per-task=16\n#SBATCH --gres={gres}\n"
        "vllm serve my/model --tensor-parallel-size 4\n"
    )


def test_a_gres_to_fill_in_or_naming_a_gpu_model_or_share_may_ask_for_gpus() -> None:
    for gres in ("[4 A100 80g]", "<gpus>", "a100:4", "shard:2", "mps:50"):
        assert "gpu-program-without-gpus" not in rules(_server_job(gres)), gres


def test_a_gres_of_no_gpu_is_still_no_gpu() -> None:
    assert (5, "info", "gpu-program-without-gpus") in found(_server_job("nvme:1"))


NEXTFLOW = (
    "#!/bin/bash\n#SBATCH -t 7-\n#SBATCH -c 8\necho start\n"
    "nextflow run nf-core/sarek -profile singularity {bg}\n"
)


def test_a_program_that_detaches_itself_is_killed_when_the_script_ends() -> None:
    assert (5, "error", "background-never-waited") in found(NEXTFLOW.format(bg="-bg"))
    assert (5, "error", "background-never-waited") in found(
        NEXTFLOW.format(bg="-bg") + 'echo "done"\nwait\n'
    )


def test_the_same_program_in_the_foreground_or_kept_alive_is_fine() -> None:
    assert "background-never-waited" not in rules(NEXTFLOW.format(bg=""))
    kept = NEXTFLOW.format(bg="-bg") + "sleep 6d\n"
    assert "background-never-waited" not in rules(kept)


def _by_task(array: str, names: str) -> str:
    return (
        f"#!/bin/bash\n#SBATCH -t 60\n#SBATCH --array={array}\n"
        f"NAMES=(\n    {names}\n)\n"
        "python make.py --task_name=${NAMES[$SLURM_ARRAY_TASK_ID]}\n"
    )


def test_an_array_range_past_the_last_element_gives_empty_values() -> None:
    assert (7, "info", "unset-variable-option") in found(_by_task("0-3%2", "a b c"))


def test_an_array_range_within_the_list_is_fine() -> None:
    for array, names in (("0-2", "a b c"), ("1-3", "x a b c"), ("0-2:2", 'a "b c" d # e f')):
        assert "unset-variable-option" not in rules(_by_task(array, names)), array
