"""Log directories and the spool directory: what a review of round six found (issue 32).

A chain that resubmits itself from inside the job still meets no directory the first
time; an echo of a kept directory opens nothing there; a driver's continued lines are
joined once each, its files read once per directory, and only sbatch's own words move
the log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import slurmkit.lint.rules.paths as paths
from slurmkit.lint import LintContext, lint_path, lint_text
from slurmkit.slurm.records import SlurmVersion


def v22() -> LintContext:
    """A fresh context each time: the context keeps what it read beside scripts."""
    return LintContext(SlurmVersion.parse("22.05.8"))


def missing(path: Path, context: LintContext | None = None) -> list[tuple[int, str]]:
    findings = lint_path(path, context or v22())
    return [(f.line, f.severity) for f in findings if f.rule == "output-dir-missing"]


def in_checkout(tmp_path: Path, where: str, text: str) -> Path:
    (tmp_path / ".git").mkdir(parents=True, exist_ok=True)
    script = tmp_path / where
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(text)
    return script


CHAIN = "#!/bin/bash\n#SBATCH --time=4:00:00\n#SBATCH --output=runlogs/%j.out\nmkdir -p runlogs\n"


@pytest.mark.parametrize(
    "tail",
    [
        # resubmitted from inside the job: the first, hand, submission meets no directory
        'python train.py --resume\nif [ ! -f done.flag ]; then\n    sbatch "$0"\nfi\n',
        # an exit that ends the job anyway skips no work: still the chain's last act
        'python train.py\nif [ ! -f done.flag ]; then\n    sbatch "$0"\n    exit 0\nfi\n',
        # the exit is taken only when the submission failed
        'sbatch "$0" || exit 1\npython train.py\n',
    ],
)
def test_a_chain_that_resubmits_itself_from_the_job_makes_its_directory_too_late(
    tmp_path: Path, tail: str
) -> None:
    assert missing(in_checkout(tmp_path, "chain.sh", CHAIN + tail)) == [(3, "warning")]


def test_a_run_by_hand_that_submits_itself_and_exits_before_the_work_is_in_time(
    tmp_path: Path,
) -> None:
    tail = 'if [ -z "$SLURM_JOB_ID" ]; then\n    sbatch "$0"\n    echo queued\n    exit\nfi\n'
    script = in_checkout(tmp_path, "chain.sh", CHAIN + tail + "python train.py\n")
    assert missing(script) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # the branch that runs only outside a job submits: by hand, before the job exists
        (
            'if [ -z "$SLURM_JOB_ID" ]; then\n    mkdir -p logs\n    sbatch "$0"\n'
            "else\n    python train.py\nfi\n",
            [],
        ),
        (
            "mkdir -p logs\n"
            'if [[ -n ${SLURM_JOB_ID:-} ]]; then python train.py; else sbatch "$0"; fi\n',
            [],
        ),
        # inside a job (or a negated test): a chain, the first submission meets no directory
        ('mkdir -p logs\npython train.py\nif [ -n "$SLURM_JOB_ID" ]; then sbatch "$0"; fi\n', [3]),
        (
            'mkdir -p logs\npython train.py\nif ! [ -z "$SLURM_JOB_ID" ]; then sbatch "$0"; fi\n',
            [3],
        ),
    ],
)
def test_a_self_submission_guarded_to_run_outside_a_job_is_in_time(
    tmp_path: Path, body: str, expected: list[int]
) -> None:
    head = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --output=logs/x-%j.out\n"
    found = missing(in_checkout(tmp_path, "run.sh", head + body))
    assert [line for line, severity in found if severity == "warning"] == expected


SPOOL = '#!/bin/bash\n#SBATCH --time=1:00:00\nSCRIPT_DIR=$(dirname "$0")\n'
SPOOL += 'cd "$SLURM_SUBMIT_DIR"\n'


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # telling where the copy is opens nothing there
        ('echo "job script copy is in $SCRIPT_DIR"\n', []),
        ("printf '%s\\n' \"${SCRIPT_DIR}\"\n", []),
        # a path under it, even in an echo's redirection, or another command's argument
        ('echo start > "$SCRIPT_DIR/log"\n', [3]),
        ('echo ok && python "$SCRIPT_DIR"/t.py\n', [3]),
        ('cp "$SCRIPT_DIR" backup\n', [3]),
    ],
)
def test_only_a_use_of_the_kept_directory_after_the_lookup_is_the_spool(
    line: str, expected: list[int]
) -> None:
    found = lint_text(SPOOL + line + "srun ./app\n", "t.slurm", v22())
    assert [f.line for f in found if f.rule == "script-dir-in-spool"] == expected


JOB = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --error=logs/x-%j.err\nhostname\n"


@pytest.mark.parametrize(
    ("driver", "expected"),
    [
        # -e before the sbatch word is test's or echo's, not sbatch --error
        ("#!/bin/bash\n[ -e f ] && sbatch job.sh\n", [(3, "error")]),
        ('#!/bin/bash\necho -e "go\\n" && sbatch job.sh\n', [(3, "error")]),
        ("#!/bin/bash\n[ -e f ] && sbatch \\\n  -e /scratch/x.err job.sh\n", []),
        ("#!/bin/bash\n[ -e f ] && SBATCH_ERROR=/scratch/x.err sbatch job.sh\n", []),
    ],
)
def test_only_sbatchs_own_words_replace_the_directive(
    tmp_path: Path, driver: str, expected: list
) -> None:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "submit.sh").write_text(driver)
    assert missing(in_checkout(tmp_path, "pipeline/job.sh", JOB)) == expected


class _Line(str):
    """A driver's line that counts how often a continuation is looked for on it."""

    calls = 0

    def rstrip(self, chars: str | None = None) -> str:
        _Line.calls += 1
        return str.rstrip(self, chars)


class _Text(str):
    def splitlines(self, keepends: bool = False) -> list[str]:
        return [_Line(line) for line in str.splitlines(self, keepends)]


@pytest.mark.parametrize("count", [200, 400])
def test_a_drivers_continued_lines_are_read_once_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """A driver of 14,000 continued ``sbatch inner.sh \\`` lines once took 54 s: each line
    naming the job rebuilt its whole continuation run. Counted, not timed."""
    real = paths._driver_text
    monkeypatch.setattr(paths, "_driver_text", lambda path: _Text(real(path)))
    _Line.calls = 0
    (tmp_path / "outer.sh").write_text("#!/bin/bash\n" + "sbatch inner.sh \\\n" * count + "\n")
    script = in_checkout(tmp_path, "inner.sh", JOB.replace("--error", "--output"))
    assert missing(script) == [(3, "error")]
    assert 0 < _Line.calls <= 4 * (count + 2)


def test_the_files_beside_scripts_of_one_directory_are_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[str] = []
    real = paths._driver_text

    def counting(path: str) -> str:
        read.append(path)
        return real(path)

    monkeypatch.setattr(paths, "_driver_text", counting)
    (tmp_path / "submit.sh").write_text("#!/bin/bash\nsbatch a.sh\nsbatch b.sh\nsbatch c.sh\n")
    scripts = [in_checkout(tmp_path, f"{name}.sh", JOB) for name in "abc"]
    context = v22()
    assert [missing(script, context) for script in scripts] == [[(3, "error")]] * 3
    assert len(read) == 4  # the three jobs and the driver, each once
    # a sibling changed since is read again
    (tmp_path / "submit.sh").write_text("#!/bin/bash\nmkdir -p logs\nsbatch a.sh\n")
    assert missing(scripts[0], context) == []
