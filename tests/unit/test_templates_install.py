"""A real, non-editable install: build the wheel, install it into a fresh venv, list the templates.

Slow-ish (a wheel build and a venv with dependencies from PyPI, about a minute): it is
the only test that proves an installed slurmkit finds templates/ and cron/ and the pieces
they include, outside the source tree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from slurmkit.templating import discover

REPO = Path(__file__).resolve().parents[2]


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> str:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{argv} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_wheel_in_a_fresh_venv_lists_and_renders_every_template(tmp_path: Path) -> None:
    wheels, venv, work = tmp_path / "wheels", tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
        work,
    )
    (wheel,) = wheels.glob("slurmkit-*.whl")
    _run([sys.executable, "-m", "venv", str(venv)], work)
    _run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], work)

    slurmkit = str(venv / "bin" / "slurmkit")
    listed = json.loads(_run([slurmkit, "template", "list", "--json"], work))
    assert [t["name"] for t in listed] == [t.name for t in discover()]
    assert all("/_data/" in t["path"] and str(REPO) not in t["path"] for t in listed)
    for name in ("torchrun", "cron-scheduler", "faulty-node-check"):
        text = _run([slurmkit, "template", "render", name], work)
        assert text.startswith("#!/bin/bash\n") and "set -eo pipefail" in text
