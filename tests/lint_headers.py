"""Small sbatch scripts and contexts the lint rule tests build their cases from."""

from __future__ import annotations

from slurmkit.lint import LintContext, lint_text
from slurmkit.slurm.records import SlurmVersion

V22 = LintContext(SlurmVersion.parse("22.05.8"))
V24 = LintContext(SlurmVersion.parse("24.11.1"))
V26 = LintContext(SlurmVersion.parse("26.05.1"))


def of_rule(text: str, rule: str, context: LintContext = V22) -> list[tuple[int, str]]:
    """(line, severity) of one rule's findings."""
    return [(f.line, f.severity) for f in lint_text(text, "t.slurm", context) if f.rule == rule]


def header(*lines: str) -> str:
    """A script whose header is these directives (after ``-t 5``), then one command."""
    return (
        "#!/bin/bash\n#SBATCH -t 5\n"
        + "".join(f"#SBATCH {line}\n" for line in lines)
        + "hostname\n"
    )
