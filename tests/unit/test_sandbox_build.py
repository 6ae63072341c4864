"""Slurm built from source into a cached prefix (issue 18): finding the tarball, the stamp
that alone says "built", the client wrappers and the virtual nodes (no build runs here)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.sandbox import build, configs, virtual
from slurmkit.sandbox.spec import SandboxSpec


@pytest.fixture
def prefixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(build, "PREFIX_DIR", tmp_path / "opt")
    monkeypatch.setattr(build, "_repo_vendor_dir", lambda: tmp_path / "vendor")
    monkeypatch.delenv(build.SOURCE_ENV, raising=False)
    return tmp_path


def _tarball(where: Path, name: str = "slurm-25.11.7.tar.gz") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    path.write_bytes(b"not really a tarball")
    return path


def _finished(prefixes: Path, sha: str) -> Path:
    prefix = prefixes / "opt" / "slurm-25.11"
    (prefix / "sbin").mkdir(parents=True)
    (prefix / "sbin" / "slurmctld").write_text("")
    (prefix / build.STAMP).write_text(f"series=25.11\nsha256={sha}\n")
    return prefix


def test_source_comes_from_the_option_then_the_environment_then_vendor(
    prefixes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vendor = _tarball(prefixes / "vendor")
    assert build.find_source("25.11") == vendor
    env = _tarball(prefixes / "env")
    monkeypatch.setenv(build.SOURCE_ENV, str(env))
    assert build.find_source("25.11") == env
    option = _tarball(prefixes / "opt-src")
    assert build.find_source("25.11", option) == option
    assert build.find_source("26.05") == env  # the named file wins even for another series


def test_a_named_source_that_does_not_exist_is_a_usage_error(prefixes: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        build.find_source("25.11", prefixes / "missing.tar.gz")


def test_no_build_and_no_source_is_one_line_naming_where_to_get_it(prefixes: Path) -> None:
    with pytest.raises(EnvironmentProblem, match=r"download\.schedmd\.com"):
        build.ensure_built("25.11")


def test_a_stamped_build_is_reused_without_running_anything(
    prefixes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tarball = _tarball(prefixes / "vendor")
    prefix = _finished(prefixes, hashlib.sha256(tarball.read_bytes()).hexdigest())
    monkeypatch.setattr(_proc, "runner", lambda *a, **k: pytest.fail("nothing may run"))
    assert build.ensure_built("25.11") == (prefix, 0.0)
    tarball.unlink()  # no source at all: the finished build is still reused
    assert build.ensure_built("25.11") == (prefix, 0.0)


def test_a_prefix_without_its_stamp_is_not_taken_as_built(prefixes: Path) -> None:
    prefix = _finished(prefixes, "0" * 64)
    (prefix / build.STAMP).unlink()  # make install was cut short
    assert not build.is_built("25.11")


def test_a_stamp_naming_another_tarball_means_rebuild(
    prefixes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tarball(prefixes / "vendor")
    _finished(prefixes, "0" * 64)
    ran: list[tuple[str, ...]] = []

    def runner(argv, **kwargs):  # the build's steps, recorded; each one fails at once
        ran.append(tuple(argv))
        return _proc.Completed(tuple(argv), 2, "", "tar: not a tarball", 0.0)

    monkeypatch.setattr(_proc, "runner", runner)
    with pytest.raises(EnvironmentProblem, match="building Slurm failed"):
        build.ensure_built("25.11")
    assert ran and "tar" in ran[0]
    assert not build.is_built("25.11")  # the old stamp was removed before anything else


def test_wrappers_run_the_prefix_clients_with_the_sandbox_config(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "sinfo").write_text('#!/bin/sh\necho "$SLURM_CONF $*"\n')
    os.chmod(prefix / "bin" / "sinfo", 0o755)
    conf = tmp_path / "a dir" / "slurm.conf"
    (tmp_path / "bin").mkdir()  # made by 'sandbox up' with the sandbox's other folders
    build.write_wrappers(prefix, "25.11", tmp_path / "bin", conf, ("sinfo", "sacct"))
    assert not (tmp_path / "bin" / "sacct").exists()  # not in the prefix: no wrapper
    out = _proc.run([str(tmp_path / "bin" / "sinfo"), "-N", "x y"], env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == f"{conf} -N x y"


def test_virtual_nodes_are_down_in_their_own_partition(tmp_path: Path) -> None:
    spec = SandboxSpec(dir=tmp_path, virtual_nodes=600)
    conf = configs.slurm_conf(spec)
    lines = [ln for ln in conf.splitlines() if ln.startswith("NodeName=vnode-")]
    assert lines[0].startswith("NodeName=vnode-[1-250] NodeAddr=127.2.0.[1-250] ")
    assert lines[-1].startswith("NodeName=vnode-[501-600] NodeAddr=127.2.2.[1-100] ")
    assert all('State=DOWN Reason="virtual node (never started)"' in ln for ln in lines)
    assert "PartitionName=virtual Nodes=vnode-[1-600] " in conf
    assert "Default=YES" in next(ln for ln in conf.splitlines() if "PartitionName=gpu" in ln)
    assert virtual.names(SandboxSpec(dir=tmp_path, virtual_nodes=2)) == ["vnode-1", "vnode-2"]
    assert "vnode" not in configs.slurm_conf(SandboxSpec(dir=tmp_path))


def test_virtual_nodes_are_bounded(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--virtual-nodes"):
        SandboxSpec(dir=tmp_path, virtual_nodes=10**6)


def test_a_built_version_on_the_host_gets_no_cgroups(tmp_path: Path) -> None:
    spec = SandboxSpec(dir=tmp_path, slurm="25.11", prefix="/opt/slurmkit/slurm-25.11")
    assert configs.cgroup_conf(spec) == "CgroupPlugin=disabled\n"
