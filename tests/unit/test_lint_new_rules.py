"""Issue 32 item 4's rules: each fires on the mistake and stays quiet where the script is right."""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.lint.explain import EXPLAIN
from slurmkit.lint.rules import RULES
from slurmkit.slurm.records import SlurmVersion

HEAD = "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --nodes=2\n#SBATCH --output=%x-%j.out\n"
NEW = (
    "sbatch-misspelt",
    "non-ascii-dash",
    "sbatch-unknown-option",
    "sbatch-option-twice",
    "signal-without-trap",
    "term-trap-requeues",
    "resubmit-without-dependency",
    "test-bracket-unclosed",
    "option-as-command",
    "array-zero-line",
    "continued-into-command",
    "rm-own-log",
    "slurm-variable-unset",
    "output-collides",
)


def found(text: str, version: str | None = "24.11", rule: str | None = None) -> list:
    context = LintContext(SlurmVersion.parse(version) if version else None)
    return [
        (f.line, f.severity, f.rule)
        for f in lint_text(text, "t.slurm", context)
        if rule is None or f.rule == rule
    ]


def test_every_new_rule_is_registered_explained_and_listed() -> None:
    ids = {rule.id for rule in RULES}
    for rule in NEW:
        assert rule in ids and rule in EXPLAIN, rule
        why, example, fix = EXPLAIN[rule]
        assert why and example and fix


@pytest.mark.parametrize(
    ("line", "fires"),
    [
        ("#SBTACH --gres=gpu:8", True),
        ("#SABTCH -N 4", True),
        ("# SBATCH --partition=gpu", True),
        ("#SBATCH --partition=gpu", False),
        ("##SBATCH --partition=gpu", False),  # switched off on purpose
        ("    ##SBATCH --nodes=1", False),  # indented, still switched off (not "# SBATCH")
        ("#   sbatch -N 1 job.sh", False),  # a usage example
        ("# SBATCH options below", False),  # prose
        ("#SWATCH --exclusive", True),  # two edits from SBATCH: still a near miss
        ("#BATCH --nodes=2", True),
        ("#SPORT --x", False),  # three edits: another word
        ("#YBATCH -r dgx-a100_8", False),  # a site wrapper's own word: -r is no sbatch option
        ("#YBATCH --group=lab", False),  # nor is --group, nor a misspelling of one
        ("#YBATCH --nodse=2", True),  # followed by a misspelt sbatch option: a misspelling
        ("#BATCH -p all", True),
    ],
)
def test_misspelt_directives(line: str, fires: bool) -> None:
    text = HEAD + line + "\nhostname\n"
    assert bool(found(text, rule="sbatch-misspelt")) is fires


def test_a_misspelt_directive_after_the_header_is_not_judged() -> None:
    assert found(HEAD + "hostname\n#SBTACH -N 2\n", rule="sbatch-misspelt") == []


def test_typographic_dashes() -> None:
    assert found(HEAD + "#SBATCH \u2013\u2013gres=gpu:1\nhostname\n", rule="non-ascii-dash") == [
        (5, "error", "non-ascii-dash")
    ]
    assert found(HEAD + "srun \u2014n 2 hostname\n", rule="non-ascii-dash") == [
        (5, "error", "non-ascii-dash")
    ]
    assert found(HEAD + "srun -n 2 echo 'a \u2013 b'\n", rule="non-ascii-dash") == []
    # the unknown-option rule leaves these to the dash rule
    assert found(HEAD + "#SBATCH \u2013\u2013gres=gpu:1\n", rule="sbatch-unknown-option") == []


@pytest.mark.parametrize(
    ("directive", "version", "fires"),
    [
        ("#SBATCH --gpus-per-tsk=1", "24.11", True),
        ("#SBATCH --part=gpu", "24.11", False),  # getopt takes a unique prefix
        ("#SBATCH --mem-per=4G", "24.11", True),  # ambiguous
        ("#SBATCH --tres-per-task=cpu=4", "22.05", True),  # added after 22.05
        ("#SBATCH --tres-per-task=cpu=4", "24.11", False),
        ("#SBATCH --tres-per-task=cpu=4", None, False),  # some version knows it
        ("#SBATCH --power=x", "24.11", True),  # gone in 24.11
        ("#SBATCH -N 2 -n 4 --exclusive", "24.11", False),
        ("#SBATCH --time 10 --wait-all-nodes=1", "22.05", False),
        ("#SBATCH -l", "24.11", True),  # srun's -l, not sbatch's
        ("#SBATCH nodes=2", "24.11", True),  # Invalid directive
        ("#SBATCH --nodes=2 # two nodes", "24.11", False),
        ("#SBATCH hetjob", "24.11", False),
        ("#SBATCH -p { partition }", "24.11", False),  # a placeholder: unknown
        ("#SBATCH --partition={{ part }}", "24.11", False),
    ],
)
def test_directive_words_against_sbatch_s_table(
    directive: str, version: str | None, fires: bool
) -> None:
    text = HEAD + directive + "\nhostname\n"
    assert bool(found(text, version, rule="sbatch-unknown-option")) is fires


def test_an_option_given_twice() -> None:
    text = HEAD + "#SBATCH --time=2:00:00\nhostname\n"
    (finding,) = [
        f
        for f in lint_text(text, "t", LintContext(SlurmVersion.parse("24.11")))
        if f.rule == "sbatch-option-twice"
    ]
    assert finding.line == 2  # the line sbatch ignores, where the fix is
    assert "ignores this line's '--time=1:00:00' and applies line 5's" in finding.message
    assert found(HEAD + "#SBATCH -t 1:00:00\n", rule="sbatch-option-twice") == []  # same
    het = HEAD + "#SBATCH hetjob\n#SBATCH --nodes=1\nhostname\n"
    assert found(het, rule="sbatch-option-twice") == []  # a new component starts afresh
    mail = HEAD + "#SBATCH --mail-type=END\n#SBATCH --mail-type=FAIL\n"
    assert found(mail, rule="sbatch-option-twice") == []  # mail types add up


SIGNAL = HEAD + "#SBATCH --signal=B:USR1@120\n"


def test_a_batch_signal_needs_a_trap_and_a_background_step() -> None:
    assert found(SIGNAL + "srun python t.py\n", rule="signal-without-trap") == [
        (5, "error", "signal-without-trap")
    ]
    trapped = SIGNAL + "trap 'touch stop' USR1\n"
    assert found(trapped + "srun python t.py\n", rule="signal-without-trap") == [
        (6, "warning", "signal-without-trap")
    ]
    assert found(trapped + "srun python t.py &\nwait\n", rule="signal-without-trap") == []
    assert found(SIGNAL.replace("B:USR1", "SIGUSR1") + "srun x\n", rule="signal-without-trap") == []
    numbered = HEAD + "#SBATCH --signal=B:10@60\ntrap h SIGUSR1\nsrun x &\nwait\n"
    assert found(numbered, rule="signal-without-trap") == []


def test_a_term_trap_that_requeues() -> None:
    text = HEAD + "trap 'scontrol requeue $SLURM_JOB_ID' TERM\nsrun x &\nwait\n"
    assert found(text, rule="term-trap-requeues") == [(5, "warning", "term-trap-requeues")]
    handler = HEAD + "h() {\n  scontrol requeue $SLURM_JOB_ID\n}\ntrap h SIGTERM\n"
    assert found(handler, rule="term-trap-requeues") == [(8, "warning", "term-trap-requeues")]
    assert found(text.replace("TERM", "USR1"), rule="term-trap-requeues") == []


def test_self_resubmission_without_a_dependency() -> None:
    text = HEAD + 'python t.py\nsbatch "$0"\npython eval.py\n'  # work after it: overlap
    assert found(text, rule="resubmit-without-dependency") == [
        (6, "info", "resubmit-without-dependency")
    ]
    single = text.replace('sbatch "$0"', 'sbatch --dependency=singleton "$0"')
    assert found(single, rule="resubmit-without-dependency") == []
    header = HEAD + "#SBATCH --dependency=singleton\n" + 'sbatch "$0"\n'
    assert found(header, rule="resubmit-without-dependency") == []


def test_a_test_without_its_closing_bracket() -> None:
    assert found(HEAD + 'if [ -z "$x"]; then echo y; fi\n', rule="test-bracket-unclosed") == [
        (5, "error", "test-bracket-unclosed")
    ]
    assert found(HEAD + 'if [ -z "$x" ]; then echo y; fi\n', rule="test-bracket-unclosed") == []
    assert found(HEAD + 'if [[ -z "$x" ]]; then :; fi\n', rule="test-bracket-unclosed") == []
    # a bracket expression inside a quoted sed program is no test (spent-holdout10's rapidgzip)
    sed = "t=$( sed -n 's|real||p' log | sed 's|[ \\ts]||' )\n"
    assert found(HEAD + sed, rule="test-bracket-unclosed") == []
    assert found(HEAD + 'echo "x | [ -z a]"\n', rule="test-bracket-unclosed") == []
    quoted_then_test = "echo '[ a]'; [ -z \"$x\"] && echo y\n"
    assert found(HEAD + quoted_then_test, rule="test-bracket-unclosed") == [
        (5, "error", "test-bracket-unclosed")
    ]


def test_an_option_line_whose_backslash_was_lost() -> None:
    text = HEAD + "srun python train.py \\\n    --lr 0.1\n    --epochs 3\n"
    assert found(text, rule="option-as-command") == [(7, "error", "option-as-command")]
    assert found(text.replace("0.1\n", "0.1 \\\n"), rule="option-as-command") == []


def test_a_continued_line_whose_next_command_became_arguments() -> None:
    text = HEAD + "python train.py \\\n    --epochs 3 \\\necho done\n"
    assert found(text, rule="continued-into-command") == [(7, "info", "continued-into-command")]
    assert found(text.replace("3 \\\n", "3\n"), rule="continued-into-command") == []
    # srun's program on the next line is the continued command's own
    assert found(HEAD + "srun --nodes 2 \\\n  python t.py\n", rule="continued-into-command") == []


@pytest.mark.parametrize(
    ("array", "line", "fires"),
    [
        ("0-9", 'f=$(sed -n "${SLURM_ARRAY_TASK_ID}p" files.txt)', True),
        ("0-9%2", "f=$(sed -n ${SLURM_ARRAY_TASK_ID}p files.txt)", True),
        ("1-10", 'f=$(sed -n "${SLURM_ARRAY_TASK_ID}p" files.txt)', False),
        ("0-9", 'f=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" files.txt)', False),
        ("0-9", 'f=$(awk "NR==$SLURM_ARRAY_TASK_ID" files.txt)', True),
        ("0-9", 'i=$SLURM_ARRAY_TASK_ID\nf=$(sed -n "${i}p" files.txt)', True),
    ],
)
def test_an_array_from_0_picking_1_based_lines(array: str, line: str, fires: bool) -> None:
    text = HEAD + f"#SBATCH --array={array}\n{line}\n"
    assert bool(found(text, rule="array-zero-line")) is fires


@pytest.mark.parametrize(
    ("header", "command", "fires"),
    [
        ("#SBATCH --output=%x-%j.out", "rm -f *.out", True),
        ("#SBATCH --output=logs/%j.log", "rm -rf logs", True),
        ("#SBATCH --output=logs/%j.log", "rm -f *.out", False),
        ("", "rm -f slurm-*.out", True),  # Slurm's default name
        ("#SBATCH --output=%x-%j.out", "rm -f /tmp/*.out", False),
        ("#SBATCH --output=%x-%j.out", "rm -f $TMP/*.out", False),
        ("#SBATCH --output=logs/%j.log", "cd /scratch/run\nrm -rf *", False),  # other files
        ("#SBATCH --output=logs/%j.log", "cd /scratch/run\ncd $SLURM_SUBMIT_DIR\nrm -r *", True),
        ("#SBATCH --output=logs/%j.log", "pushd out\npopd\nrm -rf logs", True),
    ],
)
def test_rm_of_the_job_s_own_log(header: str, command: str, fires: bool) -> None:
    text = HEAD.replace("#SBATCH --output=%x-%j.out\n", header + "\n") + command + "\n"
    assert bool(found(text, rule="rm-own-log")) is fires


def test_slurm_variables_the_job_never_gets() -> None:
    text = HEAD + "srun --gpus-per-task=1 python t.py --gpus $SLURM_GPUS_PER_TASK\n"
    assert found(text, rule="slurm-variable-unset") == [(5, "info", "slurm-variable-unset")]
    asked = HEAD + "#SBATCH --gpus-per-task=2\n" + text[len(HEAD) :]
    assert found(asked, rule="slurm-variable-unset") == []
    default = HEAD + "python t.py --workers ${SLURM_CPUS_PER_TASK:-4}\n"
    assert found(default, rule="slurm-variable-unset") == []
    guarded = HEAD + 'if [ -n "$SLURM_CPUS_PER_TASK" ]; then n=$SLURM_CPUS_PER_TASK; fi\n'
    assert found(guarded, rule="slurm-variable-unset") == []
    bash_test = HEAD + (
        'if [[ "${SLURM_GPUS_PER_TASK:-none}" != "none" ]]; then n=$SLURM_GPUS_PER_TASK; fi\n'
    )
    assert found(bash_test, rule="slurm-variable-unset") == []
    single = HEAD + "srun -c 2 bash -c 'echo $SLURM_CPUS_PER_TASK'\n"
    assert found(single, rule="slurm-variable-unset") == []
    no_header = "#!/bin/bash\necho $SLURM_ARRAY_TASK_ID\n"  # options from the command line
    assert found(no_header, rule="slurm-variable-unset") == []
