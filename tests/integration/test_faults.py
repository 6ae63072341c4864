"""Real faults, not mocked ones: a controller that is not there, Slurm not on PATH."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.errors import ControllerUnreachable, NotFound, SlurmNotInstalled
from slurmkit.slurm._exec import run_slurm


@pytest.fixture
def dead_controller_conf(cluster: sandbox.SandboxSpec, tmp_path: Path) -> Path:
    """The sandbox's slurm.conf pointing at a controller port where nothing listens."""
    text = cluster.slurm_conf.read_text().replace(
        f"SlurmctldPort={cluster.ctld_port}", f"SlurmctldPort={cluster.port_base + 3}"
    )
    conf = tmp_path / "slurm.conf"
    conf.write_text(text)
    (tmp_path / "gres.conf").write_text((cluster.dir / "etc" / "gres.conf").read_text())
    return conf


@pytest.mark.parametrize("argv", [["squeue"], ["scontrol", "show", "job"]])
def test_controller_down_is_one_clear_error(dead_controller_conf: Path, argv: list[str]) -> None:
    with pytest.raises(ControllerUnreachable) as caught:
        run_slurm(argv, env={"SLURM_CONF": str(dead_controller_conf)}, timeout=30)
    message = str(caught.value)
    assert "cannot reach slurmctld" in message
    assert "\n" not in message


@pytest.mark.smoke
def test_unknown_job_is_not_found(cluster: sandbox.SandboxSpec) -> None:
    with pytest.raises(NotFound, match="Invalid job id"):
        run_slurm(["scontrol", "show", "job", "999999"])


def test_slurm_missing_from_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SlurmNotInstalled, match="'squeue' not found on PATH"):
        run_slurm(["squeue"])
