"""Log paths and the script's own directory, as Slurm really opens and runs them (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
