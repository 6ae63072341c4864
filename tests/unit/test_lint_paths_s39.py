"""Log directories from the spent fifth hold-out: padded patterns, tags, template folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit.lint import LintContext, lint_path, lint_text
from slurmkit.slurm.records import SlurmVersion

V22 = LintContext(SlurmVersion.parse("22.05.8"))
V24 = LintContext(SlurmVersion.parse("24.11.5"))


def missing(text: str, context: LintContext = V22) -> list[tuple[int, str]]:
    return [
        (f.line, f.severity)
        for f in lint_text(text, "t.slurm", context)
        if f.rule == "output-dir-missing"
    ]


def in_checkout(tmp_path: Path, where: str, text: str) -> list[tuple[int, str]]:
    """output-dir-missing for a script at ``where`` in a fresh checkout (nothing shipped)."""
    (tmp_path / ".git").mkdir(parents=True, exist_ok=True)
    script = tmp_path / where
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(text)
    return [(f.line, f.severity) for f in lint_path(script, V22) if f.rule == "output-dir-missing"]


@pytest.mark.parametrize("directory", ["%3A", "%10j", "logs/%2J"])
def test_a_padded_job_pattern_names_the_job_too(directory: str) -> None:
    # sbatch(1): a number between % and the letter zero-pads it; %3A is still the job id
    text = f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output={directory}/out.txt\nhostname\n"
    assert missing(text) == [(3, "error")]
    assert missing(text, V24) == []  # slurmstepd makes it from 23.02


@pytest.mark.parametrize("directory", ["run_%4a", "/scratch/folds/fold_%a"])
def test_an_array_index_directory_may_exist_before(directory: str) -> None:
    # fold_0 ... fold_4 can be made before the array is submitted: unknown, never an error
    header = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --array=0-4\n"
    assert missing(f"{header}#SBATCH --output={directory}/o\nhostname\n") == []


@pytest.mark.parametrize("directory", ["%%j", "100%%3A"])
def test_an_escaped_percent_names_no_job(directory: str) -> None:
    # %% is a literal %: the directory is fixed, not per job (unknown: not in a checkout)
    text = f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output={directory}/out.txt\nhostname\n"
    assert missing(text) == []


def test_a_padded_job_name_adds_its_directories(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir(parents=True)
    (tmp_path / "logs" / ".gitkeep").touch()
    text = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH -J exp/a\n#SBATCH -o logs/%5x-%j.out\nhostname\n"
    assert in_checkout(tmp_path, "run.sh", text) == [(4, "error")]


@pytest.mark.parametrize(
    "directory",
    ["[[SLURM_DIR]]", "[[ log_dir ]]/x", "@LOGDIR@", "__LOG__", "<log-dir>", "{logdir}"],
)
def test_a_template_tag_in_the_log_directory_is_filled_in_before_sbatch(
    tmp_path: Path, directory: str
) -> None:
    text = f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output={directory}/slurm_%j.log\nhostname\n"
    assert in_checkout(tmp_path, "tools/slurm/job.sh", text) == []


HEAD = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=slurm_out/mpi_%j.out\n"


def test_a_template_folders_file_with_nothing_to_fill_in_is_submitted_as_it_is(
    tmp_path: Path,
) -> None:
    # a copy-and-submit example: its usage text (<config>) is for people, not a renderer
    text = HEAD + 'echo "usage: sbatch job <config>"\n[[ -z "$1" ]] && exit 1\nhostname\n'
    assert in_checkout(tmp_path, "scripts/slurm/template/job", text) == [(3, "error")]


@pytest.mark.parametrize("tag", ["{{ partition }}", "{MEMORY}", "[[NGPU]]", "@QUEUE@"])
def test_a_template_folders_file_with_tags_is_rendered_by_the_repositorys_code(
    tmp_path: Path, tag: str
) -> None:
    text = HEAD + f"#SBATCH --partition={tag}\nhostname\n"
    assert in_checkout(tmp_path, "src/tool/templates/submit.sh", text) == []
    # the shell's ${NAME} is no tag
    shell = HEAD + 'echo "${HOSTNAME}"\n'
    assert in_checkout(tmp_path / "b", "src/tool/templates/submit.sh", shell) == [(3, "error")]


def fed(before: str, after: str = "") -> str:
    """A driver that feeds sbatch a job script logging to log/ (not shipped)."""
    return (
        f"#!/bin/bash\n{before}sbatch <<EOT\n#!/bin/bash\n#SBATCH -t 5\n"
        f"#SBATCH -o log/run.%j.out\nhostname\nEOT\n{after}"
    )


@pytest.mark.parametrize(
    "before",
    [
        # sbatch runs where the driver went: the run directory, not the checkout
        'out=$(realpath "$1")\nmkdir -p "$out" && cd "$out"\n',
        "pushd /scratch/run\n",
        # the driver makes it before sbatch: the job finds it
        "mkdir -p log\n",
    ],
)
def test_the_driver_that_feeds_a_heredoc_sets_up_its_log_directory(
    tmp_path: Path, before: str
) -> None:
    assert in_checkout(tmp_path, "run_pipeline.sh", fed(before)) == []


def test_a_driver_that_neither_moves_nor_makes_the_directory_first_is_judged(
    tmp_path: Path,
) -> None:
    # a cd or mkdir after the sbatch is too late for the job it submitted
    assert in_checkout(tmp_path, "run.sh", fed("", "cd /tmp\nmkdir -p log\n")) == [(5, "error")]


def test_each_heredoc_is_judged_against_its_own_sbatch(tmp_path: Path) -> None:
    text = fed("") + fed("mkdir -p log\n").split("\n", 1)[1]
    assert in_checkout(tmp_path, "run.sh", text) == [(5, "error")]


@pytest.mark.parametrize(
    ("option", "word"),
    [("--output=${SCRATCH}/logs/%j.out", "${SCRATCH}"), ("--chdir=/home1/$USER/run", "$USER")],
)
def test_the_unexpanded_variable_is_named_whole(option: str, word: str) -> None:
    text = f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH {option}\nhostname\n"
    (finding,) = [f for f in lint_text(text, "t.slurm", V24) if f.rule == "output-dir-missing"]
    assert f"does not expand {word} in a directive" in finding.message
