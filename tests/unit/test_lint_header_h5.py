"""Header rules after the fourth hold-out: site options, sbatch commands, repeats, templates."""

from __future__ import annotations

import pytest

from tests.lint_headers import V22, V24, V26, header, of_rule

UNKNOWN = "sbatch-unknown-option"


@pytest.mark.parametrize("option", ["--perf=vtune", "--ear=on", "--ccm"])
def test_an_unknown_option_like_no_real_one_may_be_a_site_plugin_s(option: str) -> None:
    assert of_rule(header(option), UNKNOWN, V24) == [(3, "info")]


@pytest.mark.parametrize(
    "option",
    [
        "--partiton=gpu",  # a misspelling
        "--cpus_per_task=4",  # underscores
        "--Nodes=2",  # getopt is case-sensitive
        "--mem-per-core=2G",
        "--workdir=/scratch",  # removed: --chdir
        "--memory=4G",  # a real option with a word added
        "--mem-per-node=4G",
        "--num-gpus=2",
        "--walltime=1:00:00",  # another scheduler's word
        "--email=me@example.org",
    ],
)
def test_a_misspelt_or_removed_option_is_refused_everywhere(option: str) -> None:
    assert of_rule(header(option), UNKNOWN, V24) == [(3, "error")]


def test_an_option_of_a_later_slurm_is_refused_by_an_earlier_one() -> None:
    assert of_rule(header("--segment=4"), UNKNOWN, V22) == [(3, "error")]
    assert of_rule(header("--segment=4"), UNKNOWN, V24) == []


def chain(submit: str) -> str:
    return f"#!/bin/bash\n#SBATCH -t 5\nnext=$(\n    {submit} \\\n        | cut -d' ' -f4)\n"


def test_an_sbatch_the_job_runs_with_a_misspelt_option() -> None:
    assert of_rule(chain("sbatch --depency=afterok:$SLURM_JOB_ID job.slurm"), UNKNOWN) == [
        (4, "error")
    ]


@pytest.mark.parametrize(
    "submit",
    [
        "sbatch --dependency=afternotok:$SLURM_JOB_ID job.slurm",
        "sbatch -N $NODES --dependency afterok:1 job.slurm --depency",  # the job's argument
        'sbatch "--${KIND}=x" job.slurm',
        "sbatch --parsable --kill-on-invalid-dep=yes job.slurm",
    ],
)
def test_an_sbatch_the_job_runs_with_its_own_options(submit: str) -> None:
    assert of_rule(chain(submit), UNKNOWN) == []


def test_an_sbatch_with_a_site_option_is_info() -> None:
    assert of_rule(chain("sbatch --perf=vtune job.slurm"), UNKNOWN) == [(4, "info")]


TWICE = "sbatch-option-twice"


def test_the_finding_names_the_line_sbatch_ignores() -> None:
    text = header("-x n1", "-x n2,n3")
    assert of_rule(text, TWICE) == [(3, "warning")]


def test_every_ignored_value_and_no_value_the_last_line_repeats() -> None:
    assert of_rule(header("-N 1", "--nodes=2", "-N 1"), TWICE) == [(4, "warning")]
    assert of_rule(header("-N 1", "-N 2", "-N 4"), TWICE) == [(3, "warning"), (4, "warning")]


def test_mail_types_replaced_from_25_05_name_the_lost_lines() -> None:
    text = header("--mail-type=BEGIN", "--mail-type=END", "--mail-type=FAIL")
    assert of_rule(text, TWICE, V26) == [(3, "warning"), (4, "warning")]


IGNORED = "sbatch-directive-ignored"


@pytest.mark.parametrize("tag", ["{{ extra_directives }}", "@batch_extra@", "{% if gpu %}"])
def test_a_template_tag_alone_on_a_line_does_not_end_the_header(tag: str) -> None:
    text = f"#!/bin/bash\n#SBATCH -t 5\n{tag}\n#SBATCH --nodes=2\n#SBATCH --mem=1G\nhostname\n"
    assert of_rule(text, IGNORED) == []


@pytest.mark.parametrize("line", ["echo {{ x }}", "{{ a }} {{ b }}", "echo @x@", "${EXTRA}"])
def test_a_command_with_a_tag_still_ends_it(line: str) -> None:
    text = f"#!/bin/bash\n#SBATCH -t 5\n{line}\n#SBATCH --nodes=2\nhostname\n"
    assert of_rule(text, IGNORED) == [(4, "warning")]
