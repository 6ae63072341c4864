"""Round eight of issue 32, paths.py: what the eighth test part showed for the log-directory
and spool-directory rules (output-dir-missing, script-dir-in-spool), once it was scored.

Each test pins the class fixed and, beside it, the right finding it resembles, which must
still fire. Scripts are placed in a git work tree of their own under ``tmp_path``, as the
corpus scorer places them, so the rules see a checkout and nothing else.
"""

from __future__ import annotations

from pathlib import Path

from slurmkit.lint import LintContext, SlurmVersion, lint_text

LOG_RULE = "output-dir-missing"
SPOOL_RULE = "script-dir-in-spool"


def _lint(
    tmp_path: Path,
    relative: str,
    text: str,
    version: str = "22.05",
    siblings: dict[str, str] | None = None,
) -> list[tuple[int, str, str]]:
    """(line, rule, severity) of the script placed at ``relative`` in a fresh checkout."""
    top = tmp_path / "repo"
    (top / ".git").mkdir(parents=True, exist_ok=True)
    path = top / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    for name, body in (siblings or {}).items():
        (path.parent / name).write_text(body)
    context = LintContext(SlurmVersion.parse(version), script_dir=str(path.parent))
    return [(f.line, f.rule, f.severity) for f in lint_text(text, str(path), context)]


def _lines(findings: list[tuple[int, str, str]], rule: str) -> list[int]:
    return [line for line, found, _ in findings if found == rule]


# --------------------------------------------------------------- output-dir-missing

HEADER = "#!/bin/bash\n#SBATCH --job-name=enc\n#SBATCH --time=1:00:00\n"


def test_a_usage_comment_that_passes_output_replaces_the_directive(tmp_path: Path) -> None:
    """The script's own usage line submits it with --output (music-understanding-baselines):
    the command line beats the directive (sbatch(1)), so the directive's logs/ is only a
    default; without that usage line the unshipped logs/ still fails the job on 22.05."""
    body = "srun python enc.py\n"
    usage = '#   sbatch --output="$LOG_ROOT/%x_%j.log" slurm/enc.sbatch\n'
    documented = HEADER + "#SBATCH --output=logs/%x_%j.log\n" + usage + body
    assert _lines(_lint(tmp_path / "a", "slurm/enc.sbatch", documented), LOG_RULE) == []
    plain = HEADER + "#SBATCH --output=logs/%x_%j.log\n# sbatch slurm/enc.sbatch\n" + body
    assert _lines(_lint(tmp_path / "b", "slurm/enc.sbatch", plain), LOG_RULE) == [4]


def test_a_usage_comment_overrides_only_the_log_it_names(tmp_path: Path) -> None:
    """``sbatch --output=...`` in the usage line leaves --error's directory to the directive."""
    text = (
        HEADER
        + "#SBATCH --output=logs/%j.out\n#SBATCH --error=logs/%j.err\n"
        + "# sbatch -o /scratch/me/%j.out run.sh\nsrun true\n"
    )
    assert _lines(_lint(tmp_path, "run.sh", text), LOG_RULE) == [5]


def test_a_file_named_as_a_template_has_its_variables_filled_in(tmp_path: Path) -> None:
    """``disbatch_template.sbatch`` with ``-o ${LOG_PATH}/x.log`` is read by code that
    substitutes LOG_PATH (as header.py's sbatch-unknown-option reads a template's names);
    the same line in a script submitted as it is names a literal ``${LOG_PATH}`` directory."""
    text = "#!/bin/bash\n#SBATCH --time=${TIME}\n#SBATCH -o ${LOG_PATH}/${PID}_x.log\nsrun x\n"
    assert _lines(_lint(tmp_path / "a", "ks/disbatch_template.sbatch", text), LOG_RULE) == []
    assert _lines(_lint(tmp_path / "b", "ks/disbatch.sbatch", text), LOG_RULE) == [3]


def test_directives_with_renderer_tags_are_rendered_by_code(tmp_path: Path) -> None:
    """``--ntasks={{ntasks}}`` cannot be submitted as written: code renders the file and
    submits the result from where it prepares; a file of a templated tree
    (``{{cookiecutter.project_slug}}/``) is rendered in place and stays judged."""
    text = (
        "#!/bin/bash\n#SBATCH --ntasks={{ntasks}}\n#SBATCH --output=slurm/logs/%x_%j.out\n"
        "srun {{command}}\n"
    )
    rendered = _lint(tmp_path / "a", "benchmark/cleanrl_1gpu.slurm_template", text)
    assert _lines(rendered, LOG_RULE) == []
    tree = _lint(tmp_path / "b", "{{cookiecutter.project_slug}}/examples/to_submit.sh", text)
    assert _lines(tree, LOG_RULE) == [3]


def test_a_placeholder_word_in_the_log_directory_is_the_reader_s_to_fill(tmp_path: Path) -> None:
    """``localpath/logs/...`` (with ``--partition=your_partition``) is a path to replace,
    not a directory literally named localpath; ``logs/`` in the same script is judged."""
    text = (
        "#!/bin/bash\n#SBATCH --partition=your_partition\n"
        "#SBATCH --output=localpath/logs/train/%x-%j\n#SBATCH --error=logs/%x-%j.err\nsrun x\n"
    )
    assert _lines(_lint(tmp_path, "scripts/run.sh", text), LOG_RULE) == [4]


def test_a_missing_relative_chdir_holds_the_default_log(tmp_path: Path) -> None:
    """``#SBATCH -D ./log/`` with no --output: sbatch makes the work directory absolute under
    the submit directory (slurm_opt.c arg_set_chdir) and slurmstepd opens slurm-%j.out there
    (print_fields.c expand_stdio_fields): an unshipped one fails the job before 23.02, and
    from 23.02 slurmstepd creates it. A shipped one, or an --output of its own, is fine."""
    text = "#!/bin/bash\n#SBATCH --array=0-3\n#SBATCH -D ./log/\nsrun python train.py\n"
    found = _lint(tmp_path / "a", "slurm/train.sh", text)
    assert [f for f in found if f[1] == LOG_RULE] == [(3, LOG_RULE, "error")]
    assert _lines(_lint(tmp_path / "b", "slurm/train.sh", text, "24.11"), LOG_RULE) == []
    shipped = tmp_path / "c" / "repo" / "slurm" / "log"
    shipped.mkdir(parents=True)
    assert _lines(_lint(tmp_path / "c", "slurm/train.sh", text), LOG_RULE) == []
    own = text.replace("#SBATCH -D ./log/\n", "#SBATCH -D ./log/\n#SBATCH -o /scratch/%j.out\n")
    assert _lines(_lint(tmp_path / "d", "slurm/train.sh", own), LOG_RULE) == []


def test_a_driver_that_makes_the_directory_under_its_working_directory(tmp_path: Path) -> None:
    """A driver's ``mkdir -p $WORKDIR/logs`` with ``WORKDIR=$PWD`` (gencast), ``mkdir -p
    $PWD/log`` (tacc-openneuro) or ``then mkdir slurm_outputs; fi`` before it submits the
    script makes the directory in time, also when it names the script through a variable
    (``summa_job_file=run_summa.sh``); a driver that makes nothing leaves it missing."""
    job = "#!/bin/bash\n#SBATCH --output=logs/%x-%j.out\nsrun x\n"
    drivers = {
        "a": "WORKDIR=$PWD\nmkdir -p $WORKDIR/logs\nsbatch --wait $WORKDIR/job.sh $WORKDIR\n",
        "b": "mkdir -p $LOG_DIR $PWD/logs\nsbatch -J x job.sh\n",
        "c": "job_file=job.sh\nif [ ! -d logs ]; then mkdir logs; fi\nsbatch ${job_file} a\n",
    }
    for name, driver in drivers.items():
        found = _lint(tmp_path / name, "run/job.sh", job, siblings={"drive.sh": driver})
        assert _lines(found, LOG_RULE) == [], name
    idle = "job_file=job.sh\nsbatch ${job_file} a\n"
    found = _lint(tmp_path / "d", "run/job.sh", job, siblings={"drive.sh": idle})
    assert _lines(found, LOG_RULE) == [2]


# --------------------------------------------------------------- script-dir-in-spool

SPOOL_HEADER = "#!/bin/bash\n#SBATCH --time=1:00:00\n"
HERE = 'DIR="$( cd -- "$( dirname -- "${BASH_SOURCE[0]}" )" &> /dev/null && pwd )"\n'


def test_a_spool_directory_kept_in_a_name_nothing_reads(tmp_path: Path) -> None:
    """``DIR=$(dirname BASH_SOURCE)`` never read again (a template's leftover) looks for
    nothing beside the script; read later (``source "$DIR/env.sh"``) it is the spool."""
    unused = SPOOL_HEADER + HERE + 'PROGRAM="$0"\n./run.sh "$@"\n'
    assert _lines(_lint(tmp_path / "a", "run.sh", unused), SPOOL_RULE) == []
    used = SPOOL_HEADER + HERE + 'source "$DIR/env.sh"\n'
    assert _lines(_lint(tmp_path / "b", "run.sh", used), SPOOL_RULE) == [3]
    exported = SPOOL_HEADER + "export " + HERE + "python train.py\n"
    assert _lines(_lint(tmp_path / "c", "run.sh", exported), SPOOL_RULE) == [3]


def test_a_cd_to_the_submit_directory_does_not_move_dollar_zero(tmp_path: Path) -> None:
    """slurmd runs the copy by its absolute path, so ``cd "$SLURM_SUBMIT_DIR"`` before
    ``dirname "${BASH_SOURCE[0]}"`` still yields the spool (DeepForest); a directory taken
    from SLURM_SUBMIT_DIR itself, with $0 only as the fallback, stays quiet."""
    moved = (
        SPOOL_HEADER
        + 'cd "${SLURM_SUBMIT_DIR:?not set}"\n'
        + 'HPC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n'
        + 'bash "$HPC_DIR/train.sh"\n'
    )
    assert _lines(_lint(tmp_path / "a", "HPC/train.sbatch", moved), SPOOL_RULE) == [4]
    fallback = (
        SPOOL_HEADER
        + 'HPC_DIR="${SLURM_SUBMIT_DIR:-$(dirname "${BASH_SOURCE[0]}")}"\n'
        + 'bash "$HPC_DIR/train.sh"\n'
    )
    assert _lines(_lint(tmp_path / "b", "HPC/train.sbatch", fallback), SPOOL_RULE) == []


def test_a_script_without_directives_that_is_submitted_is_a_batch_script(tmp_path: Path) -> None:
    """No #SBATCH line, but its comment says ``sbatch -p high -t 60 slurm.sh`` (or a file
    beside it sbatches it): in the job $0 is the spool copy. A helper no sbatch names is
    run where it lies, and its own directory is right."""
    body = 'script_dir="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)"\n'
    body += 'cmake -S "${script_dir}/.." -B build\n'
    usage = "#!/bin/bash -l\n# sbatch -p high -t 60 slurm.sh\n" + body
    assert _lines(_lint(tmp_path / "a", "scripts/slurm.sh", usage), SPOOL_RULE) == [3]
    driven = "#!/bin/bash\n" + body
    submit = {"submit.sh": 'sbatch -A x -t 60 "$(dirname "$0")/jobfile.sh"\n'}
    found = _lint(tmp_path / "b", "slurm/jobfile.sh", driven, siblings=submit)
    assert _lines(found, SPOOL_RULE) == [2]
    helper = "#!/bin/bash\n" + body
    assert _lines(_lint(tmp_path / "c", "scripts/build.sh", helper), SPOOL_RULE) == []
