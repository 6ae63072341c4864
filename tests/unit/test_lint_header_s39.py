"""Header rules after the fifth hold-out: escaped blanks, split ${...}, reservations, arrays."""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext
from slurmkit.sbatch.directives import sbatch_words
from tests.lint_headers import V22, V24, header, of_rule

CONTINUED = "sbatch-continuation"
UNKNOWN = "sbatch-unknown-option"
UNKNOWN_VERSION = LintContext(None)

# ---------------------------------------------------------------- '\ ' at a directive's end

ESCAPED_BLANK_END = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH -e err/%j.err \\ \n\nmodule purge\n"


def test_a_final_escaped_blank_is_a_word_sbatch_refuses_from_24_05() -> None:
    assert of_rule(ESCAPED_BLANK_END, CONTINUED, V24) == [(3, "error")]
    assert of_rule(ESCAPED_BLANK_END, CONTINUED, UNKNOWN_VERSION) == [(3, "error")]
    assert of_rule(ESCAPED_BLANK_END, UNKNOWN, V24) == []  # one finding, not two


def test_before_24_05_sbatch_drops_a_final_escaped_blank() -> None:
    assert of_rule(ESCAPED_BLANK_END, CONTINUED, V22) == []
    assert of_rule(ESCAPED_BLANK_END, UNKNOWN, V22) == []


def test_an_escaped_blank_in_a_directive_comment_is_never_read() -> None:
    # sbatch's get_argument stops at an unescaped '#': the '\\ ' after it is comment text
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --nodes=2   # two nodes \\ \nhostname\n"
    assert of_rule(text, CONTINUED, V24) == [(3, "warning")]
    assert of_rule(text, CONTINUED, UNKNOWN_VERSION) == [(3, "warning")]


def test_a_backslash_before_a_blank_line_continues_nothing() -> None:
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --nodes=2 \\\n\nhostname\n"
    assert of_rule(text, CONTINUED, V24) == []
    continued = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --nodes=2 \\\n   --ntasks=4\nhostname\n"
    assert of_rule(continued, CONTINUED, V24) == [(3, "warning")]


def test_sbatch_words_read_an_escaped_blank_as_the_version_does() -> None:
    assert sbatch_words(" -J my\\ job -N 1") == ["-J", "my job", "-N", "1"]
    assert sbatch_words(" -J my\\ job -N 1", escaped_blank=False) == ["-J", "my", "job", "-N", "1"]
    # before 24.05 a lone '\ ' reads no word, and sbatch stops reading the line there
    assert sbatch_words(" -e x \\ -N 1", escaped_blank=False) == ["-e", "x"]
    assert sbatch_words(' -J "a\\ b"', escaped_blank=False) == ["-J", "a b"]


def test_an_escaped_blank_inside_a_value_splits_it_before_24_05_only() -> None:
    text = header("--job-name=my\\ job")
    assert of_rule(text, UNKNOWN, V22) == [(3, "error")]  # 'job' is no option
    assert of_rule(text, UNKNOWN, V24) == []


# ---------------------------------------------------------------- ${VAR:?text with blanks}


@pytest.mark.parametrize(
    "option",
    [
        "--account=${ACCOUNT:?set ACCOUNT}",
        "--job-name ${NAME:-my run}",
        "-A ${ACCOUNT:?please set the account}",
    ],
)
def test_a_shell_expansion_with_a_blank_is_split_into_a_stray_word(option: str) -> None:
    assert of_rule(header(option), UNKNOWN, V22) == [(3, "error")]
    assert of_rule(header(option), UNKNOWN, V24) == [(3, "error")]


@pytest.mark.parametrize(
    "option",
    [
        "--account=${ACCOUNT:?unset}",
        "--job-name=${NAME:-run}",
        "--account=${ACCOUNT}",
        '--job-name="${NAME:-my run}"',  # quoted: sbatch reads one word
    ],
)
def test_a_shell_expansion_without_a_blank_stays_unknown(option: str) -> None:
    assert of_rule(header(option), UNKNOWN, V24) == []


def test_a_template_fills_in_its_expansions_before_sbatch_reads_them() -> None:
    from slurmkit.lint import lint_text

    text = header("--account=${ACCOUNT:?set ACCOUNT}")
    found = lint_text(text, "job.sh.tmpl", V24)
    assert [f for f in found if f.rule == UNKNOWN] == []


# ---------------------------------------------------------------- '# SBATCH --reservation'


def _commented(line: str) -> str:
    return "#!/bin/bash\n#SBATCH -t 5\n# Reservation needed only during the course\n" + line


def test_a_reservation_switched_off_with_a_blank_is_info() -> None:
    text = _commented("# SBATCH --reservation course-gpu\nhostname\n")
    assert of_rule(text, "sbatch-misspelt", V24) == [(4, "info")]


def test_other_options_and_misspellings_of_a_reservation_stay_warnings() -> None:
    assert of_rule(_commented("# SBATCH --partition=gpu\nhostname\n"), "sbatch-misspelt") == [
        (4, "warning")
    ]
    assert of_rule(_commented("#SBTACH --reservation=gpu\nhostname\n"), "sbatch-misspelt") == [
        (4, "warning")
    ]


# ---------------------------------------------------------------- arrays of one task, %3A


def _array(array: str, output: str) -> str:
    return (
        "#!/bin/bash\n#SBATCH -t 5\n"
        f"#SBATCH --array={array}\n#SBATCH --output={output}\n#SBATCH --job-name=train\n"
        "srun python train.py\n"
    )


@pytest.mark.parametrize("array", ["0", "3-3", "0%1", "5-8:10"])
def test_an_array_of_one_task_has_no_task_to_run_at_once_with(array: str) -> None:
    text = _array(array, "out.txt")
    assert of_rule(text, "array-without-limit", V24) == []
    assert of_rule(text, "output-collides", V24) == []
    assert of_rule(text, "output-without-jobid", V24) == [(4, "info")]


def test_an_array_of_several_tasks_still_collides_and_runs_at_once() -> None:
    text = _array("0-3", "out.txt")
    assert of_rule(text, "array-without-limit", V24) == [(3, "info")]  # a sweep may mean it
    assert of_rule(text, "output-collides", V24) == [(4, "warning")]


@pytest.mark.parametrize(
    ("array", "output"),
    [("0", "%3A/out.txt"), ("0-3", "%10A_%3a.out"), ("0-3", "run-%4j.out")],
)
def test_a_pattern_with_a_width_is_still_the_job_id(array: str, output: str) -> None:
    text = _array(array, output)
    assert of_rule(text, "output-collides", V24) == []
    assert of_rule(text, "output-without-jobid", V24) == []


def test_a_doubled_percent_is_a_literal_one_not_the_job_id() -> None:
    text = _array("0-3", "out-%%j.txt")
    assert of_rule(text, "output-collides", V24) == [(4, "warning")]
