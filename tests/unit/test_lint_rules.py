"""Each lint rule on scripts with its mistake and on clean ones; versions; disable comments."""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.lint.rules import RULES
from slurmkit.slurm.records import SlurmVersion

HEAD = "#!/bin/bash\n#SBATCH --time=01:00:00\n#SBATCH --output=%x-%j.out\n"


def found(text: str, version: str | None = "22.05.8") -> list[tuple[int, str, str]]:
    context = LintContext(SlurmVersion.parse(version) if version else None)
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", context)]


def rules(text: str, version: str | None = "22.05.8") -> set[str]:
    return {rule for _, _, rule in found(text, version)}


def test_rules_have_unique_ids_and_known_severities() -> None:
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))
    assert {rule.severity for rule in RULES} <= {"error", "warning", "info"}


def test_a_clean_script_has_no_findings() -> None:
    text = HEAD + "#SBATCH -c 8\nset -eo pipefail\nsrun -c 8 python train.py | tee log\n"
    for version in ("22.05.8", "23.02.7", "23.11.0", "24.11.5", None):
        assert found(text, version) == []


# ---------------------------------------------------------------- srun-cpus-per-task

CPT = HEAD + "#SBATCH --cpus-per-task=48\n"


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("21.08.8", []),
        ("22.05.0", [(5, "warning", "srun-cpus-per-task")]),
        ("22.05.8", [(5, "warning", "srun-cpus-per-task")]),
        ("23.02.7", [(5, "warning", "srun-cpus-per-task")]),
        ("23.11.0", []),
        ("24.11.5", []),
        (None, [(5, "warning", "srun-cpus-per-task")]),
    ],
)
def test_plain_srun_by_version(version: str | None, expected: list) -> None:
    assert found(CPT + "srun myprogram\n", version) == expected


@pytest.mark.parametrize(
    "line",
    [
        "srun -c 48 myprogram",
        "srun -c48 myprogram",
        "srun --cpus-per-task 48 myprogram",
        'srun --cpus-per-task="$SLURM_CPUS_PER_TASK" myprogram',
        "srun --cpus-per-gpu=6 myprogram",
        "SRUN_CPUS_PER_TASK=48 srun myprogram",
    ],
)
def test_explicit_cpus_satisfy_22_05(line: str) -> None:
    assert found(CPT + line + "\n", "22.05.8") == []


def test_exported_srun_cpus_per_task_counts_from_where_it_is_exported() -> None:
    text = CPT + "srun a\nexport SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK\nsrun b\n"
    assert found(text, "22.05.8") == [(5, "warning", "srun-cpus-per-task")]
    text = CPT + "SRUN_CPUS_PER_TASK=48\nexport SRUN_CPUS_PER_TASK\nsrun b\n"
    assert found(text, "23.02.7") == []
    text = CPT + "set -a\nSRUN_CPUS_PER_TASK=48\nsrun b\n"
    assert found(text, "22.05.8") == []


def test_unexported_srun_cpus_per_task_is_named_in_the_error() -> None:
    text = CPT + "SRUN_CPUS_PER_TASK=48\nsrun b\n"
    (finding,) = lint_text(text, "t", LintContext(SlurmVersion(22, 5, 8)))
    assert finding.rule == "srun-cpus-per-task" and "not exported" in finding.message
    assert "line 5" in finding.message


def test_relying_on_srun_cpus_per_task_alone_warns_from_23_11() -> None:
    # 8, not the job's 48: srun from 23.11 takes the job's 48 (its own value is lost)
    text = CPT + "export SRUN_CPUS_PER_TASK=8\nsrun b\n"
    assert found(text, "23.02.7") == []
    assert found(text, "23.11.0") == [(6, "warning", "srun-cpus-per-task")]
    assert found(text, "24.11.5") == [(6, "warning", "srun-cpus-per-task")]
    assert found(text, None) == [(6, "warning", "srun-cpus-per-task")]


def test_no_finding_without_cpus_to_lose_or_for_other_jobs_and_overlap() -> None:
    assert found(HEAD + "srun a\n") == []
    assert found(HEAD + "#SBATCH -c 1\nsrun a\n") == []
    assert found(CPT + "srun --jobid=1234 --overlap py-spy dump\n") == []


def test_srun_inside_command_substitution_is_checked() -> None:
    assert found(CPT + "n=$(srun python count.py | wc -l)\n") == [
        (5, "warning", "srun-cpus-per-task")
    ]


@pytest.mark.parametrize(
    "line",
    [
        "n=$(srun hostname | wc -l)",  # this test once expected an error here (issue 21)
        'head_ip=$(srun -N1 -n1 -w "$HEAD_NODE" hostname --ip-address)',
        "srun /bin/hostname",
        "srun --ntasks-per-node=1 nvidia-smi -L",
    ],
)
def test_one_cpu_helpers_lose_nothing_without_cpus_per_task(line: str) -> None:
    assert found(CPT + line + "\n", "22.05.8") == []
    assert found(CPT + "export SRUN_CPUS_PER_TASK=48\n" + line + "\n", "24.11.5") == []


# ---------------------------------------------------------------- slurm-cpus-per-task-env


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("22.05.8", [(5, "warning", "slurm-cpus-per-task-env")]),
        ("23.02.7", [(5, "warning", "slurm-cpus-per-task-env")]),
        ("23.11.0", [(5, "error", "slurm-cpus-per-task-env")]),
        ("24.11.5", [(5, "error", "slurm-cpus-per-task-env")]),
        (None, [(5, "error", "slurm-cpus-per-task-env")]),
        ("21.08.8", []),
    ],
)
def test_slurm_cpus_per_task_different_from_the_jobs(version: str | None, expected: list) -> None:
    text = CPT + "SLURM_CPUS_PER_TASK=8\nsrun -c 8 a\n"
    assert found(text, version) == expected


def test_slurm_cpus_per_task_equal_or_not_literal_is_fine() -> None:
    assert found(CPT + "export SLURM_CPUS_PER_TASK=48\nsrun -c 48 a\n", "24.11.5") == []
    assert found(CPT + "export SLURM_CPUS_PER_TASK=$N\nsrun -c 48 a\n", "24.11.5") == []
    assert found(CPT + "SLURM_CPUS_PER_TASK=4 srun -c 4 a\n", "24.11.5") == [
        (5, "error", "slurm-cpus-per-task-env")
    ]


# ---------------------------------------------------------------- launchers

LAUNCH = HEAD + "#SBATCH --nodes=2\n#SBATCH -c 32\n#SBATCH --gres=gpu:8\n"
# c10d: the rendezvous numbers the nodes (no --node_rank needed: launcher-without-node-rank)
C10D = "--rdzv_backend=c10d --rdzv_endpoint=$MASTER_ADDR:29500"
TORCHRUN = f"srun -c 32 torchrun --nnodes=$SLURM_NNODES --nproc_per_node=8 {C10D} train.py\n"


def test_a_correct_launcher_script_is_clean() -> None:
    assert found(LAUNCH + "#SBATCH --ntasks-per-node=1\n" + TORCHRUN) == []


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        ("#SBATCH --ntasks-per-node=8\n", 8),  # said at the step that starts the launchers
        ("#SBATCH --ntasks=16\n", 8),
    ],
)
def test_more_than_one_task_per_node_with_a_launcher(extra: str, line: int) -> None:
    assert found(LAUNCH + extra + TORCHRUN) == [(line, "error", "launcher-tasks-per-node")]


def test_launcher_srun_may_override_the_jobs_tasks_per_node() -> None:
    text = (
        LAUNCH
        + "#SBATCH --ntasks-per-node=8\n"
        + f"srun -c 32 --ntasks-per-node=1 torchrun --nnodes=2 {C10D} t.py\n"
    )
    assert found(text) == []
    text = LAUNCH + "srun -c 32 --ntasks-per-node=4 accelerate launch t.py\n"
    assert found(text) == [(7, "error", "launcher-tasks-per-node")]


def test_launcher_through_a_variable_or_heredoc() -> None:
    text = (
        LAUNCH
        + "#SBATCH --ntasks-per-node=2\n"
        + "task=$(cat <<'EOF'\ndeepspeed --num_gpus 8 train.py\nEOF\n)\n"
        + 'srun -c 32 bash -c "$task"\n'
    )
    # said at the srun that starts the launchers; the message names the #SBATCH line
    assert found(text) == [(12, "error", "launcher-tasks-per-node")]


def test_a_launcher_in_the_batch_step_runs_once_whatever_the_tasks() -> None:
    text = HEAD + "#SBATCH -c 32 --gres=gpu:8 --ntasks-per-node=8\ndeepspeed --num_gpus 8 t.py\n"
    assert found(text) == []


def test_python_imports_and_options_are_not_launchers() -> None:
    text = (
        LAUNCH
        + "#SBATCH --ntasks-per-node=4\n"
        + ("cat > x.py <<EOF\nimport deepspeed\nEOF\nsrun -c 32 python x.py --deepspeed ds.json\n")
    )
    assert found(text) == []


@pytest.mark.parametrize(
    ("assignment", "expected"),
    [
        ("NNODES=64", [(8, "error", "nodes-mismatch")]),
        ("NNODES=2", []),
        ("NNODES=$SLURM_NNODES", []),
        ("export NUM_NODES=3", [(8, "error", "nodes-mismatch")]),
    ],
)
def test_nnodes_against_sbatch_nodes(assignment: str, expected: list) -> None:
    text = LAUNCH + "#SBATCH --ntasks-per-node=1\n" + assignment + "\n" + TORCHRUN
    assert found(text) == expected


def test_nnodes_option_and_node_ranges() -> None:
    text = LAUNCH + f"srun -c 32 torchrun --nnodes 4 --nproc_per_node=8 {C10D} t.py\n"
    assert found(text) == [(7, "error", "nodes-mismatch")]
    text = HEAD + "#SBATCH -N 2-4 -c 32\nsrun -c 32 torchrun --nnodes=1:3 t.py\nNNODES=3\n"
    assert found(text) == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("GPUS_PER_NODE=4", [(8, "info", "gpus-per-node-mismatch")]),
        ("GPUS_PER_NODE=8", []),
        ("GPUS_PER_NODE=$SLURM_GPUS_ON_NODE", []),
    ],
)
def test_gpus_per_node_against_gres(line: str, expected: list) -> None:
    text = LAUNCH + "#SBATCH --ntasks-per-node=1\n" + line + "\n" + TORCHRUN
    assert found(text) == expected


def test_nproc_per_node_against_gres_and_gpus_without_request() -> None:
    text = LAUNCH + f"srun -c 32 torchrun --nnodes=2 {C10D} --nproc_per_node=16 t.py\n"
    assert found(text) == [(7, "info", "gpus-per-node-mismatch")]
    text = LAUNCH + f"srun -c 32 torchrun --nnodes=2 {C10D} --nproc_per_node 4 t.py\n"
    # fewer workers than GPUs: each worker sees all 8 (torchrun leaves
    # CUDA_VISIBLE_DEVICES alone) and may use several; intent, not a defect
    assert found(text) == [(7, "info", "gpus-per-node-mismatch")]
    text = HEAD + "#SBATCH -c 8\nGPUS_PER_NODE=8\nsrun -c 8 python t.py\n"
    assert found(text) == [(5, "info", "gpus-per-node-mismatch")]


def test_launcher_cpus() -> None:
    text = HEAD + "#SBATCH --gres=gpu:8\nsrun torchrun --nproc_per_node=8 t.py\n"
    assert found(text) == [(5, "info", "launcher-cpus-per-task")]
    text = HEAD + "#SBATCH --gres=gpu:8\nsrun -c 32 torchrun --nproc_per_node=8 t.py\n"
    assert found(text) == []
    text = HEAD + "#SBATCH --gres=gpu:8 --exclusive\nsrun torchrun --nproc_per_node=8 t.py\n"
    assert found(text, "24.11.5") == []


def test_launcher_cpus_with_one_worker_is_a_plain_training() -> None:
    """One worker per node shares the CPU with nobody a plain `python t.py` would not."""
    text = HEAD + "#SBATCH --gres=gpu:1\ntorchrun --standalone --nproc-per-node 1 t.py\n"
    assert found(text) == []
    assert found(HEAD + "#SBATCH --gres=gpu:1\ntorchrun --standalone t.py\n") == []
    text = HEAD + "#SBATCH --gres=gpu:2\ntorchrun --standalone --nproc-per-node 2 t.py\n"
    assert found(text) == [(5, "info", "launcher-cpus-per-task")]


def test_launcher_outside_srun_on_several_nodes() -> None:
    text = LAUNCH + "torchrun --nnodes=2 --nproc_per_node=8 t.py\n"
    assert found(text) == [(7, "info", "launcher-outside-srun")]
    text = LAUNCH + 'pdsh -w "$NODES" torchrun --nnodes=2 --nproc_per_node=8 t.py\n'
    assert found(text) == []


# ---------------------------------------------------------------- header rules


def test_missing_time_and_shebang() -> None:
    assert found("#!/bin/bash\n#SBATCH -N 1\nhostname\n") == [(2, "info", "missing-time")]
    assert found("#SBATCH -t 5\nhostname\n") == [(1, "error", "missing-shebang")]
    assert found("\n#!/bin/bash\n#SBATCH -t 5\n") == [(1, "error", "missing-shebang")]
    assert found("echo not a batch script\n") == []  # no #SBATCH: nothing to say


def test_a_shebang_that_lost_its_hash_bang_is_the_one_finding() -> None:
    """``bin/bash`` on line 1 is a command, so every #SBATCH below reads as after it; but
    sbatch refuses the script for its first line, and that is the one fix to name."""
    broken = "bin/bash\n#SBATCH -t 5\n#SBATCH -N 1\nsrun hostname\n"
    assert found(broken) == [(1, "error", "missing-shebang")]
    # a real command before the header is the other defect: the header is ignored
    late = "#!/bin/bash\nmodule load x\n#SBATCH -t 5\nsrun hostname\n"
    assert found(late) == [(3, "warning", "sbatch-directive-ignored")]
    wrapper = "bin/bash\necho run\n#SBATCH -t 5\n"  # line 2 still ends the header
    assert found(wrapper) == [(3, "warning", "sbatch-directive-ignored")]
    # a file whose first line feeds the job script to sbatch is a submitter, run by bash
    submitter = "sbatch <<EOT\n#!/bin/bash\n#SBATCH -t 5\nsrun hostname\nEOT\n"
    assert [f for f in found(submitter) if f[2] == "missing-shebang"] == []


@pytest.mark.parametrize(
    ("directives", "expected"),
    [
        # issue 32 item 2: a fixed name is a defect only where runs collide
        ("#SBATCH --output=train.log\n", [(3, "info", "output-without-jobid")]),
        ("#SBATCH -o %x.out -e %x.err\n", [(3, "info", "output-without-jobid")] * 2),
        (
            "#SBATCH --array=1-4\n#SBATCH --output=train.log\n",
            [(4, "warning", "output-collides")],
        ),
        ("#SBATCH --output=%x-%j.out\n", []),
        ("#SBATCH --output=%x-%A.out\n", []),
        ("#SBATCH --output=/dev/null\n", []),
        (
            "#SBATCH --array=1-4\n#SBATCH --output=%x-%A.out\n",
            [(4, "warning", "output-collides")],
        ),
        ("#SBATCH --array=1-4\n#SBATCH --output=%x-%A_%a.out\n", []),
    ],
)
def test_output_names(directives: str, expected: list) -> None:
    assert found("#!/bin/bash\n#SBATCH -t 5\n" + directives + "hostname\n") == expected


@pytest.mark.parametrize(
    ("array", "name", "expected"),
    [
        ("1-10", "train-7b", [(4, "info", "array-without-limit")]),
        ("1-10%4", "train-7b", [(4, "info", "array-without-limit")]),
        ("1-10%1", "train-7b", []),
        ("1-10", "preprocess", []),
    ],
)
def test_array_limit_for_trainings(array: str, name: str, expected: list) -> None:
    text = HEAD + f"#SBATCH --array={array} -J {name}\nhostname\n"
    assert found(text.replace("%x-%j", "%x-%A_%a")) == expected


def test_dos_line_breaks() -> None:
    assert found("#!/bin/bash\r\n#SBATCH -t 5\r\nhostname\r\n") == [(1, "error", "dos-line-breaks")]
    assert found("#!/bin/bash\n#SBATCH -t 5\nhostname\r\n") == [(3, "error", "dos-line-breaks")]


def test_dos_line_breaks_are_one_finding_not_one_per_continued_line() -> None:
    """sbatch refuses a \\r\\n script whole (sbatch.c contains_dos_linebreak): it never
    reaches bash, where `\\` + \\r would end each command and run `--lr` as a command.
    One defect, said once; the rest is judged as the script reads after dos2unix."""
    text = "#!/bin/bash\n#SBATCH -t 5\npython train.py \\\n  --cuda True \\\n  --lr 2\n"
    assert found(text.replace("\n", "\r\n")) == [(1, "error", "dos-line-breaks")]
    # still true after dos2unix: found on the converted text too, at the same line
    crlf = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH -c 8\nsrun python t.py\n".replace("\n", "\r\n")
    assert found(crlf, "22.05") == [
        (1, "error", "dos-line-breaks"),
        (4, "warning", "srun-cpus-per-task"),
    ]


def test_directives_sbatch_ignores() -> None:
    text = HEAD + " #SBATCH -c 4\n#Sbatch -N 2\nhostname\n#SBATCH --gres=gpu:1\n"
    assert found(text) == [
        (4, "warning", "sbatch-directive-ignored"),
        (5, "warning", "sbatch-directive-ignored"),
        (7, "warning", "sbatch-directive-ignored"),
    ]
    assert found(HEAD + "##SBATCH -c 4\nhostname\n") == []  # the usual way to switch one off


def test_continued_directive() -> None:
    text = HEAD + "#SBATCH --nodes=2 \\\n#SBATCH -c 4\nhostname\n"
    assert found(text) == [(4, "warning", "sbatch-continuation")]


# ---------------------------------------------------------------- command rules


def test_tee_without_pipefail() -> None:
    assert found(HEAD + "python t.py 2>&1 | tee -a log\n") == [
        (4, "warning", "tee-without-pipefail")
    ]
    assert found(HEAD + "set -euo pipefail\npython t.py | tee log\n") == []
    assert found(HEAD + "set -e -o pipefail\npython t.py | tee log\n") == []
    assert found(HEAD + "python t.py | tee log\nset -o pipefail\n") == [
        (4, "warning", "tee-without-pipefail")
    ]
    assert found(HEAD + "tee log < x\n") == []


def test_clear_in_a_batch_script() -> None:
    assert found(HEAD + "clear\necho hi\n") == [(4, "info", "terminal-command")]
    assert found(HEAD + "tput clear\n") == [(4, "info", "terminal-command")]
    assert found(HEAD + "echo clear\n") == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("srun --jobid=1234 py-spy dump", [(4, "info", "srun-without-overlap")]),
        ("srun --jobid 1234 --gres=gpu:0 py-spy dump", [(4, "info", "srun-without-overlap")]),
        ("srun --jobid=$TRAIN --overlap --gres=gpu:0 py-spy dump", []),
        ("srun --jobid $SLURM_JOBID ./test.py", []),
        ('srun --jobid "${SLURM_JOB_ID}" ./test.py', []),
    ],
)
def test_monitoring_srun(line: str, expected: list) -> None:
    assert found(HEAD + line + "\n") == expected


def test_gres_zero_alone_is_explained() -> None:
    (finding,) = lint_text(HEAD + "srun --jobid=9 --gres=gpu:0 nvidia-smi\n", "t")
    assert "20.11" in finding.message and "--overlap" in finding.fix


def test_step_beside_a_background_step() -> None:
    text = HEAD + "srun python train.py &\nsrun nvidia-smi\nwait\nsrun post\n"
    assert found(text) == [(5, "info", "srun-without-overlap")]
    text = HEAD + "srun python train.py &\nsrun --overlap nvidia-smi\n"
    assert found(text) == []


# ---------------------------------------------------------------- disable comments


def test_disable_on_the_line_above_or_the_same_line() -> None:
    base = CPT + "srun a\n"
    assert found(base) == [(5, "warning", "srun-cpus-per-task")]
    above = CPT + "# slurmkit-lint: disable=srun-cpus-per-task\nsrun a\n"
    assert found(above) == []
    same = CPT + "srun a  # slurmkit-lint: disable=srun-cpus-per-task\n"
    assert found(same) == []
    two_above = CPT + "# slurmkit-lint: disable=srun-cpus-per-task\n\nsrun a\n"
    assert found(two_above) == [(7, "warning", "srun-cpus-per-task")]


def test_disable_other_rule_all_and_file() -> None:
    assert found(CPT + "srun a  # slurmkit-lint: disable=missing-time\n") == [
        (5, "warning", "srun-cpus-per-task")
    ]
    assert found(CPT + "srun a  # slurmkit-lint: disable=all\n") == []
    assert found(CPT + "srun a\nsrun b\n# slurmkit-lint: disable-file=srun-cpus-per-task\n") == []
    assert (
        found(CPT + "srun a  # slurmkit-lint: disable=tee-without-pipefail, srun-cpus-per-task\n")
        == []
    )


def test_disable_with_a_typo_is_reported() -> None:
    assert found(CPT + "srun a  # slurmkit-lint: disable=srun-cpu-per-task\n") == [
        (5, "warning", "srun-cpus-per-task"),
        (5, "warning", "unknown-rule"),
    ]


def test_findings_carry_file_message_and_fix() -> None:
    (finding,) = lint_text(CPT + "srun a\n", "job.slurm", LintContext(SlurmVersion(22, 5, 8)))
    assert finding.file == "job.slurm"
    assert "--cpus-per-task=48 (line 4)" in finding.message and "22.05.8" in finding.message
    assert finding.fix.startswith("srun --cpus-per-task=$SLURM_CPUS_PER_TASK")
    assert finding.to_json()["rule"] == "srun-cpus-per-task"


def test_an_srun_without_a_command_starts_no_step() -> None:
    """`time srun` alone: srun exits at option parsing ("No command given to execute.",
    src/srun/opt.c) before any step exists, so no step rule speaks of its CPUs."""
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH -c 8\ntime srun\nsrun python t.py\n"
    assert found(text, "22.05") == [(5, "warning", "srun-cpus-per-task")]
