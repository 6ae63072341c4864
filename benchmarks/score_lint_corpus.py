"""Precision and recall of ``slurmkit lint`` on the labelled corpus, per part and Slurm version.

The corpus (``tests/fixtures/real-scripts``) is split once, by repository, into a
development part (the scripts at its top level, rules are tuned on them) and a test part
(``holdout/``, scored only when the rules work is done: see its README). Each script
was labelled by hand before lint ran on it (``LABELS.json`` of each part; the first 66
scripts keep their older judgments in ``EXPECTED.tsv``, read here as labels).

Lint runs exactly as a user runs it: through the CLI command itself, in process, from
the scripts' own directory (``cd DIR && slurmkit lint --json --info --slurm-version V
*.sh``), so the file system rules see what they see on real use (issue 32 item 3).

Printed per version: errors shown and right, warnings shown and right (a finding is right
when a label names the same line and kind), and the recall of the high-confidence
labels (found when lint shows an error or warning of that kind on that line).

    .venv/bin/python benchmarks/score_lint_corpus.py --part dev [--versions 22.05,24.11]

``--write-precision`` (development part only: the test part is never tuned on) writes
``slurmkit/lint/precision.py``, the per-rule table ``lint --list-rules`` shows: every
finding of a rule at the listed versions, info included (a rule's own quality, whatever
its severity), right when a label of the part names its line and kind.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "real-scripts"
PARTS = {"dev": CORPUS, "test": CORPUS / "holdout"}
NOT_SCRIPTS = {"SOURCES.tsv", "EXPECTED.tsv", "LABELS.json", "SPLIT.tsv", "README.md"}
VERSIONS = ("22.05", "24.11")


@dataclass(frozen=True)
class Label:
    file: str
    line: int
    kind: str
    high: bool
    versions: frozenset[str] | None  # None: every version
    lines: frozenset[int] = frozenset()  # every line the defect spans (see _span)


@dataclass
class Score:
    scripts: int = 0
    shown: dict[str, int] = field(default_factory=lambda: {"error": 0, "warning": 0})
    right: dict[str, int] = field(default_factory=lambda: {"error": 0, "warning": 0})
    high: int = 0
    found: int = 0
    wrong: list[tuple[str, int, str, str]] = field(default_factory=list)
    missed: list[Label] = field(default_factory=list)
    # every finding, info included, per rule: [right, judged] (for --write-precision)
    per_rule: dict[str, list[int]] = field(default_factory=dict)


def scripts(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_file() and p.name not in NOT_SCRIPTS)


@contextlib.contextmanager
def _inside(directory: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def lint_as_cli(directory: Path, names: list[str], version: str) -> list[dict[str, object]]:
    """Every finding (info included) of ``slurmkit lint`` run in ``directory`` on ``names``.

    The command itself, not the library under it: one code path with what users run,
    so a rule that looks at the file system cannot behave differently here.
    """
    from slurmkit.cli.lint import lint_command

    args = ["--json", "--info", "--slurm-version", version, *names]
    with _inside(directory):
        result = CliRunner().invoke(lint_command, args, catch_exceptions=False)
    if result.exit_code not in (0, 1):
        raise RuntimeError(f"lint exited {result.exit_code}: {result.output.strip()}")
    findings: list[dict[str, object]] = json.loads(result.stdout)["findings"]
    return findings


def labels(directory: Path) -> list[Label]:
    """The part's labels: LABELS.json, and in the development part EXPECTED.tsv's verdicts."""
    out: list[Label] = []
    data = json.loads((directory / "LABELS.json").read_text())
    for name, entry in data["scripts"].items():
        text = (directory / name).read_text().splitlines()
        for d in entry["defects"]:
            versions = frozenset(d["versions"]) if d.get("versions") else None
            line = int(d["line"])
            lines = _span(text, line) | frozenset(d.get("lines", []))
            out.append(Label(name, line, d["kind"], bool(d["high"]), versions, lines))
    expected = directory / "EXPECTED.tsv"
    if expected.exists():
        with open(expected, newline="") as stream:
            for r in csv.DictReader(stream, delimiter="\t"):
                if r["verdict"] in ("right", "missed"):
                    versions = frozenset(r["versions"].split(","))
                    line = int(r["line"])
                    out.append(Label(r["file"], line, r["rule"], True, versions, frozenset([line])))
    return out


def _span(text: list[str], line: int) -> frozenset[int]:
    """The label's line and the lines its command continues on (a trailing backslash).

    A label names where the defect starts; lint may name any line of the same command
    (the `| tee` of a continued pipeline), and that is the same finding.
    """
    end = line
    while end <= len(text) and text[end - 1].rstrip().endswith("\\"):
        end += 1
    return frozenset(range(line, end + 1))


def score(directory: Path, version: str) -> Score:
    names = scripts(directory)
    mine = [lb for lb in labels(directory) if lb.versions is None or version in lb.versions]
    known = {(lb.file, line, lb.kind) for lb in mine for line in lb.lines}
    result = Score(scripts=len(names))
    shown: set[tuple[str, int, str]] = set()
    for f in lint_as_cli(directory, names, version):
        severity = str(f["severity"])
        key = (str(f["file"]), int(str(f["line"])), str(f["rule"]))
        tally = result.per_rule.setdefault(key[2], [0, 0])
        tally[0] += key in known
        tally[1] += 1
        if severity == "info":
            continue
        shown.add(key)
        result.shown[severity] += 1
        if key in known:
            result.right[severity] += 1
        else:
            result.wrong.append((*key, severity))
    for lb in mine:
        if lb.high:
            result.high += 1
            if any((lb.file, line, lb.kind) in shown for line in lb.lines):
                result.found += 1
            else:
                result.missed.append(lb)
    return result


def _ratio(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}% ({part}/{whole})" if whole else "- (0/0)"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=sorted(PARTS), required=True)
    parser.add_argument("--versions", default=",".join(VERSIONS))
    parser.add_argument("--details", action="store_true", help="list wrong and missed findings")
    parser.add_argument(
        "--write-precision",
        action="store_true",
        help="write slurmkit/lint/precision.py from this part (dev only)",
    )
    args = parser.parse_args(argv)
    if args.write_precision and args.part != "dev":
        parser.error("--write-precision: only from the development part (--part dev)")
    pooled: dict[str, list[int]] = {}
    directory = PARTS[args.part]
    sources = directory / "SOURCES.tsv"
    with open(sources, newline="") as stream:
        repos = {r["repository"] for r in csv.DictReader(stream, delimiter="\t")}
    print(f"part {args.part}: {len(scripts(directory))} scripts from {len(repos)} repositories")
    print(f"{'Slurm':6} {'errors right':>16} {'warnings right':>16} {'recall (high)':>16}")
    for version in args.versions.split(","):
        s = score(directory, version)
        for rule, (right, judged) in s.per_rule.items():
            tally = pooled.setdefault(rule, [0, 0])
            tally[0] += right
            tally[1] += judged
        print(
            f"{version:6} {_ratio(s.right['error'], s.shown['error']):>16} "
            f"{_ratio(s.right['warning'], s.shown['warning']):>16} {_ratio(s.found, s.high):>16}"
        )
        if args.details:
            for file, line, rule, severity in sorted(s.wrong):
                print(f"  unlabelled {severity}: {file}:{line} {rule}")
            for lb in sorted(s.missed, key=lambda lb: (lb.file, lb.line)):
                print(f"  missed: {lb.file}:{lb.line} {lb.kind}")
    if args.write_precision:
        write_precision(pooled, args.versions.split(","), len(scripts(directory)))
    return 0


def write_precision(table: dict[str, list[int]], versions: list[str], count: int) -> None:
    """The committed table ``lint --list-rules`` and ``--explain`` read (data, no corpus)."""
    lines = [
        '"""Measured precision of each lint rule on the development part of the corpus.',
        "",
        "Generated by ``benchmarks/score_lint_corpus.py --part dev --write-precision`` from",
        f"the {count} scripts of ``tests/fixtures/real-scripts`` (not ``holdout/``) and their",
        "labels (``LABELS.json``, ``EXPECTED.tsv``), Slurm " + " and ".join(versions) + " pooled:",
        "rule -> (right findings, findings), info included. A rule absent here made no",
        "finding there (unmeasured). Data, not computed when lint runs.",
        '"""',
        "",
        "PRECISION: dict[str, tuple[int, int]] = {",
        *(f'    "{rule}": ({r}, {j}),' for rule, (r, j) in sorted(table.items())),
        "}",
    ]
    target = ROOT / "slurmkit" / "lint" / "precision.py"
    target.write_text("\n".join(lines) + "\n")
    print(f"wrote {target.relative_to(ROOT)} ({len(table)} rules)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
