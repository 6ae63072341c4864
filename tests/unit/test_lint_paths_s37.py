"""Log paths and the script's own directory, as Slurm really opens and runs them (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.score_lint_corpus import lint_corpus
from slurmkit.lint import LintContext, lint_path, lint_text
from slurmkit.slurm.records import SlurmVersion

V22 = LintContext(SlurmVersion.parse("22.05.8"))


def found(text: str, context: LintContext = V22) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", context)]


def of_rule(findings: list[tuple[int, str, str]], rule: str) -> list[tuple[int, str]]:
    return [(line, severity) for line, severity, name in findings if name == rule]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # %a alone: each task writes its own file; only a later submission overwrites
        ("memorygame_%a.out", [(4, "info", "output-without-jobid")]),
        ("%x_%a.out", [(4, "info", "output-without-jobid")]),
        # every task writes the same file at once
        ("%x-%A.out", [(4, "warning", "output-collides")]),
        ("train.log", [(4, "warning", "output-collides")]),
        ("%x-%A_%a.out", []),
    ],
)
def test_an_array_collides_only_when_its_tasks_share_one_file(name: str, expected: list) -> None:
    text = f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH --array=1-4\n#SBATCH --output={name}\nhostname\n"
    assert [f for f in found(text) if f[2].startswith("output-")] == expected


def test_an_array_log_with_the_array_id_alone_says_the_task_id_is_missing() -> None:
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --array=1-4\n#SBATCH -o runs/%A.txt\nhostname\n"
    (finding,) = [f for f in lint_text(text, "t.slurm", V22) if f.rule == "output-collides"]
    assert "has no task id in it (%A is the whole array's job id" in finding.message
    text = text.replace("%A.txt", "run.txt")
    (finding,) = [f for f in lint_text(text, "t.slurm", V22) if f.rule == "output-collides"]
    assert "has no job id in it" in finding.message


def in_checkout(tmp_path: Path, where: str, text: str) -> list[tuple[int, str]]:
    """output-dir-missing for a script at ``where`` in a fresh checkout (no logs/ shipped)."""
    (tmp_path / ".git").mkdir(parents=True, exist_ok=True)
    script = tmp_path / where
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(text)
    return missing_dirs(script)


def missing_dirs(script: Path) -> list[tuple[int, str]]:
    return of_rule(
        [(f.line, f.severity, f.rule) for f in lint_path(script, V22)], "output-dir-missing"
    )


@pytest.mark.parametrize("written", ["--err=logs/%x.err", "--erro logs/%x.err"])
def test_an_abbreviated_error_option_is_the_error_file(tmp_path: Path, written: str) -> None:
    # getopt_long takes an unambiguous prefix: --err is --error
    text = f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH {written}\nhostname\n"
    assert in_checkout(tmp_path, "run.sh", text) == [(3, "error")]


def test_an_ambiguous_prefix_is_not_taken_for_the_log(tmp_path: Path) -> None:
    # --e is --error, --exclude, --export ...: getopt refuses it, it names no log
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --e=logs/%x.err\nhostname\n"
    assert in_checkout(tmp_path, "run.sh", text) == []


def test_a_job_name_with_a_slash_adds_a_directory(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / ".gitkeep").touch()
    head = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=./logs/%x-%j.out\n"
    text = head + "#SBATCH --job-name=open_r1/eval\nhostname\n"
    assert in_checkout(tmp_path, "run.sh", text) == [(3, "error")]
    plain = head + "#SBATCH --job-name=eval\nhostname\n"
    (tmp_path / "run.sh").write_text(plain)
    assert missing_dirs(tmp_path / "run.sh") == []


@pytest.mark.parametrize(
    "directive",
    ["--output=$HOME/logs/%j.out", "--error=${SCRATCH}/logs/x-%j.err", "-o ~/logs/%j.out"],
)
def test_a_variable_in_a_log_directory_is_literal(directive: str) -> None:
    # sbatch expands no shell words in #SBATCH: the directory is named "$HOME"
    text = f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH {directive}\nhostname\n"
    assert of_rule(found(text), "output-dir-missing") == [(3, "error")]


def test_a_heredoc_fed_unquoted_to_sbatch_has_its_variables_expanded() -> None:
    text = (
        "#!/bin/bash\nsbatch <<EOF\n#!/bin/bash\n#SBATCH -t 5\n"
        "#SBATCH --output=$HOME/logs/%j.out\nhostname\nEOF\n"
    )
    assert of_rule(found(text), "output-dir-missing") == []


@pytest.mark.parametrize(
    ("directives", "expected"),
    [
        ("#SBATCH --chdir /home1/${USER}/run\n", [(3, "error")]),
        ("#SBATCH -D $SCRATCH/run\n#SBATCH -o out-%j.txt\n", [(3, "error")]),
        # the log does not live under the working directory: it opens
        ("#SBATCH -D $SCRATCH/run\n#SBATCH -o /tmp/out-%j.txt\n", []),
        ("#SBATCH --chdir /scratch/run\n", []),
    ],
)
def test_a_variable_in_chdir_moves_the_log_into_a_directory_that_does_not_exist(
    directives: str, expected: list
) -> None:
    text = "#!/bin/bash\n#SBATCH -t 5\n" + directives + "hostname\n"
    assert of_rule(found(text), "output-dir-missing") == expected


def test_a_placeholder_directory_is_filled_in_before_submission(tmp_path: Path) -> None:
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --out=CASE_DIR/slurm.out\ncd CASE_DIR\n"
    assert in_checkout(tmp_path, "run.sh", text) == []


def test_a_climbing_log_directory_is_judged_in_the_checkout(tmp_path: Path) -> None:
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=../watch_folder/%x_%j.log\nhostname\n"
    assert in_checkout(tmp_path, "slurm_scripts/run.sh", text) == [(3, "error")]
    (tmp_path / "watch_folder").mkdir()
    (tmp_path / "watch_folder" / ".gitkeep").touch()
    assert missing_dirs(tmp_path / "slurm_scripts" / "run.sh") == []


def test_a_log_directory_that_climbs_out_of_the_checkout_is_unknown(tmp_path: Path) -> None:
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=../logs/%x_%j.log\nhostname\n"
    assert in_checkout(tmp_path, "run.sh", text) == []


SPOOL_HEAD = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=%x-%j.out\n"


@pytest.mark.parametrize(
    "line",
    [
        'SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        "rootpath=$(dirname $0)",
        'TOP="$(dirname "$(dirname "$(readlink -fm "$0")")")"',
        "cd ${0%/*}",
        'here="$(dirname -- "${BASH_SOURCE[0]:-$0}")"',
    ],
)
def test_the_scripts_own_directory_is_the_spool_in_a_batch_job(line: str) -> None:
    text = SPOOL_HEAD + line + "\nsource $SCRIPT_DIR/common.sh\n"
    assert of_rule(found(text), "script-dir-in-spool") == [(4, "error")]


def test_a_kept_script_path_taken_apart_later_is_the_spool_too() -> None:
    text = SPOOL_HEAD + 'SELF=$(realpath "$0")\nDIR=$(dirname "$SELF")\npython "$DIR/t.py"\n'
    assert of_rule(found(text), "script-dir-in-spool") == [(5, "error")]


@pytest.mark.parametrize(
    "text",
    [
        # the submit directory first: a fallback that knows where the job came from
        SPOOL_HEAD + 'DIR="${SLURM_SUBMIT_DIR:-$(dirname "$0")}"\n',
        SPOOL_HEAD
        + "SELF=$(scontrol show job \"$SLURM_JOB_ID\" | awk -F= '/Command=/{print $2}')\n"
        + 'DIR=$(dirname "$SELF")\n',
        # no directory of the script: its name, or $0 of awk
        SPOOL_HEAD + "me=$(basename $0)\n",
        SPOOL_HEAD + "dirname $(awk '{print $0}' list.txt)\n",
        # not a batch script: a driver run by bash
        "#!/bin/bash\ncd $(dirname $0)\nsbatch job.sh\n",
        # a heredoc fed to sbatch: the writing shell expanded $0 (the submitter's)
        "#!/bin/bash\nsbatch <<EOF\n#!/bin/bash\n#SBATCH -t 5\ncd $(dirname $0)\nEOF\n",
    ],
)
def test_no_spool_finding_where_the_directory_is_known(text: str) -> None:
    assert of_rule(found(text), "script-dir-in-spool") == []


DEEP = (
    "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=experiments/tests/run1/job_%A_%a.out\nhostname\n"
)


def test_a_deep_log_directory_the_checkout_does_not_ship_is_missing(tmp_path: Path) -> None:
    assert in_checkout(tmp_path, "scoring/slurm/run_jobs.sh", DEEP) == [(3, "error")]


def test_a_deep_log_directory_the_checkout_ships_exists(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "index").write_bytes(b"DIRC...experiments/tests/run1/.gitkeep\0")
    assert in_checkout(tmp_path, "scoring/slurm/run_jobs.sh", DEEP) == []


@pytest.mark.parametrize("where", ["templates/tgi.slurm", "slurm/tgi_h100.template.slurm"])
def test_a_rendered_template_may_have_its_directory_made_by_its_renderer(
    tmp_path: Path, where: str
) -> None:
    assert in_checkout(tmp_path, where, DEEP + "serve --model {{ model }}\n") == []


def test_a_rendered_templates_variables_are_filled_in_by_its_renderer(tmp_path: Path) -> None:
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=${LOG_ROOT}/x-%j.out\nhostname\n"
    assert in_checkout(tmp_path, "slurm/job.tpl.sbatch", text) == []
    assert in_checkout(tmp_path / "b", "slurm/job.sbatch", text) == [(3, "error")]


@pytest.mark.parametrize(
    "where",
    ["assets/slurm_header_biowulf.sh", "pkg/assets/job.sh", "slurm/slurm_headers/a100.slurm"],
)
def test_a_file_the_code_builds_the_job_from_is_not_submitted_where_it_lies(
    tmp_path: Path, where: str
) -> None:
    # package data (copied into a run directory the tool prepares) and headers
    # (prepended to generated bodies): the log directory is that code's to make
    assert in_checkout(tmp_path, where, DEEP) == []
    assert in_checkout(tmp_path / "b", "slurm/train.sh", DEEP) == [(3, "error")]


@pytest.mark.parametrize(
    "directive", ["--output=/nonexistent/cdm/logs/x_%j.out", "--chdir=/nonexistent/cdm"]
)
def test_an_absolute_log_directory_the_script_makes_is_unknown_here(directive: str) -> None:
    # another host's persistent directory: the script's mkdir says the author keeps it
    log = "" if directive.startswith("--output") else "#SBATCH --output=logs/x_%j.out\n"
    text = (
        f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH {directive}\n{log}"
        "mkdir -p /nonexistent/cdm/logs logs\nhostname\n"
    )
    assert of_rule(found(text), "output-dir-missing") == []
    relative = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=logs/x_%j.out\nmkdir -p logs\n"
    assert of_rule(found(relative), "output-dir-missing") == [(3, "warning")]


def test_the_corpus_ships_a_directory_only_at_the_commit_that_has_it(tmp_path: Path) -> None:
    # logs/ came in a later commit: the script copied at the earlier one lacks it
    head = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH -o logs/%j.out\nhostname\n"
    (tmp_path / "a--old.sh").write_text(head)
    (tmp_path / "a--new.sh").write_text(head)
    (tmp_path / "SOURCES.tsv").write_text(
        "file\trepository\tpath\tcommit\tlicence\tlabels\n"
        "a--old.sh\to/a\told.sh\t1\tMIT\tLABELS.json\n"
        "a--new.sh\to/a\tnew.sh\t2\tMIT\tLABELS.json\n"
    )
    (tmp_path / "SHIPS.tsv").write_text(
        "repository\tdirectory\tcommit\tevidence\no/a\tlogs\t2\tgit ls-tree\n"
    )
    findings = lint_corpus(tmp_path, ["a--new.sh", "a--old.sh"], "22.05")
    assert {str(f["file"]) for f in findings if f["rule"] == "output-dir-missing"} == {"a--old.sh"}


@pytest.mark.parametrize("source", ["source", "."])
def test_a_file_sourced_beside_the_script_before_the_submit_directory_is_read(
    source: str,
) -> None:
    # the spool holds no hpc_config.sh; the later cd to the submit directory is too late
    body = f'{source} "$(dirname "$0")/hpc_config.sh"\ncd "${{SLURM_SUBMIT_DIR}}"\n'
    assert of_rule(found(SPOOL_HEAD + body), "script-dir-in-spool") == [(4, "error")]


@pytest.mark.parametrize(
    "body",
    [
        # a kept directory that a later lookup replaces or stands in for
        'DIR=$(dirname "$0")\n[ -n "$SLURM_SUBMIT_DIR" ] && DIR=$SLURM_SUBMIT_DIR\n',
        'SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n'
        'ROOT="${SLURM_SUBMIT_DIR:-$(cd "${SCRIPT_DIR}/.." && pwd)}"\n',
    ],
)
def test_a_kept_directory_with_a_submit_lookup_after_it_is_quiet(body: str) -> None:
    assert of_rule(found(SPOOL_HEAD + body), "script-dir-in-spool") == []


@pytest.mark.parametrize(
    ("submit", "expected"),
    [
        # run by hand: the directory is made before the job it submits exists
        ('    sbatch --job-name "$1-x" "$0" "$@"\n', []),
        ('    sbatch "${BASH_SOURCE[0]}"\n', []),
        # another script submitted: this job's directory is still made too late
        ("    sbatch other.sh\n", [(3, "warning")]),
    ],
)
def test_a_script_that_submits_itself_after_making_the_directory_is_in_time(
    tmp_path: Path, submit: str, expected: list
) -> None:
    text = (
        "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=logs/x-%j.out\n"
        'if [ -z "$SLURM_JOB_ID" ]; then\n    mkdir -p logs\n' + submit + "    exit\nfi\nhostname\n"
    )
    assert in_checkout(tmp_path, "run.sh", text) == expected


JOB = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=logs/x-%j.out\nhostname\n"


@pytest.mark.parametrize(
    ("driver", "job", "expected"),
    [
        # the driver beside it makes the directory before it submits the job
        ("#!/bin/bash\nmkdir -p ./logs\nsbatch --array=0-3 ./job.sh\n", JOB, []),
        # it overrides the log: the environment, then the command line, beat the directive
        ('#!/bin/bash\nid=$(\\\nSBATCH_OUTPUT="$LOGS/%x.log" \\\nsbatch job.sh)\n', JOB, []),
        ("#!/bin/bash\nexport SBATCH_OUTPUT=/scratch/%x.log\nsbatch job.sh\n", JOB, []),
        ("#!/bin/bash\nsbatch -o /scratch/x.log \\\n  job.sh\n", JOB, []),
        # a driver that does neither, or makes it too late, leaves it missing
        ("#!/bin/bash\nsbatch job.sh\n", JOB, [(3, "error")]),
        ("#!/bin/bash\nsbatch job.sh\nmkdir -p logs\n", JOB, [(3, "error")]),
        # SBATCH_OUTPUT does not move the --error file
        (
            "#!/bin/bash\nSBATCH_OUTPUT=/scratch/x.log sbatch job.sh\n",
            JOB.replace("--output", "--error"),
            [(3, "error")],
        ),
        # an -o after the job's name is another command's (grep -o), not sbatch's
        ("#!/bin/bash\nsbatch job.sh | grep -o '[0-9]*'\n", JOB, [(3, "error")]),
        # another job's submission says nothing about this one
        ("#!/bin/bash\nmkdir -p logs\nsbatch other_job.sh\n", JOB, [(3, "error")]),
    ],
)
def test_a_driver_beside_the_job_settles_its_log_directory(
    tmp_path: Path, driver: str, job: str, expected: list
) -> None:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "submit.sh").write_text(driver)
    assert in_checkout(tmp_path, "pipeline/job.sh", job) == expected


def test_a_kept_directory_used_after_a_cd_to_the_submit_directory_is_the_spool() -> None:
    # the cd moves the shell, not SCRIPT_DIR: t.py is still looked for in the spool
    body = (
        'SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n'
        'cd "${SLURM_SUBMIT_DIR:-$HOME}"\npython "${SCRIPT_DIR}/t.py"\n'
    )
    assert of_rule(found(SPOOL_HEAD + body), "script-dir-in-spool") == [(4, "error")]


def test_a_kept_directory_set_again_by_the_lookup_is_quiet() -> None:
    body = (
        'script_path=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")\n'
        'if ! [[ -f "${script_path}/x.sh" ]]; then\n'
        '  script_path=$(dirname "$(scontrol show job "$SLURM_JOB_ID" | grep Command=)")\n'
        'fi\nsource "${script_path}/env.sh"\n'
    )
    assert of_rule(found(SPOOL_HEAD + body), "script-dir-in-spool") == []


def test_a_kept_directory_tested_before_it_is_taken_is_a_fallback() -> None:
    body = (
        'SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"\n'
        'if [ -f "${SLURM_SUBMIT_DIR:-}/t.py" ]; then ROOT="$SLURM_SUBMIT_DIR"\n'
        'elif [ -f "${SCRIPT_DIR}/t.py" ]; then ROOT="${SCRIPT_DIR}"; fi\n'
    )
    assert of_rule(found(SPOOL_HEAD + body), "script-dir-in-spool") == []
