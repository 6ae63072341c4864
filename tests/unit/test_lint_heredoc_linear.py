"""Job scripts fed to sbatch by heredocs are linted as their bodies alone (issue 32, linear).

Each body was once linted padded with blank lines to its place in the file, so the text
read grew with the square of the heredoc count (4,000 heredocs in 20,000 lines: 15 s).
Counted, not timed: the size of every text that lint parses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

import slurmkit.lint.script as script_module
from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.lint.rules import commands

CONTEXT = LintContext(SlurmVersion(22, 5, 0), "option")


def _heredocs(count: int) -> str:
    out = ["#!/bin/bash", "#SBATCH -t 10"]
    for i in range(count):
        out += [
            "sbatch <<EOF",
            "#!/bin/bash",
            "#SBATCH -c 8",
            "#SBATCH -t 5",
            f"srun python train.py --seed {i}",
            "EOF",
        ]
    return "\n".join(out) + "\n"


def _parsed_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    real = script_module.parse

    def counting(text: str):  # type: ignore[no-untyped-def]
        sizes.append(len(text))
        return real(text)

    monkeypatch.setattr(script_module, "parse", counting)
    return sizes


def test_the_text_lint_parses_stays_linear_in_the_heredoc_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _heredocs(200)
    sizes = _parsed_sizes(monkeypatch)
    findings = lint_text(text, "many.sh", CONTEXT)
    assert len(sizes) == 201  # the file, then each heredoc's job script once
    assert sum(sizes) < 2 * len(text)
    assert len([f for f in findings if f.rule == "srun-cpus-per-task"]) == 200


def test_a_heredoc_s_findings_keep_the_file_s_line_numbers() -> None:
    text = "\n".join(["#!/bin/bash", "#SBATCH -t 1", *["echo x"] * 20, _heredocs(2)])
    found = [f for f in lint_text(text, "f.sh", CONTEXT) if f.rule == "srun-cpus-per-task"]
    assert [f.line for f in found] == [29, 35]
    assert "(line 27)" in found[0].message  # the #SBATCH -c 8 line, numbered in the file
    assert found[0].message.endswith("(in the job script that line 25 feeds to sbatch, its line 4)")


def test_a_heredoc_inside_a_heredoc_is_numbered_in_the_file() -> None:
    text = (
        "#!/bin/bash\n#SBATCH -t 1\necho a\n"
        "cat > job.sh <<EOF\n#!/bin/bash\n#SBATCH -t 1\necho b\n"
        "sbatch <<INNER\n#!/bin/bash\n#SBATCH -t 1\n#SBATCH -c 8\nsrun y\nINNER\nEOF\n"
        "sbatch job.sh\n"
    )
    found = [f for f in lint_text(text, "n.sh", CONTEXT) if f.rule == "srun-cpus-per-task"]
    assert [f.line for f in found] == [12]
    assert "(line 11)" in found[0].message
    assert found[0].message.endswith("(in the job script that line 8 feeds to sbatch, its line 4)")


class _CountingPattern:
    """A compiled pattern that counts its whole-text scans."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.scans = pattern, 0

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        self.scans += 1
        return self.pattern.finditer(text)


def test_the_loop_variables_are_read_once_not_once_per_tee(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tee-without-pipefail once read every ``for`` variable of the whole text for each tee
    (40,000 pipelines: quadratic); the script's loops are read once per script."""
    counting = _CountingPattern(commands._FOR_VARIABLE)
    monkeypatch.setattr(commands, "_FOR_VARIABLE", counting)
    pipes = "".join(f"srun python t.py --seed {i} | tee log{i}\n" for i in range(200))
    # under set -e every pipeline's hidden status matters, so each tee is judged
    head = "#!/bin/bash\n#SBATCH -t 10\nset -e\n"
    found = lint_text(head + pipes + "echo done\n", "t", CONTEXT)
    assert sum(f.rule == "tee-without-pipefail" for f in found) == 200
    assert counting.scans == 1
