"""Variable and slip rules fixed from the spent fifth hold-out (issue 32): what bash
really runs, and what it leaves unset."""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.lint.shell import parse

V = LintContext(SlurmVersion.parse("24.11.5"))
HEAD = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 1\n"


def rules(text: str) -> set[tuple[int, str]]:
    return {(f.line, f.rule) for f in lint_text(text, "t.slurm", V)}


BLOCK = (
    "<<comment\n"
    "#  Usage:\n"
    "cd scripts/\n"
    "sbatch \\\n"
    "  --export=ALL,MODEL=${MODEL} \\\n"
    "  --job-name=eval_${MODEL} \\\n"
    "  eval.sh\n"
    "comment\n"
)


def test_a_heredoc_with_no_command_is_a_block_comment() -> None:
    # bash feeds the body to no command: none of its lines runs
    found = rules(HEAD + BLOCK + "srun python t.py\n")
    assert not {rule for _, rule in found} & {"option-as-command", "resubmit-without-dependency"}
    names = [c.name for c in parse(HEAD + BLOCK + "srun python t.py\n").commands]
    assert names == ["srun"]


def test_a_quoted_or_dashed_bare_heredoc_and_the_code_after_it() -> None:
    text = HEAD + "<<-'END'\nsbatch \\\n  --x=1 \\\n  --y=2\n\tEND\necho done\n"
    assert [c.name for c in parse(text).commands] == ["echo"]
    # a heredoc that a command reads is read as before
    fed = HEAD + ": <<comment\nsbatch \\\n  --x=1\ncomment\necho done\n"
    assert [c.name for c in parse(fed).commands] == [":", "echo"]


def test_a_dot_sourced_file_may_set_lower_case_names() -> None:
    # `. ../setting` sources as `source ../setting` does: it may set $nsteps
    use = 'if [ -z "$nsteps" ]; then\n  echo default\nfi\nsrun ./icon --steps "$nsteps"\n'
    assert (5, "unset-variable-option") in rules(HEAD + "cd run\n" + use)
    for how in (". ../setting\n", "  . ${basedir}/run/add_run_routines\n"):
        assert "unset-variable-option" not in {rule for _, rule in rules(HEAD + how + use)}
    # ./run.sh runs a program, it sources nothing
    assert (5, "unset-variable-option") in rules(HEAD + "./prepare.sh\n" + use)


def test_a_dot_sourced_file_may_set_a_count() -> None:
    step = "srun -N $NODES ./a.out\n"
    assert (5, "variable-never-set") in rules(HEAD + ".venv/bin/python prep.py\n" + step)
    assert "variable-never-set" not in {r for _, r in rules(HEAD + ". ./env.sh\n" + step)}


def test_a_script_that_demands_its_input_is_configured_from_the_submitting_shell() -> None:
    step = 'srun --ntasks-per-node="${DGXNGPU}" ./train\n'
    assert (4, "variable-never-set") in rules(HEAD + step)
    demands = ': "${CONT:?CONT not set}"\n'
    assert "variable-never-set" not in {rule for _, rule in rules(HEAD + demands + step)}
    # a name the script sets itself, then demands, is no input
    own = 'CONT=img.sqsh\n: "${CONT:?}"\n'
    assert (6, "variable-never-set") in rules(HEAD + own + step)


def test_a_name_assigned_only_in_a_comment_is_unset() -> None:
    old = "#  pretrained_model=/models/llama_7B\n"
    step = "srun torchrun t.py \\\n  --model_name_or_path ${pretrained_model} \\\n  --bf16\n"
    assert (6, "unset-variable-option") in rules(HEAD + old + step)
    # assigned in code, even after a comment on its line, it is set
    live = "pretrained_model=/models/llama_7B  # was pretrained_model=x\n"
    assert "unset-variable-option" not in {rule for _, rule in rules(HEAD + live + step)}


def test_slurm_gpus_per_node_is_set_only_with_gpus_per_node() -> None:
    # env.c set_env_from_opts: only opt->gpus_per_node (sbatch --gpus-per-node) sets it
    step = "N=$(expr $SLURM_NNODES \\* $SLURM_GPUS_PER_NODE)\nsrun ./train --procs $N\n"
    assert (4, "slurm-variable-unset") in rules(HEAD + step)
    asked = "#SBATCH --gpus-per-node=4\n"
    assert "slurm-variable-unset" not in {rule for _, rule in rules(HEAD + asked + step)}


def test_a_bare_heredoc_line_inside_another_body_is_body_text() -> None:
    # bash: <<B is A's body text; A's body ends at A, and echo runs
    text = HEAD + "<<A\n<<B\nsbatch \\\n  --x=1\nA\necho done\n"
    assert [c.name for c in parse(text).commands] == ["echo"]


def test_an_empty_srun_cpus_per_task_stops_every_srun_where_srun_reads_it() -> None:
    """srun 22.05.8 exits on SRUN_CPUS_PER_TASK="" ('Invalid numeric value "" for
    --cpus-per-task', run with the binary); the 24.11 and 26.05 binaries ignore it."""
    text = HEAD + "export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK\nsrun python x.py\n"

    def unset(version: str) -> list[tuple[int, str]]:
        context = LintContext(SlurmVersion.parse(version))
        found = lint_text(text, "t.slurm", context)
        return [(f.line, f.severity) for f in found if f.rule == "slurm-variable-unset"]

    assert unset("22.05.8") == [(4, "error")]
    assert unset("24.11.5") == [(4, "info")]
    with_cpus = text.replace("-N 1\n", "-N 1\n#SBATCH -c 2\n")
    context = LintContext(SlurmVersion.parse("22.05.8"))
    assert not [
        f for f in lint_text(with_cpus, "t.slurm", context) if f.rule == "slurm-variable-unset"
    ]
