"""Precision and recall of ``slurmkit lint`` on the labelled corpus, per part and Slurm version.

The corpus (``tests/fixtures/real-scripts``) has a development part, which rules are tuned
on, and a test part, scored only when a round of rules work is done. The development part
is ten subsets: the scripts at the top level, and ``spent-holdout/`` to ``spent-holdout9/``,
the first nine test parts, each scored once (2026-11-29 and 11-30) and development data
since (a hold-out that has been looked at can no longer test anything). The test part is
``holdout10/``, to be collected by others from repositories in no development subset; until
it exists, and while it holds under 30% of all scripts, ``--part test`` says so and exits 2
(a scored part is spent). Each script was
labelled by hand before lint ran on it (``LABELS.json`` of each directory; the first 66
scripts keep their older judgments in ``EXPECTED.tsv``, read here as labels).

Lint runs exactly as a user runs it: through the CLI command itself, in process
(``slurmkit lint --json --info --slurm-version V PATH...``), on each script put back at
its repository path in a work tree of its own with the directories its repository ships
(``lint_corpus``), so the file system rules see what they see on real use (issue 32 item 3).

Printed per version and subset (and their sum for the development part): errors shown
and right, warnings shown and right (a finding is right
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
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "real-scripts"
SPENT = CORPUS / "spent-holdout"
SPENT2 = CORPUS / "spent-holdout2"
SPENT3 = CORPUS / "spent-holdout3"
SPENT4 = CORPUS / "spent-holdout4"
SPENT5 = CORPUS / "spent-holdout5"
SPENT6 = CORPUS / "spent-holdout6"
SPENT7 = CORPUS / "spent-holdout7"
SPENT8 = CORPUS / "spent-holdout8"
SPENT9 = CORPUS / "spent-holdout9"
HOLDOUT10 = CORPUS / "holdout10"
DEVELOPMENT = (CORPUS, SPENT, SPENT2, SPENT3, SPENT4, SPENT5, SPENT6, SPENT7, SPENT8, SPENT9)
# part -> its directories, each scored on its own and summed
PARTS: dict[str, tuple[Path, ...]] = {"dev": DEVELOPMENT, "test": (HOLDOUT10,)}
NOT_SCRIPTS = {
    "SOURCES.tsv",
    "EXPECTED.tsv",
    "LABELS.json",
    "SPLIT.tsv",
    "SHIPS.tsv",
    "README.md",
}
VERSIONS = ("22.05", "24.11")

# Defect kinds that issue 32 names and lint may not have yet, and kinds the labelling
# met that no rule covers; with the rule ids they are every kind a label may have.
LABEL_KINDS = {
    "sbatch-misspelt",
    "non-ascii-dash",
    "sbatch-unknown-option",
    "sbatch-option-twice",
    "unset-variable-option",
    "slurm-variable-unset",
    "server-never-waited",
    "signal-without-trap",
    "term-trap-requeues",
    "resubmit-without-dependency",
    "array-zero-line",
    "rm-own-log",
    "test-bracket-unclosed",
    "option-as-command",
    "single-quoted-variable",
    "script-dir-in-spool",
    "assignment-with-spaces",
    "srun-bad-option",
    "step-exceeds-job",
    "gpu-program-without-gpus",
    "bashism-in-sh",
}


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

    def add(self, other: Score) -> None:
        """Pool another subset's score into this one (the part's sum)."""
        self.scripts += other.scripts
        for severity in self.shown:
            self.shown[severity] += other.shown[severity]
            self.right[severity] += other.right[severity]
        self.high += other.high
        self.found += other.found
        self.wrong += other.wrong
        self.missed += other.missed
        for rule, (right, judged) in other.per_rule.items():
            tally = self.per_rule.setdefault(rule, [0, 0])
            tally[0] += right
            tally[1] += judged


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
    so a rule that looks at the file system cannot behave differently here. ShellCheck is
    off: its findings are its own tool's, unlabelled, and the score would otherwise depend
    on whether the machine happens to have it (the scored test parts had not).
    """
    from slurmkit.cli.lint import lint_command

    args = ["--json", "--info", "--no-shellcheck", "--slurm-version", version, *names]
    with _inside(directory):
        result = CliRunner().invoke(lint_command, args, catch_exceptions=False)
    if result.exit_code not in (0, 1):
        raise RuntimeError(f"lint exited {result.exit_code}: {result.output.strip()}")
    findings: list[dict[str, object]] = json.loads(result.stdout)["findings"]
    return findings


def lint_corpus(directory: Path, names: list[str], version: str) -> list[dict[str, object]]:
    """``lint_as_cli`` on the scripts put back where their repositories keep them.

    A corpus copy lies flat in this project's checkout, so a rule that judges the
    script's checkout (a log directory shipped beside it or above it) would judge ours.
    Each script goes back to its repository path (``SOURCES.tsv``) in a work tree of
    its own, one per repository, with the directories that repository ships
    (``SHIPS.tsv``: checked at the commit with ``git ls-tree``) kept by a ``.gitkeep``.
    Findings name the corpus files again.
    """
    rows = {r["file"]: r for r in read_rows(directory / "SOURCES.tsv")}
    ships = read_rows(directory / "SHIPS.tsv") if (directory / "SHIPS.tsv").is_file() else []
    with tempfile.TemporaryDirectory(prefix="slurmkit-corpus-") as tmp:
        root = Path(tmp)
        placed: dict[str, str] = {}
        commits: dict[Path, str] = {}
        for name in names:
            placed[_place(root, directory / name, rows[name], commits)] = name
        for ship in ships:
            slug = _slug(ship["repository"])
            for top in [*root.glob(slug), *root.glob(slug + "@*")]:
                if commits[top] != ship["commit"]:
                    continue  # shipped at another commit than this tree's scripts
                (top / ship["directory"]).mkdir(parents=True, exist_ok=True)
                (top / ship["directory"] / ".gitkeep").touch()
        findings = lint_as_cli(root, sorted(placed), version)
    for finding in findings:
        finding["file"] = placed[str(finding["file"])]
    return findings


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as stream:
        return list(csv.DictReader(stream, delimiter="\t"))


def _slug(repository: str) -> str:
    return repository.replace("/", "+")


def _place(root: Path, source: Path, row: dict[str, str], commits: dict[Path, str]) -> str:
    """Copy one script to its repository path, in a tree of its commit (``commits``).

    A path taken, or a tree of another commit (a directory shipped at one commit may
    be missing at another), gets a new tree.
    """
    number = 0
    while True:
        top = root / (_slug(row["repository"]) + (f"@{number}" if number else ""))
        target = top / row["path"]
        if commits.setdefault(top, row["commit"]) == row["commit"] and not target.exists():
            break
        number += 1
    (top / ".git").mkdir(parents=True, exist_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return str(target.relative_to(root))


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
    for f in lint_corpus(directory, names, version):
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


def _row(version: str, subset: str, s: Score) -> str:
    return (
        f"{version:6} {subset:14} {_ratio(s.right['error'], s.shown['error']):>16} "
        f"{_ratio(s.right['warning'], s.shown['warning']):>16} {_ratio(s.found, s.high):>16}"
    )


def _details(s: Score) -> None:
    for file, line, rule, severity in sorted(s.wrong):
        print(f"  unlabelled {severity}: {file}:{line} {rule}")
    for lb in sorted(s.missed, key=lambda lb: (lb.file, lb.line)):
        print(f"  missed: {lb.file}:{lb.line} {lb.kind}")


def _subset(directory: Path) -> str:
    return "top level" if directory == CORPUS else directory.name


def _repositories(directories: tuple[Path, ...]) -> set[str]:
    repos: set[str] = set()
    for directory in directories:
        with open(directory / "SOURCES.tsv", newline="") as stream:
            repos |= {r["repository"] for r in csv.DictReader(stream, delimiter="\t")}
    return repos


SMALLEST_TEST_SHARE = 0.3  # of all scripts (issue 32 item 1)


def _too_small(test: tuple[Path, ...], dev: tuple[Path, ...]) -> str:
    """Why the test part may not be scored yet: it is under 30% of the corpus.

    A test part is scored once and is spent from then on, so scoring one that is too small
    to count would waste it: it is topped up with fresh repositories first.
    """
    size = sum(len(scripts(d)) for d in test)
    whole = size + sum(len(scripts(d)) for d in dev)
    if size >= SMALLEST_TEST_SHARE * whole:
        return ""
    need = -(-(SMALLEST_TEST_SHARE * whole - size) // (1 - SMALLEST_TEST_SHARE))
    return (
        f"{size} of {whole} scripts ({100 * size / whole:.0f}%), under the "
        f"{SMALLEST_TEST_SHARE:.0%} it must hold: add at least {int(need)} scripts from new "
        "repositories before scoring it (a scored part is spent)"
    )


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
    directories = PARTS[args.part]
    for directory in directories:
        if not (directory / "SOURCES.tsv").is_file():
            state = "has no SOURCES.tsv yet" if directory.is_dir() else "does not exist yet"
            where = directory.relative_to(ROOT)
            print(f"score_lint_corpus: part {args.part}: {where}/ {state}", file=sys.stderr)
            return 2
    if args.part == "test" and (short := _too_small(directories, PARTS["dev"])):
        print(f"score_lint_corpus: part test: {short}", file=sys.stderr)
        return 2
    count = sum(len(scripts(d)) for d in directories)
    subsets = " + ".join(f"{_subset(d)} {len(scripts(d))}" for d in directories)
    print(
        f"part {args.part}: {count} scripts from {len(_repositories(directories))} "
        f"repositories ({subsets})"
    )
    heads = ("errors right", "warnings right", "recall (high)")
    print(f"{'Slurm':6} {'subset':14} " + " ".join(f"{h:>16}" for h in heads))
    pooled = Score()
    for version in args.versions.split(","):
        total = Score()
        for directory in directories:
            s = score(directory, version)
            total.add(s)
            if len(directories) > 1:
                print(_row(version, _subset(directory), s))
                if args.details:
                    _details(s)
        print(_row(version, "all" if len(directories) > 1 else _subset(directory), total))
        if args.details and len(directories) == 1:
            _details(total)
        pooled.add(total)
    if args.write_precision:
        write_precision(pooled.per_rule, args.versions.split(","), count)
    return 0


def write_precision(table: dict[str, list[int]], versions: list[str], count: int) -> None:
    """The committed table ``lint --list-rules`` and ``--explain`` read (data, no corpus)."""
    lines = [
        '"""Measured precision of each lint rule on the development part of the corpus.',
        "",
        "Generated by ``benchmarks/score_lint_corpus.py --part dev --write-precision`` from",
        f"the {count} scripts of the development part (``tests/fixtures/real-scripts``, its",
        "``spent-holdout*/``; never ``holdout10/``) and their labels",
        "(``LABELS.json``, ``EXPECTED.tsv``), Slurm " + " and ".join(versions) + " pooled:",
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
