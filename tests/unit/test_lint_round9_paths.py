"""Round nine of issue 32, paths.py: what the ninth test part showed for the log-directory
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
    files: dict[str, str] | None = None,
) -> list[tuple[int, str, str]]:
    """(line, rule, severity) of the script placed at ``relative`` in a fresh checkout;
    ``files``: other files of the checkout, by path from its top."""
    top = tmp_path / "repo"
    (top / ".git").mkdir(parents=True, exist_ok=True)
    path = top / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    for name, body in (files or {}).items():
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text(body)
    context = LintContext(SlurmVersion.parse(version), script_dir=str(path.parent))
    return [(f.line, f.rule, f.severity) for f in lint_text(text, str(path), context)]


def _lines(findings: list[tuple[int, str, str]], rule: str) -> list[int]:
    return [line for line, found, _ in findings if found == rule]


# --------------------------------------------------------------- output-dir-missing


def test_a_percent_tag_is_a_launcher_placeholder_not_a_job_id(tmp_path: Path) -> None:
    """magma's ``--output=%JOB_LOGS_PATH%/output.log`` is filled in by its launcher's string
    replacement (``--job-name=%JOB_NAME%`` beside it); read as Slurm's pattern it would be
    ``%J`` (a per-job directory). Slurm's own patterns are one letter each, so ``logs/%j/``
    is still a directory that cannot exist before the job."""
    tagged = (
        "#!/bin/bash\n#SBATCH --job-name=%JOB_NAME%\n"
        "#SBATCH --output=%JOB_LOGS_PATH%/output.log\nsrun true\n"
    )
    assert _lines(_lint(tmp_path / "a", "src/launch.sh", tagged), LOG_RULE) == []
    per_job = "#!/bin/bash\n#SBATCH --output=logs/%j/out.txt\nsrun true\n"
    assert _lines(_lint(tmp_path / "b", "run.sh", per_job), LOG_RULE) == [2]
    array = "#!/bin/bash\n#SBATCH --array=0-3\n#SBATCH --output=logs/%A_%a/o.txt\nsrun true\n"
    assert _lines(_lint(tmp_path / "c", "run.sh", array), LOG_RULE) == [3]


def test_a_wrapper_named_in_the_usage_comment_decides_the_log_directory(tmp_path: Path) -> None:
    """``# Submit with:  bash hpc/submit.sh hpc/x.sbatch`` (BristolProject): the wrapper runs
    the sbatch, and its ``mkdir -p logs`` comes first. Not in the checkout (a copy of the
    script alone), the wrapper is unknown; present and making no logs/, the script's own
    mkdir is too late as before (the warning)."""
    text = (
        "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --output=logs/sel_%j.out\n"
        "# Submit with:  bash hpc/submit.sh hpc/sel.sbatch\nset -e\nmkdir -p logs\n"
        "python sel.py\n"
    )
    makes = {"hpc/submit.sh": 'mkdir -p logs\nsbatch "$@" "$script"\n'}
    assert _lines(_lint(tmp_path / "a", "hpc/sel.sbatch", text, files=makes), LOG_RULE) == []
    assert _lines(_lint(tmp_path / "b", "hpc/sel.sbatch", text), LOG_RULE) == []
    bare = {"hpc/submit.sh": 'sbatch "$@" "$script"\n'}
    found = _lint(tmp_path / "c", "hpc/sel.sbatch", text, files=bare)
    assert [(line, sev) for line, rule, sev in found if rule == LOG_RULE] == [(3, "warning")]
    plain = text.replace("# Submit with:  bash hpc/submit.sh hpc/sel.sbatch\n", "")
    found = _lint(tmp_path / "d", "hpc/sel.sbatch", plain)
    assert [(line, sev) for line, rule, sev in found if rule == LOG_RULE] == [(3, "warning")]


def test_a_workdir_directive_is_refused_so_no_log_is_opened(tmp_path: Path) -> None:
    """``#SBATCH --workdir=./log/``: sbatch 22.05.8 stops with "unrecognized option
    '--workdir=./log/'" (exit 255; Slurm 25.11's slurm_opt.c has no such name), so no
    job exists and no working directory is missing (sbatch-unknown-option says so). The
    same directory as ``--chdir`` is still judged."""
    workdir = "#!/bin/bash\n#SBATCH -n 1\n#SBATCH --workdir=./log/\nhostname\n"
    assert _lines(_lint(tmp_path / "a", "tools/t.sh", workdir), LOG_RULE) == []
    chdir = workdir.replace("--workdir", "--chdir")
    assert _lines(_lint(tmp_path / "b", "tools/t.sh", chdir), LOG_RULE) == [3]


def test_words_a_comment_asks_to_replace_are_blanks(tmp_path: Path) -> None:
    """cosipy's ``## Please replace $WORKING_DIR with the absolute path`` above
    ``--chdir=$WORKING_DIR``, and ocp's ``# replace ${value} by whatever you want`` below
    ``--output=${output-dir}/runs/x-%j.txt``: blanks for the reader, not a literal path.
    Without such a note ``$HOME/logs`` in a directive stays literal (error at 22.05,
    warning from 23.02)."""
    note = (
        "#!/bin/bash\n## Please replace $WORKING_DIR with the absolute path to COSIPY\n"
        "#SBATCH --chdir=$WORKING_DIR\n#SBATCH --output=Control_master.out\nsrun true\n"
    )
    for version in ("22.05", "24.11"):
        assert _lines(_lint(tmp_path / version, "hu.bat", note, version), LOG_RULE) == []
    literal = "#!/bin/bash\n#SBATCH --output=$HOME/logs/x-%j.out\nsrun true\n"
    found = _lint(tmp_path / "lit22", "x.sh", literal)
    assert [(line, sev) for line, rule, sev in found if rule == LOG_RULE] == [(2, "error")]
    found = _lint(tmp_path / "lit24", "x.sh", literal, "24.11")
    assert [(line, sev) for line, rule, sev in found if rule == LOG_RULE] == [(2, "warning")]


def test_an_anonymised_xxx_directory_is_a_placeholder(tmp_path: Path) -> None:
    """``-o xxx/rational_bert/logs/finetune/%x.out`` (2022-RAFT): the author's path with its
    top blanked out, to be filled in; an ordinary unshipped ``logs/`` is still judged."""
    text = "#!/bin/bash\n#SBATCH -J sq\n#SBATCH -o xxx/rational_bert/logs/%x.out\nsrun true\n"
    assert _lines(_lint(tmp_path / "a", "run.sh", text), LOG_RULE) == []
    plain = text.replace("xxx/rational_bert/", "")
    assert _lines(_lint(tmp_path / "b", "run.sh", plain), LOG_RULE) == [3]


# --------------------------------------------------------------- script-dir-in-spool

SPOOL_HEADER = "#!/bin/bash\n#SBATCH --time=1:00:00\n"
HERE = 'SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n'


def test_a_kept_directory_sourced_before_the_submit_lookup_is_the_spool(tmp_path: Path) -> None:
    """sallm: ``source "$SCRIPT_DIR/lib/env.sh"`` runs before the script looks at
    ``$SLURM_SUBMIT_DIR``: slurmd's spool copy has no lib/ beside it, whatever the lookup
    does later. A kept directory the lookup replaces before any use stays quiet."""
    early = (
        SPOOL_HEADER + HERE + 'source "$SCRIPT_DIR/lib/env.sh"\n'
        'if [[ -n "${SLURM_SUBMIT_DIR:-}" ]]; then export REPO="$SLURM_SUBMIT_DIR"; fi\n'
    )
    assert _lines(_lint(tmp_path / "a", "ops/launch.sh", early), SPOOL_RULE) == [3]
    fallback = (
        SPOOL_HEADER + HERE + 'if [[ -n "${SLURM_SUBMIT_DIR:-}" ]]; then '
        'SCRIPT_DIR="$SLURM_SUBMIT_DIR"; fi\nsource "$SCRIPT_DIR/lib/env.sh"\n'
    )
    assert _lines(_lint(tmp_path / "b", "ops/launch.sh", fallback), SPOOL_RULE) == []


def test_cd_to_the_submit_dir_with_a_nested_default_is_no_lookup_of_the_script(
    tmp_path: Path,
) -> None:
    """``cd "${SLURM_SUBMIT_DIR:-${PWD}}"`` moves the shell like ``cd "$SLURM_SUBMIT_DIR"``;
    ``BASH_SOURCE`` is still the spool copy, so the directory taken after it is the spool
    (research's ``exec bash "${SCRIPT_DIR}/run.sh"``)."""
    text = (
        SPOOL_HEADER
        + 'cd "${SLURM_SUBMIT_DIR:-${PWD}}"\n'
        + HERE
        + 'exec bash "${SCRIPT_DIR}/run.sh"\n'
    )
    assert _lines(_lint(tmp_path, "jobs/x.sbatch", text), SPOOL_RULE) == [4]


def test_a_header_sbatch_skips_is_still_a_job_script(tmp_path: Path) -> None:
    """``set -euo pipefail`` above the ``#SBATCH`` lines makes sbatch skip them all, but the
    file is still submitted and run from slurmd's spool copy (ml-cookbook's train_16b.sh).
    A file with no ``#SBATCH`` line that nothing submits is not judged."""
    text = (
        "#!/bin/bash\nset -euo pipefail\n#SBATCH --nodes=32\n"
        + HERE
        + 'source "$SCRIPT_DIR/.env/bin/activate"\n'
    )
    assert _lines(_lint(tmp_path / "a", "train.sh", text), SPOOL_RULE) == [4]
    helper = "#!/bin/bash\nset -euo pipefail\n" + HERE + 'source "$SCRIPT_DIR/env.sh"\n'
    assert _lines(_lint(tmp_path / "b", "helper.sh", helper), SPOOL_RULE) == []


def test_a_kept_directory_never_read_is_unused_despite_unrelated_names(tmp_path: Path) -> None:
    """bench-in-situ keeps SCRIPT_DIR and never reads it; ``$sizex/`` in a sed expression
    (``s/^nx=.*$/nx=$sizex/``) names no directory, so it is no other name for this one.
    A path under an unset directory-like name (``$here/env.sh``) may be it: judged."""
    unused = SPOOL_HEADER + HERE + 'sed -i "s/^nx=[0-9]*$/nx=$sizex/" setup.ini\n'
    assert _lines(_lint(tmp_path / "a", "bench.sh", unused), SPOOL_RULE) == []
    maybe = SPOOL_HEADER + HERE + 'source "$here/env.sh"\n'
    assert _lines(_lint(tmp_path / "b", "bench.sh", maybe), SPOOL_RULE) == [3]
