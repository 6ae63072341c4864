"""The layering is enforced, not just described: import-linter's contracts in pyproject.toml.

Why a unit test rather than a separate tool run: the README's rules (the library never
imports click or the CLI; no import cycle between slurmkit's packages; a private module
``_x`` is used only inside its own package) decay silently when nothing fails. As a unit
test, a violation fails ``pytest tests/unit`` and ``./scripts/test`` like any other bug,
and needs no cluster. The second test proves each contract really catches what it names,
so a contract that matches nothing (a typo, a moved package) cannot pass vacuously.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = (
    "the library (all but slurmkit.cli) never imports click or slurmkit.cli",
    "no import cycles among slurmkit's subpackages",
    "a private module (_x) is imported only inside its own package",
    "node and undrain do not import each other",
)


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the slurmkit package found under ``root`` (its own interpreter, so
    that ``root``'s copy is the one imported), with the repository's contracts."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache", "--no-logo"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_import_contracts_hold() -> None:
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in CONTRACTS:
        assert f"{name} KEPT" in result.stdout


@pytest.fixture
def broken_copy(tmp_path: Path) -> Path:
    """A copy of slurmkit with one violation of each contract added."""
    shutil.copytree(
        REPO / "slurmkit", tmp_path / "slurmkit", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    pkg = tmp_path / "slurmkit"
    (pkg / "hostlist" / "zz_click.py").write_text("import click\n")
    (pkg / "hostlist" / "zz_cli.py").write_text("import slurmkit.cli\n")
    (pkg / "hostlist" / "zz_cycle.py").write_text("import slurmkit.node\n")
    (pkg / "node" / "zz_cycle.py").write_text("import slurmkit.hostlist\n")
    (pkg / "lint" / "_zz_private.py").write_text("")
    (pkg / "node" / "zz_private.py").write_text("from slurmkit.lint import _zz_private\n")
    # the Slurm layer's runner from outside the layer, both spellings: slurmkit.slurm.commands
    # is its public home, and the contract lists no exception for _exec
    (pkg / "undrain" / "zz_exec.py").write_text("from slurmkit.slurm import _exec\n")
    (pkg / "remote" / "zz_exec.py").write_text("from slurmkit.slurm._exec import run_slurm\n")
    (pkg / "node" / "zz_undrain.py").write_text("import slurmkit.undrain.select\n")
    return tmp_path


def test_a_planted_cycle_is_named_by_its_edge(tmp_path: Path) -> None:
    """hostlist imports no sibling but errors (a leaf), so the one edge to remove is the
    plant's. Alone: with the other plants (hostlist -> cli reaches every package) the
    contract lists its first edges alphabetically and may cut the plant's off."""
    shutil.copytree(
        REPO / "slurmkit", tmp_path / "slurmkit", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    (tmp_path / "slurmkit" / "hostlist" / "zz_cycle.py").write_text("import slurmkit.node\n")
    (tmp_path / "slurmkit" / "node" / "zz_cycle.py").write_text("import slurmkit.hostlist\n")
    result = _lint_imports(tmp_path)
    assert "no import cycles among slurmkit's subpackages BROKEN" in result.stdout
    assert "\n- .hostlist -> .node (1 import)" in result.stdout


def test_each_contract_catches_its_violation(broken_copy: Path) -> None:
    result = _lint_imports(broken_copy)
    assert result.returncode == 1, result.stdout + result.stderr
    for name in CONTRACTS:
        assert f"{name} BROKEN" in result.stdout
    assert "slurmkit.hostlist.zz_click -> click" in result.stdout
    assert "slurmkit.hostlist.zz_cli -> slurmkit.cli" in result.stdout
    assert "slurmkit.node.zz_private -> slurmkit.lint._zz_private" in result.stdout
    assert "slurmkit.undrain.zz_exec -> slurmkit.slurm._exec" in result.stdout
    assert "slurmkit.remote.zz_exec -> slurmkit.slurm._exec" in result.stdout
    assert "slurmkit.node.zz_undrain -> slurmkit.undrain.select" in result.stdout
