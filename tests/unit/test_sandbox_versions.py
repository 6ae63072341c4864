"""The sandbox's Slurm versions: choosing one, building its root, entering it (no cluster)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem
from slurmkit.sandbox import configs, lifecycle, rootfs, versions, world
from slurmkit.sandbox.spec import SandboxSpec


def test_a_version_not_offered_is_one_line_listing_the_offered_ones(run_cli, tmp_path) -> None:
    result = run_cli("sandbox", "up", "--slurm", "23.02", "--dir", str(tmp_path / "x"), exit_code=2)
    assert result.stderr.strip().splitlines() == [
        "slurmkit: Slurm 23.02 is not offered by the sandbox; "
        "choose one of: 22.05, 24.11, 25.11, 26.05"
    ]
    assert not (tmp_path / "x").exists()


def test_series_reads_every_way_a_version_is_printed() -> None:
    assert versions.series("slurm-wlm 26.05.5") == "26.05"
    assert versions.series("24.11.5-2") == "24.11"
    assert versions.series("slurm 22.05.8") == "22.05"
    assert versions.series("") == ""


def test_cgroup_plugin_disabled_only_for_a_root_version_that_knows_the_setting(tmp_path) -> None:
    root = str(tmp_path)
    assert configs.cgroup_conf(SandboxSpec(dir=tmp_path, slurm="26.05", root=root)) == (
        "CgroupPlugin=disabled\n"
    )
    assert configs.cgroup_conf(SandboxSpec(dir=tmp_path, slurm="24.11", root=root)) != ""
    # 22.05 rejects the setting, and the host's own packages have the host's cgroup mounts
    assert configs.cgroup_conf(SandboxSpec(dir=tmp_path, slurm="22.05", root=root)) == ""
    assert configs.cgroup_conf(SandboxSpec(dir=tmp_path, slurm="26.05")) == ""


def test_only_26_05_borrows_trixies_mariadb_client_for_slurmdbd() -> None:
    sid = versions.OFFERED["26.05"]
    assert sid.borrowed is not None and sid.borrowed[:2] == ("trixie", "libmariadb3")
    assert sid.slurmdbd_env["LD_LIBRARY_PATH"].startswith(sid.borrowed[2])
    script = rootfs._install_script(sid)
    assert "download libmariadb3/trixie" in script  # the installed sid one would win otherwise
    assert versions.OFFERED["24.11"].borrowed is None
    assert "download" not in rootfs._install_script(versions.OFFERED["24.11"])


def test_t64_library_names_follow_the_suite() -> None:
    assert "libssl3" in rootfs.packages("bookworm")
    assert "libssl3t64" in rootfs.packages("sid") and "libssl3" not in rootfs.packages("sid")


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "roots"
    monkeypatch.setattr(rootfs, "ROOTS_DIR", d)
    monkeypatch.setattr(versions, "ROOTS_DIR", d)
    monkeypatch.setattr(rootfs, "default_lock_path", lambda name: tmp_path / f"{name}.lock")
    monkeypatch.setattr(rootfs, "find_program", lambda name: f"/usr/sbin/{name}" if name else None)
    return d


def test_no_network_is_one_line_naming_what_could_not_be_fetched_and_leaves_nothing(
    roots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """debootstrap fails half-way (it had created files): nothing may be left to pass as a root."""

    def fake(argv, **_kw) -> _proc.Completed:
        target = Path(argv[3])
        (target / "etc").mkdir(parents=True)  # half-built
        return _proc.Completed(
            tuple(argv), 1, "", "E: Failed getting release file http://x/dists/sid/Release\n", 0.1
        )

    monkeypatch.setattr(_proc, "runner", fake)
    with pytest.raises(EnvironmentProblem) as err:
        rootfs.ensure_root(versions.OFFERED["26.05"], lambda _m: None)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"could not fetch Debian sid from {versions.DEBIAN_MIRROR}")
    assert "Failed getting release file" in message
    assert list(roots.iterdir()) == []  # no root, no half-built .build-* directory


def test_a_root_without_its_completion_marker_is_rebuilt_not_used(
    roots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    half = roots / "24.11"
    (half / "usr" / "bin").mkdir(parents=True)
    calls: list[str] = []

    def fake(argv, **_kw) -> _proc.Completed:
        calls.append(argv[0])
        return _proc.Completed(tuple(argv), 1, "", "E: no network\n", 0.1)

    monkeypatch.setattr(_proc, "runner", fake)
    with pytest.raises(EnvironmentProblem):
        rootfs.ensure_root(versions.OFFERED["24.11"], lambda _m: None)
    assert calls == ["/usr/sbin/debootstrap"]
    assert not half.exists()


def test_a_finished_root_is_used_without_building(
    roots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = roots / "24.11"
    (done / "etc").mkdir(parents=True)
    (done / rootfs.ROOT_MARKER).write_text("24.11.5-2\n")
    wanted = rootfs.packages(versions.OFFERED["24.11"].suite)
    (done / rootfs.PACKAGES_RECORD).write_text("\n".join(wanted) + "\n")
    monkeypatch.setattr(_proc, "runner", lambda *a, **k: pytest.fail("must not run anything"))
    assert rootfs.ensure_root(versions.OFFERED["24.11"], lambda _m: None) == (done, 0.0)


def _cached_root(roots: Path, record: str | None) -> Path:
    done = roots / "24.11"
    (done / "etc").mkdir(parents=True)
    (done / rootfs.ROOT_MARKER).write_text("24.11.5-2\n")
    if record is not None:
        (done / rootfs.PACKAGES_RECORD).write_text(record)
    return done


@pytest.mark.parametrize("record", [None, "slurmd\nslurmctld\n"])
def test_a_cached_root_gets_only_new_packages_without_upgrading_slurm(
    roots: Path, monkeypatch: pytest.MonkeyPatch, record: str | None
) -> None:
    """A root built before ``sudo`` joined the list gets it once, and is not rebuilt."""
    done = _cached_root(roots, record)
    scripts: list[str] = []

    def fake(argv, **_kw) -> _proc.Completed:
        scripts.append(argv[-1])
        return _proc.Completed(tuple(argv), 0, "", "", 0.1)

    monkeypatch.setattr(_proc, "runner", fake)
    said: list[str] = []
    assert rootfs.ensure_root(versions.OFFERED["24.11"], said.append) == (done, 0.0)
    (script,) = scripts
    assert "apt-get install -y -qq --no-upgrade " in script and " sudo " in script
    assert said == ["adding new packages to the Slurm 24.11 root (once)"]
    wanted = rootfs.packages(versions.OFFERED["24.11"].suite)
    assert (done / rootfs.PACKAGES_RECORD).read_text().split() == wanted
    monkeypatch.setattr(_proc, "runner", lambda *a, **k: pytest.fail("must not run again"))
    assert rootfs.ensure_root(versions.OFFERED["24.11"], said.append) == (done, 0.0)


def test_a_cached_root_that_cannot_get_new_packages_is_used_as_it_is(
    roots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = _cached_root(roots, None)
    monkeypatch.setattr(
        _proc, "runner", lambda argv, **_k: _proc.Completed(tuple(argv), 100, "", "E: offline", 0)
    )
    said: list[str] = []
    assert rootfs.ensure_root(versions.OFFERED["24.11"], said.append) == (done, 0.0)
    assert said[-1].startswith("adding packages to the Slurm 24.11 root failed (exit 100)")
    assert said[-1].endswith("; the root is used as it is")
    assert not (done / rootfs.PACKAGES_RECORD).exists()  # tried again next time
    assert (done / rootfs.ROOT_MARKER).exists()


def test_env_puts_the_version_wrappers_first_on_path(tmp_path: Path) -> None:
    spec = SandboxSpec(dir=tmp_path / "sbx", slurm="26.05", root="/var/cache/x/26.05")
    spec.dir.mkdir()
    spec.save()
    lines = lifecycle.env_lines(spec.dir)
    assert lines == [
        f"export SLURM_CONF={spec.slurm_conf}",
        f'export PATH={spec.bin_dir}:"$PATH"',
    ]
    host = SandboxSpec(dir=tmp_path / "host", slurm="22.05")
    host.dir.mkdir()
    host.save()
    assert lifecycle.env_lines(host.dir) == [f"export SLURM_CONF={host.slurm_conf}"]


def test_a_wrapper_refuses_when_its_world_is_gone(tmp_path: Path) -> None:
    """A pid that is not the world (here: our own, whose root has no marker) is never entered."""
    if os.geteuid() != 0:
        pytest.skip("only root enters the world; others use the root's loader")
    root = tmp_path / "root"
    (root / "usr" / "bin").mkdir(parents=True)
    (root / "usr" / "bin" / "sinfo").touch()
    (root / "usr" / "lib" / "x86_64-linux-gnu" / "slurm-wlm").mkdir(parents=True)
    (root / "usr" / "lib" / "x86_64-linux-gnu" / "ld-linux-x86-64.so.2").touch()
    spec = SandboxSpec(dir=tmp_path / "sbx", slurm="26.05", root=str(root))
    spec.bin_dir.mkdir(parents=True)
    world.write_wrappers(spec, world.Where(spec, world=os.getpid()))
    assert [p.name for p in spec.bin_dir.iterdir()] == ["sinfo"]
    wrapper = spec.bin_dir / "sinfo"
    assert os.stat(wrapper).st_mode & 0o777 == 0o755
    result = subprocess.run([str(wrapper), "--version"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"sinfo: the Slurm 26.05 sandbox in {spec.dir} is not running (slurmkit sandbox up)"
    )
    # a plain user runs the same client through the root's loader and libraries
    text = wrapper.read_text()
    libs = f"{root}/usr/lib/x86_64-linux-gnu/slurm-wlm:{root}/usr/lib/x86_64-linux-gnu"
    assert f"--library-path {libs} {root}/usr/bin/sinfo" in text


def test_plugin_dir_is_named_in_slurm_conf_for_a_root_only(tmp_path: Path) -> None:
    spec = SandboxSpec(dir=tmp_path, slurm="26.05", root="/r")
    assert "PluginDir=/r/usr/lib/x86_64-linux-gnu/slurm-wlm" in configs.slurm_conf(
        spec, "/r/usr/lib/x86_64-linux-gnu/slurm-wlm"
    )
    assert "PluginDir" not in configs.slurm_conf(SandboxSpec(dir=tmp_path))


def test_inside_the_root_its_own_host_path_leads_back_to_its_slash(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    rootfs._self_link(root, Path("/var/cache/slurmkit/roots/26.05"))
    link = root / "var/cache/slurmkit/roots/26.05"
    assert link.is_symlink() and os.readlink(link) == "/"
    rootfs._self_link(root, Path("/var/cache/slurmkit/roots/26.05"))  # idempotent


def test_the_world_binds_every_non_os_top_level_directory_and_no_os_one(tmp_path: Path) -> None:
    binds = world.host_binds(tmp_path)
    assert "/tmp" in binds and "/var/tmp" in binds
    here = "/" + Path(__file__).resolve().parts[1]  # where this checkout lives
    assert here in binds or here in ("/usr", "/var")
    for os_dir in ("/usr", "/etc", "/proc", "/dev", "/var", "/bin"):
        assert os_dir not in binds
