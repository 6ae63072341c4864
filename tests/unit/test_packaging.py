"""A non-editable install must carry templates/ and cron/ inside the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from slurmkit.resources import data_dir

REPO = Path(__file__).resolve().parents[2]


def test_data_dirs_found_in_a_checkout() -> None:
    assert data_dir("templates") == REPO / "templates"
    assert data_dir("cron") == REPO / "cron"


def test_wheel_ships_templates_and_cron(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("slurmkit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for kind in ("templates", "cron"):
        shipped = {
            p.relative_to(REPO / kind).as_posix() for p in (REPO / kind).rglob("*") if p.is_file()
        }
        assert shipped, f"{kind}/ is empty"
        for rel in shipped:
            assert f"slurmkit/_data/{kind}/{rel}" in names
    assert "slurmkit/cli/__init__.py" in names
