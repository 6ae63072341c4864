"""The recorded Slurm outputs in tests/fixtures are the shared recordings, unchanged.

They were copied into the repository so that a fresh clone tests on its own; this keeps the
copy honest: every file matches the checksum taken from the shared set when it was copied
(tests/fixtures/SHA256SUMS), and nothing unrecorded sits beside them.
"""

from __future__ import annotations

import hashlib
import json

from fixtures_path import FIXTURES, SCENARIOS, VERSIONS

SUMS = FIXTURES / "SHA256SUMS"
NOT_RECORDINGS = {"SHA256SUMS", "SOURCES.md", "SOURCES.tsv"}  # gpu/SOURCES.tsv: provenance
# published sbatch scripts for lint, not Slurm recordings: their provenance is their own
# SOURCES.tsv, checked by test_lint_corpus.py
OTHER_CORPORA = {"real-scripts"}


def _listed() -> dict[str, str]:
    sums = {}
    for line in SUMS.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name] = digest
    return sums


def test_every_recording_matches_its_checksum() -> None:
    listed = _listed()
    assert len(listed) > 400
    changed = [
        name
        for name, digest in listed.items()
        if hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest() != digest
    ]
    assert changed == []


def test_nothing_unlisted_beside_the_recordings() -> None:
    present = {
        str(p.relative_to(FIXTURES))
        for p in FIXTURES.rglob("*")
        if p.is_file()
        and p.name not in NOT_RECORDINGS
        and "__pycache__" not in p.parts
        and p.relative_to(FIXTURES).parts[0] not in OTHER_CORPORA
    }
    assert present == set(_listed())


def test_every_scenario_keeps_its_index_and_description() -> None:
    for version in VERSIONS:
        for scenario in SCENARIOS:
            folder = FIXTURES / f"slurm-{version}" / scenario
            index = json.loads((folder / "index.json").read_text())
            meta = json.loads((folder / "scenario.json").read_text())
            assert meta["scenario"] == scenario and meta["slurm_version"] == version
            copied = {p.name for p in folder.iterdir()} - {"index.json", "scenario.json"}
            named = set(index) | {e["stderr_file"] for e in index.values() if e["stderr_file"]}
            assert copied <= named, f"{folder}: files index.json does not name"
