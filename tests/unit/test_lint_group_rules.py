"""The issue-21 item-4 rules on scripts shaped like published ones, with the quiet cases.

launcher-without-nnodes, launcher-without-node-rank, hostlist-one-element and
output-dir-missing: each fires on the mistake and stays quiet where the script is
right (a c10d rendezvous, unquoted arrays, options lint cannot read).
"""

from __future__ import annotations

from pathlib import Path

from slurmkit.lint import LintContext, lint_path, lint_text
from slurmkit.lint.explain import EXPLAIN
from slurmkit.lint.rules import RULES
from slurmkit.slurm.records import SlurmVersion

HEAD = (
    "#!/bin/bash\n"
    "#SBATCH --job-name=llama-pretrain\n"
    "#SBATCH --nodes=2\n"
    "#SBATCH --ntasks-per-node=1\n"
    "#SBATCH --gres=gpu:8\n"
    "#SBATCH --cpus-per-task=96\n"
    "#SBATCH --time=2-00:00:00\n"
    "#SBATCH --output=%x-%j.out\n"
    "set -eo pipefail\n"
    'export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n'
)  # 10 lines


def found(
    text: str, submit_dir: str | None = None, version: str = "24.11.5"
) -> list[tuple[int, str, str]]:
    context = LintContext(SlurmVersion.parse(version), submit_dir=submit_dir)
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", context)]


def test_every_new_rule_is_registered_and_explained() -> None:
    ids = {rule.id for rule in RULES}
    for rule in (
        "launcher-without-nnodes",
        "launcher-without-node-rank",
        "hostlist-one-element",
        "output-dir-missing",
    ):
        assert rule in ids and rule in EXPLAIN
        why, example, fix = EXPLAIN[rule]
        assert why and example and fix


# ---------------------------------------------------------------- launcher-without-nnodes


def test_torchrun_on_two_nodes_without_nnodes_is_an_error() -> None:
    text = HEAD + (
        "srun torchrun --nproc_per_node=8 --master_addr=$MASTER_ADDR --master_port=29500 \\\n"
        "    train.py --config llama.yaml\n"
    )
    assert found(text) == [(11, "error", "launcher-without-nnodes")]


def test_torch_distributed_run_through_a_variable_without_nnodes() -> None:
    text = HEAD + (
        'LAUNCHER="python -m torch.distributed.run --nproc_per_node 8 --master_addr $MASTER_ADDR"\n'
        'srun bash -c "$LAUNCHER train.py"\n'
    )
    assert ("launcher-without-nnodes") in {rule for _, _, rule in found(text)}


def test_nnodes_given_or_one_node_or_unreadable_arguments_stay_quiet() -> None:
    c10d = (
        "srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=8 --rdzv_backend=c10d "
        "--rdzv_endpoint=$MASTER_ADDR:29500 --rdzv_id=$SLURM_JOB_ID train.py\n"
    )
    assert found(HEAD + c10d) == []
    one_node = HEAD.replace("--nodes=2", "--nodes=1") + "srun torchrun --nproc_per_node=8 t.py\n"
    assert found(one_node) == []
    # "$@" or an array lint cannot read may carry --nnodes: unknown, never wrong
    assert found(HEAD + 'srun torchrun "$@"\n') == []
    assert found(HEAD + 'srun torchrun "${TORCHRUN_ARGS[@]}" train.py\n') == []
    assert found(HEAD + "export PET_NNODES=2\nsrun torchrun --nproc_per_node=8 t.py\n") == []


def test_an_array_assigned_in_the_script_is_read() -> None:
    text = HEAD + (
        "TORCHRUN_ARGS=(--nproc_per_node=8 --master_addr=$MASTER_ADDR)\n"
        'srun torchrun "${TORCHRUN_ARGS[@]}" train.py\n'
    )
    assert found(text) == [(12, "error", "launcher-without-nnodes")]


# ---------------------------------------------------------------- launcher-without-node-rank


def test_static_rendezvous_without_node_rank_is_an_error() -> None:
    text = HEAD + (
        "srun torchrun --nnodes=2 --nproc_per_node=8 --master_addr=$MASTER_ADDR "
        "--master_port=29500 train.py\n"
    )
    assert found(text) == [(11, "error", "launcher-without-node-rank")]
    explicit = text.replace("--rdzv", "").replace("--nnodes=2", "--nnodes=2 --rdzv_backend=static")
    assert found(explicit) == [(11, "error", "launcher-without-node-rank")]


def test_node_rank_given_or_c10d_stays_quiet() -> None:
    ranked = HEAD + (
        "srun bash -c 'torchrun --nnodes=2 --node_rank=$SLURM_NODEID --nproc_per_node=8 "
        "--master_addr=$MASTER_ADDR train.py'\n"
    )
    assert found(ranked) == []
    c10d = HEAD + (
        "srun torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d "
        "--rdzv_endpoint $MASTER_ADDR:29500 train.py\n"
    )
    assert found(c10d) == []


# ---------------------------------------------------------------- hostlist-one-element

RAY = (
    "#!/bin/bash\n"
    "#SBATCH --nodes=3\n"
    "#SBATCH --ntasks-per-node=1 --cpus-per-task=8\n"
    "#SBATCH --time=04:00:00\n"
    "#SBATCH --output=ray-%j.out\n"
    'nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")\n'
    'nodes_array=("$nodes")\n'
    "head_node=${nodes_array[0]}\n"
    'srun --nodes=1 --ntasks=1 -w "$head_node" --overlap ray start --head --block &\n'
    "wait\n"
)


def test_quoted_node_list_in_an_array_is_an_error() -> None:
    assert found(RAY) == [(7, "error", "hostlist-one-element")]
    # ray start is a launcher (issue 32 item 5): its daemon and every worker on 1 CPU
    one_cpu = RAY.replace(" --cpus-per-task=8", "")
    assert (9, "info", "launcher-cpus-per-task") in found(one_cpu)
    direct = RAY.replace(
        'nodes_array=("$nodes")', 'nodes_array=("$(scontrol show hostnames $SLURM_NODELIST)")'
    )
    assert found(direct) == [(7, "error", "hostlist-one-element")]


def test_unquoted_or_one_node_or_other_values_stay_quiet() -> None:
    assert found(RAY.replace('("$nodes")', "($nodes)")) == []
    assert found(RAY.replace("--nodes=3", "--nodes=1")) == []
    # a quoted array expansion keeps its elements; a value that is no node list is fine
    assert found(RAY.replace('("$nodes")', '("${nodes[@]}")')) == []
    other = RAY.replace('nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")', "nodes=head")
    assert found(other) == []


# ---------------------------------------------------------------- output-dir-missing

LOGS = (
    "#!/bin/bash\n"
    "#SBATCH --nodes=1\n"
    "#SBATCH --time=01:00:00\n"
    "#SBATCH --output=logs/%x-%j.out\n"
    "#SBATCH --error=logs/%x-%j.err\n"
    "mkdir -p logs\n"
    "python eval.py\n"
)


BOTH = [4, 5]  # --output and --error, each on its own line


def found_old(text: str, submit_dir: str | None = None) -> list[tuple[int, str, str]]:
    """At 22.05, which fails a job whose log directory is missing (23.02 on create it)."""
    return found(text, submit_dir, version="22.05.8")


def test_a_log_directory_the_script_makes_itself_is_a_warning() -> None:
    assert found_old(LOGS) == [(line, "warning", "output-dir-missing") for line in BOTH]
    assert found_old(LOGS.replace("mkdir -p logs", "mkdir -p ./logs/")) == [
        (line, "warning", "output-dir-missing") for line in BOTH
    ]


def test_statically_unknown_directories_stay_quiet() -> None:
    assert found_old(LOGS.replace("mkdir -p logs\n", "")) == []  # may exist: unknown
    templated = LOGS.replace("logs/%x", "{{ log_dir }}/%x").replace("mkdir -p logs", "mkdir x")
    assert found_old(templated) == []
    assert found_old(LOGS.replace("logs/%x-%j.out", "logs/%u/%j.out")) == [
        (5, "warning", "output-dir-missing")  # --output's directory has a pattern: unknown
    ]


def test_the_submit_directory_is_looked_up(tmp_path: Path) -> None:
    text = LOGS.replace("mkdir -p logs\n", "")
    errors = [(line, "error", "output-dir-missing") for line in BOTH]
    assert found_old(text, submit_dir=str(tmp_path)) == errors
    (tmp_path / "logs").mkdir()
    assert found_old(text, submit_dir=str(tmp_path)) == []
    chdir = text.replace("#SBATCH --nodes=1\n", "#SBATCH --chdir=run\n")
    assert found_old(chdir, submit_dir=str(tmp_path)) == errors
    (tmp_path / "run" / "logs").mkdir(parents=True)
    assert found_old(chdir, submit_dir=str(tmp_path)) == []


def test_absolute_paths_missing_here_are_another_host_s(tmp_path: Path) -> None:
    """Issue 32 item 3: a path missing where lint runs is unknown, not an error."""
    text = LOGS.replace("mkdir -p logs\n", "")
    absolute = text.replace("logs/", f"{tmp_path}/missing/")
    assert found_old(absolute, submit_dir="/") == []
    chdir = text.replace("#SBATCH --nodes=1\n", f"#SBATCH --chdir={tmp_path}/run\n")
    assert found_old(chdir, submit_dir="/") == []
    assert found_old(chdir) == []


def test_a_directory_named_after_the_job_never_exists_before_it() -> None:
    """Issue 32 item 3: %j/%J/%A in the directory: error on every cluster. An array index
    (%a) is known in advance, so its directories can be made before (fold_0 ... fold_4):
    unknown, not an error (the issue names %a too; reality differs)."""
    for pattern in ("%j", "%J", "%A", "%a"):
        text = LOGS.replace("logs/%x-%j.out", f"logs/{pattern}/out.txt").replace(
            "mkdir -p logs\n", ""
        )
        dirs = [f for f in found_old(text) if f[2] == "output-dir-missing"]
        expected = [] if pattern == "%a" else [(4, "error", "output-dir-missing")]
        assert dirs == expected, pattern
    named = found_old(LOGS.replace("logs/%x-%j.out", "logs/%x/%j.txt"))
    assert named == [(5, "warning", "output-dir-missing")]  # %x: unknown; logs/ made late


def test_a_directory_the_git_checkout_ships_exists(tmp_path: Path) -> None:
    """A script in a git work tree is submitted from its own directory (issue 32 item 3)."""
    (tmp_path / ".git").mkdir()
    script = tmp_path / "job.slurm"
    context = LintContext(SlurmVersion.parse("22.05.8"))
    script.write_text(LOGS.replace("mkdir -p logs\n", ""))
    # logs/ neither beside the script nor shipped: a fresh checkout fails, --output and --error
    assert [(f.line, f.severity) for f in lint_path(script, context)] == [
        (4, "error"),
        (5, "error"),
    ]
    (tmp_path / ".git" / "index").write_bytes(b"DIRC\0\0\0\2...logs/.gitkeep\0")
    assert lint_path(script, context) == []  # shipped: the checkout makes it
    (tmp_path / ".git" / "index").unlink()
    (tmp_path / "logs").mkdir()
    assert lint_path(script, context) == []  # there beside the script
    (tmp_path / "logs").rmdir()
    script.write_text(LOGS)  # the script's own mkdir: too late for the first run
    assert [(f.line, f.severity) for f in lint_path(script, context)] == [
        (4, "warning"),
        (5, "warning"),
    ]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (tmp_path / ".git").rename(tmp_path / "not-git")
    (outside / "job.slurm").write_text(LOGS.replace("mkdir -p logs\n", ""))
    assert lint_path(outside / "job.slurm", context) == []  # no work tree: unknown


def test_a_script_in_a_subdirectory_may_be_submitted_from_the_top(tmp_path: Path) -> None:
    """`sbatch slurm/train.sbatch` from the checkout's top: slurm/ is there (the script's
    own directory), so --output=slurm/%x_%j.out opens; a directory missing from every
    level between the script and the top is still an error."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "slurm").mkdir()
    script = tmp_path / "slurm" / "train.sbatch"
    context = LintContext(SlurmVersion.parse("22.05.8"))
    body = LOGS.replace("mkdir -p logs\n", "")
    script.write_text(body.replace("logs/%x-%j", "slurm/%x_%j"))
    assert lint_path(script, context) == []
    script.write_text(body)
    assert [(f.line, f.severity) for f in lint_path(script, context)] == [
        (4, "error"),
        (5, "error"),
    ]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / ".gitkeep").write_text("")
    assert lint_path(script, context) == []  # shipped at the top


def test_from_23_02_slurm_creates_the_log_directory() -> None:
    """slurmstepd makes a missing --output/--error directory from 23.02 (verified live on
    the sandbox: 22.05.8 fails the job, 24.11.5 and 26.05.5 run it): no finding there."""
    unshipped = LOGS.replace("mkdir -p logs\n", "")
    per_job = unshipped.replace("logs/%x-%j.out", "logs/%j/out.txt")
    for version in ("23.02.0", "24.11.5", "26.05.5"):
        assert found(LOGS, version=version) == []  # made too late: not too late any more
        assert found(per_job, version=version) == []
    assert [f[2] for f in found_old(per_job)] == ["output-dir-missing"]


def test_an_unknown_version_judges_the_log_directory_as_22_05_does() -> None:
    per_job = LOGS.replace("logs/%x-%j.out", "logs/%j/out.txt").replace("mkdir -p logs\n", "")
    findings = lint_text(per_job, "t.slurm", LintContext(None))
    assert [(f.line, f.rule) for f in findings if f.rule == "output-dir-missing"] == [
        (4, "output-dir-missing")
    ]
    assert "Slurm before 23.02 does not create it" in findings[0].message


def test_a_literal_variable_in_the_log_path_misplaces_the_log_from_23_02() -> None:
    text = LOGS.replace("logs/%x-%j.out", "$HOME/logs/%x-%j.out").replace("mkdir -p logs\n", "")
    assert found_old(text) == [(4, "error", "output-dir-missing")]
    later = lint_text(text, "t.slurm", LintContext(SlurmVersion.parse("24.11.5")))
    assert [(f.line, f.severity) for f in later] == [(4, "warning")]
    assert "the log is not where the path says" in later[0].message
