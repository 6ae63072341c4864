"""Variable rules fixed from the spent fourth hold-out (issue 32): what an empty value
really costs, and where the script says the value comes from."""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V = LintContext(SlurmVersion.parse("24.11.5"))
HEAD = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 1\n"


def rules(text: str) -> set[tuple[int, str]]:
    return {(f.line, f.rule) for f in lint_text(text, "t.slurm", V)}


def test_an_unset_slurm_variable_only_printed_loses_nothing() -> None:
    text = HEAD + 'echo "using ${SLURM_CPUS_PER_TASK} CPUs"\nsrun hostname\n'
    assert "slurm-variable-unset" not in {rule for _, rule in rules(text)}


def test_an_unset_slurm_variable_used_after_a_message_is_found_at_the_use() -> None:
    text = HEAD + 'echo "cpus: $SLURM_CPUS_PER_TASK"\npython t.py -j $SLURM_CPUS_PER_TASK\n'
    assert (5, "slurm-variable-unset") in rules(text)
    assert (4, "slurm-variable-unset") not in rules(text)


def test_a_usage_comment_giving_the_option_to_sbatch() -> None:
    usage = "# usage: sbatch --account X --cpus-per-task 32 t.slurm --db d\n"
    step = 'python t.py --workers "$SLURM_CPUS_PER_TASK" "$@"\n'
    assert "slurm-variable-unset" not in {rule for _, rule in rules(HEAD + usage + step)}
    # a disabled directive is no usage: the option is not given anywhere
    off = "##SBATCH --cpus-per-task=64\n"
    assert (5, "slurm-variable-unset") in rules(HEAD + off + step)


def test_a_comment_line_ends_a_continued_command() -> None:
    text = (
        HEAD
        + "srun singularity exec --nv \\\n"
        + "  -B /data:/data \\\n"
        + "  # bind other directories as needed\n"
        + '  "$IMAGE" bash -lc "python t.py"\n'
    )
    assert (7, "option-as-command") in rules(text)


def test_a_comment_after_a_pipe_or_a_new_command_is_no_break() -> None:
    piped = HEAD + "cat in.txt | \\\n  # keep sorted\n  sort -u\n"
    new = HEAD + "srun a.sh \\\n  -x 1 \\\n# next step\nsrun b.sh\n"
    for text in (piped, new):
        assert "option-as-command" not in {rule for _, rule in rules(text)}


def test_a_count_misspelt_beside_the_name_the_script_sets() -> None:
    # a sourced file or a module no longer hides it: the script set the other name
    body = (
        "source ~/.bashrc\nmodule load x\nGPUS_PER_NODE=8\n"
        "NUM=$((NUM_GPUS_PER_NODE*SLURM_NNODES))\n"
    )
    assert (7, "variable-never-set") in rules(HEAD + body)
    files = "FILES=(in/*)\nfor i in $(seq $SLURM_ARRAY_TASK_ID 4 $NUM_FILES); do echo $i; done\n"
    assert (5, "variable-never-set") in rules(HEAD + files)


def test_a_count_set_another_way_or_unrelated_is_not_judged() -> None:
    for body in (
        "FILES=(in/*)\nread NUM_FILES < n.txt\nseq 1 $NUM_FILES\n",
        "FILES=(in/*)\nseq 1 ${NUM_FILES:=4}\n",
        "source env.sh\nGPUS=8\nN=$((NODES_TOTAL*GPUS))\n",  # no near miss: env.sh may set it
    ):
        assert "variable-never-set" not in {rule for _, rule in rules(HEAD + body)}
