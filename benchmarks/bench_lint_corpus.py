"""Precision and recall of ``slurmkit lint`` on published sbatch scripts (issue 21 items 1, 5).

Lints every script of ``tests/fixtures/real-scripts`` at Slurm 22.05, 24.11 and 26.05 and
compares the findings with the hand judgments in ``EXPECTED.tsv`` (a finding is right
when the job would really do the wrong thing, judged against what Slurm and bash do,
not against lint). Per rule and version it prints the findings, how many were right,
precision (right / judged findings, whatever the severity: the rule's own quality) and
recall (right findings found / right findings expected); then the same for what lint
shows by default (errors and warnings; info only with ``--info``).

It only prints: ``lint --list-rules``'s precision table comes from the development part
of the grown corpus (``benchmarks/score_lint_corpus.py --part dev --write-precision``).

    .venv/bin/python benchmarks/bench_lint_corpus.py
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

from benchmarks.score_lint_corpus import lint_as_cli
from slurmkit.lint import INFO, RULES

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "real-scripts"
VERSIONS = ("22.05", "24.11", "26.05")
NOT_SCRIPTS = {"SOURCES.tsv", "EXPECTED.tsv", "README.md"}


def expected() -> list[dict[str, str]]:
    with open(CORPUS / "EXPECTED.tsv", newline="") as stream:
        return list(csv.DictReader(stream, delimiter="\t"))


def scripts() -> list[Path]:
    """The 66 scripts judged in EXPECTED.tsv (the issue-32 ones are scored by score_lint_corpus)."""
    with open(CORPUS / "SOURCES.tsv", newline="") as stream:
        rows = csv.DictReader(stream, delimiter="\t")
        return sorted(CORPUS / r["file"] for r in rows if r["labels"] == "EXPECTED.tsv")


def findings(version: str) -> list[tuple[str, int, str, str]]:
    """(file, line, rule, severity) of every finding, info included, linted as the CLI does."""
    return [
        (str(f["file"]), int(str(f["line"])), str(f["rule"]), str(f["severity"]))
        for f in lint_as_cli(CORPUS, [p.name for p in scripts()], version)
    ]


def measure() -> dict[str, dict[str, list[int]]]:
    """rule -> version -> [found, right, wrong, unjudged, expected right, shown right, shown]."""
    rows = expected()
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0] * 7))
    for version in VERSIONS:
        judged = {
            (r["file"], int(r["line"]), r["rule"]): r["verdict"]
            for r in rows
            if version in r["versions"].split(",") and r["verdict"] in ("right", "wrong")
        }
        for (_, _, rule), verdict in judged.items():
            if verdict == "right":
                table[rule][version][4] += 1
        for r in rows:  # real defects lint does not find: they count against recall
            if version in r["versions"].split(",") and r["verdict"] == "missed":
                table[r["rule"]][version][4] += 1
        for file, line, rule, severity in findings(version):
            cell = table[rule][version]
            cell[0] += 1
            verdict = judged.get((file, line, rule))
            cell[{"right": 1, "wrong": 2}.get(verdict or "", 3)] += 1
            if severity != INFO:
                cell[6] += 1
                cell[5] += verdict == "right"
    return table


def _ratio(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def main(argv: list[str]) -> int:
    table = measure()
    print(f"{len(scripts())} scripts; findings judged by hand in EXPECTED.tsv\n")
    print(
        f"{'rule':28} {'version':7} {'found':>5} {'right':>5} {'wrong':>5} {'unjudged':>8} "
        f"{'precision':>9} {'recall':>6}"
    )
    totals = {v: [0] * 7 for v in VERSIONS}
    for rule in sorted(table):
        for version in VERSIONS:
            cell = table[rule][version]
            for i, n in enumerate(cell):
                totals[version][i] += n
            if not cell[0] and not cell[4]:
                continue
            print(
                f"{rule:28} {version:7} {cell[0]:5} {cell[1]:5} {cell[2]:5} {cell[3]:8} "
                f"{_ratio(cell[1], cell[1] + cell[2]):>9} {_ratio(cell[1], cell[4]):>6}"
            )
    print("\nshown by default (errors + warnings):")
    for version in VERSIONS:
        t = totals[version]
        print(
            f"  Slurm {version}: {t[6]} shown, {t[5]} right: precision {_ratio(t[5], t[6])}, "
            f"recall {_ratio(t[5], t[4])} ({t[4]} real defects judged); "
            f"all severities: {t[0]} found, {t[1]} right, {t[3]} unjudged"
        )
    return 0


if __name__ == "__main__":
    assert {r.id for r in RULES}  # the rules exist (import check)
    sys.exit(main(sys.argv[1:]))
