"""Warning rules judged on scripts from the spent third hold-out (issue 32).

Each case is a small synthetic script of a class found there, not a copy of one file.
"""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text

OLD = LintContext(SlurmVersion.parse("22.05.8"))
NEW = LintContext(SlurmVersion.parse("24.11.5"))


def found(text: str, context: LintContext = NEW) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", context)]


def rules(text: str, context: LintContext = NEW) -> set[str]:
    return {rule for _, _, rule in found(text, context)}


END_TIME = (
    "#!/bin/bash\n#SBATCH -t 60\n"
    "now=$(date +%s)\n"
    'left=$(echo "${SLURM_JOB_END_TIME} - ${now} - 600" | bc)\n'
    'stress-ng --timeout "${left}s"\n'
)


def test_job_end_time_is_empty_before_23_02() -> None:
    assert (4, "warning", "slurm-variable-unset") in found(END_TIME, OLD)


def test_job_end_time_is_set_from_23_02() -> None:
    assert "slurm-variable-unset" not in rules(END_TIME, NEW)


def test_job_end_time_with_a_fallback_is_fine_at_22_05() -> None:
    text = END_TIME.replace("${SLURM_JOB_END_TIME}", "${SLURM_JOB_END_TIME:-0}")
    assert "slurm-variable-unset" not in rules(text, OLD)
