"""sbatch header and srun CPU rules, fixed on the spent third hold-out (issue 32)."""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.slurm.records import SlurmVersion

V22 = LintContext(SlurmVersion.parse("22.05.8"))
V24 = LintContext(SlurmVersion.parse("24.11.1"))


def of_rule(text: str, rule: str, context: LintContext = V22) -> list[tuple[int, str]]:
    return [(f.line, f.severity) for f in lint_text(text, "t.slurm", context) if f.rule == rule]


def header(*lines: str) -> str:
    return (
        "#!/bin/bash\n#SBATCH -t 5\n"
        + "".join(f"#SBATCH {line}\n" for line in lines)
        + "hostname\n"
    )


@pytest.mark.parametrize(
    "option",
    ["--account=[budget code]", "--gres=[4 A100 80g]", "--partition=[your partition name]"],
)
def test_a_bracketed_placeholder_of_several_words_is_a_template_not_refused(option: str) -> None:
    assert of_rule(header(option), "sbatch-unknown-option") == []


def test_a_hostlist_bracket_does_not_hide_a_refused_word() -> None:
    assert of_rule(header("--nodelist=gpu[01-04] extra"), "sbatch-unknown-option") == [(3, "error")]
