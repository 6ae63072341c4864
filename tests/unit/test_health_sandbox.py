"""The sandbox's HealthCheckProgram: in slurm.conf, a no-op wrapper until health.toml exists."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slurmkit import _proc
from slurmkit.sandbox import configs
from slurmkit.sandbox.spec import SandboxSpec


@pytest.fixture
def spec(tmp_path: Path) -> SandboxSpec:
    return SandboxSpec(dir=tmp_path, nodes=4)


def test_slurm_conf_names_the_wrapper_with_a_short_interval(spec: SandboxSpec) -> None:
    lines = configs.slurm_conf(spec).splitlines()
    assert f"HealthCheckProgram={spec.dir}/bin/slurmkit-health" in lines
    assert "HealthCheckInterval=5" in lines
    assert "HealthCheckNodeState=ANY" in lines


def _write(spec: SandboxSpec, python: str) -> Path:
    spec.bin_dir.mkdir(parents=True, exist_ok=True)
    path = configs.health_wrapper_path(spec)
    path.write_text(configs.health_wrapper(spec, python))
    os.chmod(path, 0o755)
    return path


def test_wrapper_exits_0_at_once_without_health_toml(spec: SandboxSpec, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    fake = tmp_path / "fake-python"
    fake.write_text(f'#!/bin/sh\necho "$@" > {ran}\nexit 3\n')
    os.chmod(fake, 0o755)
    wrapper = _write(spec, str(fake))
    done = _proc.run([str(wrapper)], env={}, timeout=10)
    assert (done.returncode, ran.exists()) == (0, False)


def test_wrapper_runs_health_with_the_sandbox_config_and_slurm_conf(
    spec: SandboxSpec, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    fake = tmp_path / "fake python"  # a space: the wrapper quotes every path
    fake.write_text(f'#!/bin/sh\necho "$SLURM_CONF $*" > {ran}\nexit 0\n')
    os.chmod(fake, 0o755)
    wrapper = _write(spec, str(fake))
    configs.health_config_path(spec).write_text("")
    done = _proc.run([str(wrapper)], env={}, timeout=10)
    assert done.returncode == 0
    assert ran.read_text().split() == [
        str(spec.slurm_conf),
        "-m",
        "slurmkit",
        "health",
        "--config",
        str(spec.dir / "health.toml"),
    ]
