"""The installed pyslurm's version read from its dist-info directory, without importlib.metadata.

Every command that queries Slurm asks which backend to use; where pyslurm is installed
that was a 15 ms import of ``importlib.metadata``. The quick look must give the same
version, and decline (None: the metadata answers) whenever the layout is not pip's one.
"""

from __future__ import annotations

from importlib import metadata, util
from pathlib import Path

import pytest

from slurmkit.slurm import backend


def _site(tmp_path: Path, *versions: str) -> str:
    package = tmp_path / "pyslurm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for version in versions:
        info = tmp_path / f"pyslurm-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Name: pyslurm\nVersion: {version}\n")
    return str(package / "__init__.py")


def test_the_one_dist_info_beside_the_package_names_the_version(tmp_path: Path) -> None:
    assert backend._dist_info_version(_site(tmp_path, "25.11.2")) == "25.11.2"


@pytest.mark.parametrize("versions", [(), ("25.11.2", "24.11.0")])
def test_none_or_two_dist_infos_leave_it_to_the_metadata(tmp_path: Path, versions) -> None:
    assert backend._dist_info_version(_site(tmp_path, *versions)) is None
    assert backend._dist_info_version(None) is None


def test_same_answer_as_the_metadata_where_pyslurm_is_installed() -> None:
    if util.find_spec("pyslurm") is None:
        assert backend.pyslurm_version() is None
    else:
        assert backend.pyslurm_version() == metadata.version("pyslurm")
