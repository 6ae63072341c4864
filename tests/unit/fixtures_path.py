"""Where the recorded Slurm outputs live, and small readers for them.

The recordings live in the repository, at
``tests/fixtures/slurm-<version>/<scenario>/`` (copied unchanged from the shared
fixtures set, see ``tests/fixtures/SOURCES.md``), so a fresh clone tests on its
own; this is the one place that knows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VERSIONS = ("22.05", "24.11")
SCENARIOS = (
    "01_idle",
    "02_nodes_degraded",
    "03_jobs",
    "04_jobs_nodes_degraded",
    "05_node_not_responding",
    "06_cancelled",
)
JOB_SCENARIOS = SCENARIOS[2:]

# What the scenarios did to the nodes (scenario.json), as Slurm reports it.
NODE_STATES = {
    "01_idle": dict.fromkeys(("node-1", "node-2", "node-3", "node-4"), "IDLE"),
    "02_nodes_degraded": {
        "node-1": "IDLE",
        "node-2": "IDLE+DRAIN",
        "node-3": "DOWN",
        "node-4": "IDLE+DRAIN",
    },
    "03_jobs": {"node-1": "MIXED", "node-2": "MIXED", "node-3": "IDLE", "node-4": "MIXED"},
    "04_jobs_nodes_degraded": {
        "node-1": "MIXED",
        "node-2": "MIXED+DRAIN",
        "node-3": "DOWN",
        "node-4": "MIXED+DRAIN",
    },
    "05_node_not_responding": {
        "node-1": "MIXED",
        "node-2": "MIXED+DRAIN",
        "node-3": "DOWN+NOT_RESPONDING",
        "node-4": "MIXED+DRAIN",
    },
    "06_cancelled": {
        "node-1": "IDLE",
        "node-2": "IDLE+DRAIN",
        "node-3": "DOWN+NOT_RESPONDING",
        "node-4": "IDLE+DRAIN",
    },
}
REASONS = {"node-2": "Kill task failed", "node-3": "Not responding", "node-4": "gpu ECC error"}


def degraded(scenario: str) -> bool:
    """Whether the scenario set drain/down reasons on node-2..4."""
    return scenario not in ("01_idle", "03_jobs")


def scenario_dir(version: str, scenario: str) -> Path:
    return FIXTURES / f"slurm-{version}" / scenario


def read(version: str, scenario: str, name: str) -> str:
    """The recorded stdout ``name`` (e.g. ``sinfo_json.txt``) of one scenario.

    Only the recordings some test reads were copied into the repository; a new test that
    needs another one is told where to copy it from, instead of a bare FileNotFoundError.
    """
    path = scenario_dir(version, scenario) / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is not in the repository: copy it unchanged from "
            f"../shared/fixtures/slurm-{version}/{scenario}/{name} and add it to "
            "tests/fixtures/SHA256SUMS (see tests/fixtures/SOURCES.md)"
        )
    return path.read_text()


def entry(version: str, scenario: str, name: str) -> dict[str, Any]:
    """The ``index.json`` entry of a recorded file: command, exit code, stderr file."""
    index = json.loads((scenario_dir(version, scenario) / "index.json").read_text())
    return index[name]


def stderr(version: str, scenario: str, name: str) -> str:
    stderr_file = entry(version, scenario, name)["stderr_file"]
    return read(version, scenario, stderr_file) if stderr_file else ""


def scenario_jobs(version: str, scenario: str) -> dict[str, str]:
    """Job ids by role (``running_gpu_2node`` -> ``3``) from ``scenario.json``."""
    meta = json.loads((scenario_dir(version, scenario) / "scenario.json").read_text())
    return meta.get("jobs", {})


def all_cases(names: tuple[str, ...] = SCENARIOS) -> list[tuple[str, str]]:
    """(version, scenario) pairs for ``pytest.mark.parametrize``."""
    return [(version, scenario) for version in VERSIONS for scenario in names]
