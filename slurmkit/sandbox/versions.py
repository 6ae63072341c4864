"""Which Slurm versions the sandbox offers, and where each one's packages come from.

The host's own packages serve the version the host ships (22.05 on Debian 12; see
:func:`host_series`).
Every other version runs from a Debian root file system (``debootstrap
--variant=minbase``) of the release that ships it, built on first use and
cached. Version-specific facts that were measured live are kept here, named by
version, so the rest of the sandbox stays version-neutral.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from slurmkit import _proc
from slurmkit.errors import UsageError

ROOTS_DIR = Path(os.environ.get("SLURMKIT_ROOTS_DIR", "/var/cache/slurmkit/roots"))
DEBIAN_MIRROR = os.environ.get("SLURMKIT_DEBIAN_MIRROR", "http://deb.debian.org/debian")

# sid's libmariadb3 1:11.8.9 makes slurmdbd 26.05 die at start-up
# (``mysql_query failed: 5027 Number of columns in result ... exceeds maximum`` then
# ``fatal: _check_mysql_concat_is_sane``); trixie's 11.8.6 works, loaded for slurmdbd alone.
_TRIXIE_MARIADB = "/usr/local/lib/slurmkit-mariadb-trixie"


@dataclass(frozen=True)
class SlurmRelease:
    """One offered Slurm release series and the Debian release whose packages provide it."""

    version: str
    suite: str
    # 24.11+ slurmd load a cgroup plugin even with proctrack/linuxproc; in a chroot the
    # plain /sys bind lacks the cgroup mounts, so it must be told there are none.
    cgroup_disabled: bool
    # environment for slurmdbd alone (a client library the release's own one breaks)
    slurmdbd_env: dict[str, str] = field(default_factory=dict)
    # a package to take from another suite: (suite, package, directory to unpack it into)
    borrowed: tuple[str, str, str] | None = None
    # built from SchedMD's source into a cached prefix on the host (no Debian ships it;
    # see slurmkit.sandbox.build) instead of a Debian root: ``suite`` is then ""
    from_source: bool = False
    # slurm.conf lines this version needs in the sandbox alone
    extra_conf: tuple[str, ...] = ()
    # one munged per node (slurmkit.sandbox.nodemunge): one credential decoded on many nodes
    munge_per_node: bool = False


OFFERED: dict[str, SlurmRelease] = {
    "22.05": SlurmRelease("22.05", "bookworm", cgroup_disabled=False),
    "24.11": SlurmRelease("24.11", "trixie", cgroup_disabled=True),
    # The one series pyslurm exists for on the package registry (the pyslurm backend);
    # its slurmd on the host, without systemd/dbus, must be told there are no cgroups.
    # 25.11's srun sends one signed launch request to every node of a step: with one
    # munged shared by all nodes the second decode is refused as a replay (srun -N2
    # fails), so each node gets its own munged (see nodemunge).
    "25.11": SlurmRelease("25.11", "", cgroup_disabled=True, from_source=True, munge_per_node=True),
    "26.05": SlurmRelease(
        "26.05",
        "sid",
        cgroup_disabled=True,
        slurmdbd_env={"LD_LIBRARY_PATH": f"{_TRIXIE_MARIADB}/usr/lib/x86_64-linux-gnu"},
        borrowed=("trixie", "libmariadb3", _TRIXIE_MARIADB),
    ),
}


def offered(version: str) -> SlurmRelease:
    """The offered version ``version`` names, or a one-line usage error listing them."""
    try:
        return OFFERED[version]
    except KeyError:
        raise UsageError(
            f"Slurm {version} is not offered by the sandbox; choose one of: " + ", ".join(OFFERED)
        ) from None


def series(version_text: str) -> str:
    """``slurm-wlm 24.11.5`` or ``24.11.5`` -> ``24.11``."""
    number = version_text.split()[-1] if version_text.split() else ""
    return ".".join(number.split(".")[:2])


def munge_per_node(version: str) -> bool:
    offered = OFFERED.get(version)
    return bool(offered and offered.munge_per_node)


def extra_conf(version: str) -> list[str]:
    """The version's own slurm.conf lines for the sandbox (none for most)."""
    offered = OFFERED.get(version)
    return list(offered.extra_conf) if offered else []


def root_dir(version: str) -> Path:
    return ROOTS_DIR / version


def host_series() -> str:
    """The host's Slurm release series (``22.05``), or "" when its clients are missing.

    ``sinfo --version`` reads a config before it prints anything (a fatal error without
    one, on 22.05 and later): it is given a two-line one of its own.
    """
    # the system's own directories: a sandbox's wrappers first on PATH are not the host's
    sinfo = shutil.which("sinfo", path="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin")
    if sinfo is None:
        return ""
    with tempfile.TemporaryDirectory(prefix="slurmkit-version-") as tmp:
        conf = Path(tmp) / "slurm.conf"
        conf.write_text("ClusterName=probe\nSlurmctldHost=localhost\n")
        env = {**os.environ, "SLURM_CONF": str(conf)}
        result = _proc.run([sinfo, "--version"], timeout=30, env=env)
    return series(result.stdout.strip()) if result.returncode == 0 else ""
