"""A non-editable install must carry templates/ and cron/ (and py.typed) inside the wheel.

The wheel is built offline (``--no-index --no-build-isolation``, with the hatchling of the dev
extra): a unit test needs no network and must not fetch a build backend from the package
registry (issue 15 item 5); it takes about a second instead of minutes.
"""

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
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("slurmkit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for kind in ("templates", "cron"):
        shipped = {
            p.relative_to(REPO / kind).as_posix()
            for p in (REPO / kind).rglob("*")
            # not __pycache__: test_faulty_net imports templates/_net_check.py, and with
            # pytest -n 2 its bytecode may appear there while this test lists the folder
            if p.is_file() and "__pycache__" not in p.parts
        }
        assert shipped, f"{kind}/ is empty"
        for rel in shipped:
            assert f"slurmkit/_data/{kind}/{rel}" in names
    assert "slurmkit/cli/__init__.py" in names
    # PEP 561: type checkers read slurmkit's annotations from an installed copy only with it
    assert "slurmkit/py.typed" in names
