"""The labelled corpus of published sbatch scripts and its hold-out (issue 32 items 1 and 3).

The corpus is split once, by repository, into a development part (rules are tuned on it)
and a test part (``holdout/``, scored only when the rules work is done). These tests keep
the split as recorded, the labels well-formed, and the harness on the CLI's own code path;
they never require a score, and none of them lints the test part.
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.score_lint_corpus import CORPUS, NOT_SCRIPTS, ROOT, lint_as_cli, score
from slurmkit.lint.rules import RULE_IDS

HOLDOUT = CORPUS / "holdout"
SEED = 3202
# Defect kinds that issue 32 names and lint may not have yet, and kinds the labelling
# met that no rule covers; with the rule ids they are every kind a label may have.
KINDS = {
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


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as stream:
        return list(
            csv.DictReader((line for line in stream if not line.startswith("#")), delimiter="\t")
        )


def _scripts(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_file() and p.name not in NOT_SCRIPTS)


def test_the_split_is_by_repository_and_reproducible() -> None:
    """SPLIT.tsv is what the recorded seed gives, and each part holds only its repositories."""
    split = _rows(CORPUS / "SPLIT.tsv")
    part = {r["repository"]: r["part"] for r in split}
    tuned = {
        r["repository"] for r in _rows(CORPUS / "SOURCES.tsv") if r["labels"] == "EXPECTED.tsv"
    }
    assert {part[repo] for repo in tuned} == {"dev"}
    new = {r["repository"]: int(r["drawn"]) for r in split if r["repository"] not in tuned}
    order = sorted(new)
    random.Random(SEED).shuffle(order)
    need = -(-3 * (sum(new.values()) + 66) // 10)
    chosen: set[str] = set()
    for repo in order:
        if sum(new[r] for r in chosen) >= need:
            break
        chosen.add(repo)
    assert chosen == {repo for repo, p in part.items() if p == "test"}
    for directory, name in ((CORPUS, "dev"), (HOLDOUT, "test")):
        repos = {r["repository"] for r in _rows(directory / "SOURCES.tsv")}
        assert {part[repo] for repo in repos} == {name}
    test, dev = len(_scripts(HOLDOUT)), len(_scripts(CORPUS))
    assert test / (test + dev) >= 0.3


def test_the_holdout_says_it_is_not_for_tuning() -> None:
    assert "must not" in (HOLDOUT / "README.md").read_text()


@pytest.mark.parametrize("directory", [CORPUS, HOLDOUT], ids=["dev", "test"])
def test_every_new_script_is_labelled(directory: Path) -> None:
    """Labels name scripts of their part, lines inside them, and a known kind."""
    labels = json.loads((directory / "LABELS.json").read_text())["scripts"]
    new = {r["file"] for r in _rows(directory / "SOURCES.tsv") if r["labels"] == "LABELS.json"}
    assert set(labels) == new
    for name, entry in labels.items():
        lines = (directory / name).read_bytes().count(b"\n") + 1
        for defect in entry["defects"]:
            assert 1 <= defect["line"] <= lines, (name, defect)
            assert defect["kind"] in RULE_IDS | KINDS, (name, defect)
            assert isinstance(defect["high"], bool)
            assert set(defect.get("versions", [])) <= {"22.05", "24.11"}


LINT = [sys.executable, "-m", "slurmkit", "lint", "--json", "--info"]
# A checkout that ships logs/ (a .gitkeep) but not out/; each script makes its
# directory itself, which is too late for Slurm, and run-%j/ can never exist.
SCRIPTS = {
    "shipped.sh": "#SBATCH --output=logs/%x-%j.out\nmkdir -p logs\n",
    "unshipped.sh": "#SBATCH --output=out/%x-%j.out\nmkdir -p out\n",
    "per-job.sh": "#SBATCH --output=run-%j/out.log\n",
}


def _checkout(root: Path) -> None:
    for name, body in SCRIPTS.items():
        (root / name).write_text(f"#!/bin/bash\n#SBATCH -t 5\n{body}srun hostname\n")
    (root / "logs").mkdir()
    (root / "logs" / ".gitkeep").write_text("")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "scripts"], check=True)


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_the_harness_lints_as_the_cli(tmp_path: Path, version: str) -> None:
    """One code path (issue 32 item 3): the harness and `slurmkit lint` find the same,
    log directories that are missing (or shipped by the script's checkout) included."""
    _checkout(tmp_path)
    names = sorted(SCRIPTS)
    cli = subprocess.run(
        [*LINT, "--slurm-version", version, *names],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert cli.returncode in (0, 1), cli.stderr
    by_cli = {
        (f["file"], f["line"], f["rule"], f["severity"]) for f in json.loads(cli.stdout)["findings"]
    }
    by_harness = {
        (f["file"], f["line"], f["rule"], f["severity"])
        for f in lint_as_cli(tmp_path, names, version)
    }
    assert by_harness == by_cli
    missing = {file for file, _, rule, _ in by_cli if rule == "output-dir-missing"}
    assert missing == {"unshipped.sh", "per-job.sh"}


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_the_development_part_is_scored(version: str) -> None:
    """The scoring runs on every development script; it reports, it does not demand."""
    result = score(CORPUS, version)
    assert result.scripts == len(_scripts(CORPUS))
    assert result.found <= result.high
    assert all(result.right[s] <= result.shown[s] for s in ("error", "warning"))
