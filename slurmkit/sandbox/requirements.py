"""What the sandbox needs from the machine, and installing it where we may.

``up`` runs as root on Debian/Ubuntu and installs missing packages with
apt-get; anywhere else it says exactly what is missing instead of guessing.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem

# program -> Debian package that ships it
REQUIRED_PROGRAMS: dict[str, str] = {
    "slurmctld": "slurmctld",
    "slurmd": "slurmd",
    "sbatch": "slurm-client",
    "slurmdbd": "slurmdbd",
    "munged": "munge",
    "mariadbd": "mariadb-server",
    "mariadb-install-db": "mariadb-server",
    "mariadb": "mariadb-client",
    "pdsh": "pdsh",
    "sshd": "openssh-server",
    "ssh-keygen": "openssh-client",
    "tini": "tini",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "nft": "nftables",  # 'sandbox fault': a node's network broken for real (no netem here)
    "sudo": "sudo",  # the nodes' sudo for run --sudo/--sudo-user (a root version has its own)
}
# A version from a root brings its own Slurm, munge, sshd and tini; the host still runs
# MariaDB (slurmdbd needs only the client library, which the root has), builds the root
# and enters it, and its users reach the nodes with ssh and pdsh.
ROOT_MODE_PROGRAMS: dict[str, str] = {
    prog: pkg
    for prog, pkg in REQUIRED_PROGRAMS.items()
    if prog in ("mariadbd", "mariadb-install-db", "mariadb", "pdsh", "ssh-keygen")
    or prog in ("unshare", "nsenter", "nft")
} | {"ssh": "openssh-client", "debootstrap": "debootstrap"}
_SEARCH_PATH = os.pathsep.join(
    [os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin"]
)


def find_program(name: str) -> str | None:
    return shutil.which(name, path=_SEARCH_PATH)


def missing_packages(programs: dict[str, str] | None = None) -> list[str]:
    wanted = REQUIRED_PROGRAMS if programs is None else programs
    return sorted({pkg for prog, pkg in wanted.items() if not find_program(prog)})


def require_root() -> None:
    if os.geteuid() != 0:
        raise EnvironmentProblem(
            "the sandbox needs root: it starts Slurm daemons in PID/UTS namespaces and one sshd "
            "per node (run 'sudo slurmkit sandbox up')"
        )


def is_debian_like() -> bool:
    return Path("/etc/debian_version").exists() and find_program("apt-get") is not None


def ensure_installed(programs: dict[str, str] | None = None, progress: bool = True) -> list[str]:
    """Install the packages of missing ``programs`` (default: the host-version set)."""
    missing = missing_packages(programs)
    if not missing:
        return []
    if not is_debian_like():
        raise EnvironmentProblem(
            "the sandbox needs Debian/Ubuntu packages that are missing here: "
            + " ".join(missing)
            + " (on another distribution install the equivalent Slurm 22.05+, munge, "
            "MariaDB, pdsh, OpenSSH server and tini)"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    apt = find_program("apt-get") or "apt-get"
    if progress:
        _proc.echo_command([apt, "install", *missing])
    _checked(_proc.run([apt, "update", "-qq"], timeout=900, env=env), "apt-get update")
    _checked(
        _proc.run(
            [apt, "install", "-y", "-qq", "--no-install-recommends", *missing],
            timeout=1800,
            env=env,
        ),
        "apt-get install " + " ".join(missing),
    )
    still = missing_packages(programs)
    if still:
        raise EnvironmentProblem("still missing after apt-get install: " + " ".join(still))
    return missing


def _checked(result: _proc.Completed, what: str) -> None:
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise EnvironmentProblem(f"{what} failed (exit {result.returncode}): {tail[0]}")
