"""ERB, EJS and R brew templates (``<% %>``, ``<%= %>``): rendered before sbatch reads them."""

from __future__ import annotations

import pytest

from slurmkit.lint.shell import mask_templates
from tests.lint_headers import of_rule

SPACES = "assignment-with-spaces"
IGNORED = "sbatch-directive-ignored"

BREW = """#!/bin/bash
<%
walltime = asInt(resources$walltime, lower = 1L)
if (backend == "mpi") {
  cmd = "mpirun -np 1 Rscript"
} else {
  cmd = "Rscript"
}
-%>

#SBATCH --job-name=<%= job.name %>
#SBATCH --time=<%= ceiling(walltime / 60L)%>
#SBATCH --mem-per-cpu=<%= memory %>
<%= if (array.jobs) sprintf("#SBATCH --array=1-%i", nrow(jobs)) else "" %>
#SBATCH --partition=all

export DEBUGME=<%= Sys.getenv("DEBUGME") %>
<%= cmd %> -e 'batchtools::doJobCollection("<%= uri %>")'
"""


def test_a_code_block_over_lines_is_no_bash() -> None:
    assert of_rule(BREW, SPACES) == []


def test_a_code_block_and_an_output_tag_alone_do_not_end_the_header() -> None:
    assert of_rule(BREW, IGNORED) == []


def test_a_command_after_the_block_still_ends_the_header() -> None:
    text = "#!/bin/bash\n<%\nx = 1\n%>\nhostname\n#SBATCH --nodes=2\n"
    assert of_rule(text, IGNORED) == [(6, "warning")]


def test_the_mask_keeps_every_offset_and_line() -> None:
    masked = mask_templates(BREW)
    assert len(masked) == len(BREW)
    assert masked.count("\n") == BREW.count("\n")
    assert "<%" not in masked and "%>" not in masked
    assert "#SBATCH --partition=all" in masked


@pytest.mark.parametrize(
    "line",
    [
        "echo '<%s' | tr a b",  # a printf format, no tag
        "printf 'a <%s' x; echo '%>'",  # a stray <% that opens no line spans no lines
    ],
)
def test_text_that_only_looks_like_a_tag_is_read_as_bash(line: str) -> None:
    text = f"#!/bin/bash\n#SBATCH -t 5\n{line}\nx = 1\necho '%>'\n"
    assert of_rule(text, SPACES) == [(4, "error")]


def test_an_escaped_delimiter_opens_no_tag() -> None:
    text = "#!/bin/bash\n#SBATCH -t 5\n<%%\nx = 1\n%>\n"
    assert of_rule(text, SPACES) == [(4, "error")]


SYNTAX = "bash-syntax"
CSH_IF = "#SBATCH -t 5\nif ( $x == 1 ) then\n  echo one\nendif\n"


@pytest.mark.parametrize(
    "shebang", ["#!/bin/tcsh", "#!/bin/csh -f", "#!/usr/bin/env -S tcsh -f", "#!/bin/zsh"]
)
def test_a_script_for_another_shell_is_not_judged_by_bash(shebang: str) -> None:
    assert of_rule(f"{shebang}\n{CSH_IF}", SYNTAX) == []


@pytest.mark.parametrize(
    "shebang", ["#!/bin/bash", "#!/usr/bin/env bash", "#! /bin/sh -l", "#!/usr/bin/env -S bash -l"]
)
def test_a_bourne_shell_script_is_still_judged(shebang: str) -> None:
    assert of_rule(f"{shebang}\n{CSH_IF}", SYNTAX) == [(3, "error")]


@pytest.mark.parametrize(
    "line",
    [
        "for f in ${freqs[@]:$first:$count}; do echo $f; done",
        'echo "${name:$offset}"',
        "echo ${name:$offset:${#name}} done",
    ],
)
def test_an_offset_that_is_an_expansion_closes_its_braces(line: str) -> None:
    assert of_rule(f"#!/bin/bash\n#SBATCH -t 5\n{line}\n", SYNTAX) == []


@pytest.mark.parametrize("line", ["echo ${name:$offset", 'echo "${name:$offset"'])
def test_an_expansion_left_open_is_still_refused(line: str) -> None:
    assert of_rule(f"#!/bin/bash\n#SBATCH -t 5\n{line}\necho end\n", SYNTAX) == [(3, "error")]


@pytest.mark.parametrize("line", ["#sbatch job_next", "#sbatch -d afterok:1 next_step", "#Sbatch"])
def test_a_commented_out_sbatch_command_is_no_lost_directive(line: str) -> None:
    text = f"#!/bin/bash\n#SBATCH -t 5\nsrun hostname\n{line}\n"
    assert of_rule(text, IGNORED) == []


@pytest.mark.parametrize("line", ["#sbatch --mem=4G", "#Sbatch -N 2 # two nodes"])
def test_a_wrong_case_directive_with_options_only_is_still_lost(line: str) -> None:
    text = f"#!/bin/bash\n#SBATCH -t 5\nsrun hostname\n{line}\n"
    assert of_rule(text, IGNORED) == [(4, "warning")]


COLLIDES = "output-collides"


def shard_job(output: str, use: str) -> str:
    return f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output={output}\n{use}\n"


def test_a_script_that_works_on_its_task_index_is_an_array_whose_logs_collide() -> None:
    text = shard_job("logs/%x.out", "zcat part_${SLURM_ARRAY_TASK_ID}.gz | wc -l")
    assert of_rule(text, COLLIDES) == [(3, "warning")]


@pytest.mark.parametrize(
    ("output", "use"),
    [
        ("logs/%x.out", 'echo "task $SLURM_ARRAY_TASK_ID"'),  # only printed
        ("logs/%x-%A_%a.out", "zcat part_${SLURM_ARRAY_TASK_ID}.gz"),
        ("logs/%x-%j.out", "zcat part_${SLURM_ARRAY_TASK_ID}.gz"),
        ("logs/%x.out", "zcat part_1.gz"),
    ],
)
def test_no_collision_without_a_task_index_at_work_or_with_one_in_the_name(
    output: str, use: str
) -> None:
    assert of_rule(shard_job(output, use), COLLIDES) == []


def loop(body: str) -> str:
    return f"#!/bin/bash\n#SBATCH -t 5\nfor i in 1 2; do\n{body}\ndone\necho end\n"


@pytest.mark.parametrize(
    "body",
    [
        "if [ $i -lt 2 ]; then\n  echo a\nelse\n  echo b",  # no fi before the loop's done
        "while read -r x; do\n  echo $x",  # no done of its own: the one done closes it
    ],
)
def test_a_block_left_open_inside_a_loop_is_refused(body: str) -> None:
    assert [severity for _, severity in of_rule(loop(body), SYNTAX)] == ["error"]


def test_the_if_a_done_meets_is_named() -> None:
    assert of_rule(loop("if [ $i -lt 2 ]; then\n  echo a\nelse\n  echo b"), SYNTAX) == [
        (4, "error")
    ]


def test_closed_blocks_inside_a_loop_are_bash() -> None:
    assert of_rule(loop("if [ $i -lt 2 ]; then\n  echo a\nelse\n  echo b\nfi"), SYNTAX) == []


def test_a_loop_with_a_brace_body_needs_no_done() -> None:
    text = loop("for ((j = 0; j < 2; j++)) { echo $j; }\nif [ $i -lt 2 ]; then\n  echo a")
    assert of_rule(text, SYNTAX) == [(5, "error")]
