"""A Slurm version from its cached Debian root: the world process and the client wrappers.

One long-lived "world" process holds a private mount namespace in which the root sees
the host's /proc, /sys, /dev, accounts and every non-OS top-level directory, and is
chrooted there. Every daemon of that version starts inside it with ``nsenter``
(:class:`Where` says how); the host's shell reaches its clients through the wrappers
in ``<dir>/bin``. The mounts exist only in that namespace: nothing is left on the host.
"""

from __future__ import annotations

import os
import shlex
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from slurmkit.errors import EnvironmentProblem, SlurmkitError
from slurmkit.files import write_atomic
from slurmkit.sandbox import build, rootfs
from slurmkit.sandbox.daemons import log_hint, proc_text, spawn, wait_for
from slurmkit.sandbox.requirements import find_program
from slurmkit.sandbox.spec import SandboxSpec

# Slurm's client commands that get a wrapper in <dir>/bin (a version from a root or a prefix)
CLIENTS = (
    "sacct",
    "sacctmgr",
    "salloc",
    "sattach",
    "sbatch",
    "sbcast",
    "scancel",
    "scontrol",
    "scrontab",
    "sdiag",
    "sinfo",
    "sprio",
    "squeue",
    "sreport",
    "srun",
    "sshare",
    "sstat",
    "strigger",
)


@dataclass
class Where:
    """Where the daemons' programs run: the host, or the world process holding the root."""

    spec: SandboxSpec
    world: int | None = None

    def program(self, name: str) -> str:
        if self.spec.prefix:  # issue 18: the build's daemons, the host's munged/sshd/tini
            return build.program(Path(self.spec.prefix), name) or find_program(name) or name
        if not self.spec.root:
            return find_program(name) or name
        root = Path(self.spec.root)
        for d in ("usr/sbin", "usr/bin", "sbin", "bin"):
            if (root / d / name).exists():
                return f"/{d}/{name}"
        raise EnvironmentProblem(f"{name} is missing from the Slurm {self.spec.slurm} root {root}")

    def argv(self, name: str, *args: str) -> list[str]:
        """``name ARGS`` run where the version lives (entering the root's world if needed)."""
        if self.world is None:
            return [self.program(name), *args]
        return [*_enter(self.world), self.program(name), *args]


def _enter(world: int) -> list[str]:
    """nsenter into the world's mount namespace and root directory (and its root as cwd)."""
    return [find_program("nsenter") or "nsenter", "-t", str(world), "-m", "-r", "-w"]


# Top-level host directories that belong to the OS: the root has its own. Every other
# one (/tmp, /root, /home, /work, /opt, /srv, a CI checkout's folder...) is bound into
# the root so jobs find the same files, the host venv's python and slurmkit included.
_OS_DIRS = frozenset(
    [
        "bin",
        "boot",
        "dev",
        "etc",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "lost+found",
        "proc",
        "run",
        "sbin",
        "sys",
        "usr",
        "var",
    ]
)

# The world: a private mount namespace where the root gets the host's /proc, /sys,
# /dev, accounts and non-OS directories, then a chroot that only sleeps. Every daemon
# and client of this version enters it with nsenter; the mounts vanish when the last
# process in it ends, so nothing is ever mounted (or left mounted) on the host.
# Paths arrive as positional parameters, never spliced into the script.
_WORLD_SCRIPT = """set -e
root="$1"; name="$2"; shift 2
# the root must be a mount point of its own: the nodes' unshare --propagation needs one
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
for f in /etc/passwd /etc/group /etc/shadow /etc/hosts; do
  [ -e "$root$f" ] || : > "$root$f"
  mount --bind "$f" "$root$f"
done
for p in "$@"; do
  if [ -d "$p" ]; then mkdir -p "$root$p"
  else mkdir -p "$root$(dirname "$p")"; [ -e "$root$p" ] || : > "$root$p"; fi
  mount --rbind "$p" "$root$p"
done
exec chroot "$root" /bin/bash -c 'exec -a "$0" sleep infinity' "$name"
"""


def host_binds(root: Path) -> list[str]:
    """Host paths the world binds into ``root`` at the same place."""
    binds = [
        str(p)
        for p in sorted(Path("/").iterdir())
        if p.name not in _OS_DIRS and p.is_dir() and not p.is_symlink()
    ]
    binds.append("/var/tmp")
    # A venv made from an OS python (/usr/bin/python3.11) needs that interpreter and its
    # standard library in the root too; bind them where the root has nothing there.
    paths = sysconfig.get_paths()
    for path in (os.path.realpath(sys.executable), paths["stdlib"], paths["platstdlib"]):
        top = Path(path).parts[1] if len(Path(path).parts) > 1 else ""
        missing = not os.path.lexists(root / path.lstrip("/"))
        if top in _OS_DIRS and missing and path not in binds and os.path.exists(path):
            binds.append(path)
    return binds


def _world_name(spec: SandboxSpec) -> str:
    return f"slurmkit-world:{spec.dir}"


def start_world(spec: SandboxSpec) -> int:
    root = Path(spec.root)
    unshare = find_program("unshare") or "unshare"
    daemon = spawn(
        spec,
        "world",
        [
            unshare,
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            _WORLD_SCRIPT,
            "sh",
            str(root),
            _world_name(spec),
            *host_binds(root),
        ],
        _world_name(spec),
    )

    def chrooted() -> bool:
        try:
            argv0 = proc_text(Path(f"/proc/{daemon.pid}/cmdline")).split("\0")[0]
        except (OSError, SlurmkitError):
            return False
        return argv0 == _world_name(spec)

    wait_for(chrooted, 30, f"the Slurm {spec.slurm} root to be mounted", log_hint(spec, "world"))
    return daemon.pid


# A wrapper per client: inside the root (a job on a node) it is the real command. On the
# host, root enters the world, goes to the caller's directory and runs the version's
# client with the caller's environment (/proc/<world>/root/<marker> proves the pid is
# still ours). Anyone else may not enter it: they run the same client through the
# root's own loader and libraries (slurm.conf's PluginDir names the version's plugins).
_WRAPPER = """#!/bin/sh
# Slurm {version}'s {name} from {root} (written by 'slurmkit sandbox up'; removed by 'down')
if [ -e /{marker} ]; then exec {program} "$@"; fi
if [ -z "${{SLURM_CONF:-}}" ]; then SLURM_CONF={conf}; fi
export SLURM_CONF
if [ "$(id -u)" != 0 ]; then
  exec {loader} --library-path {libs} {direct} "$@"
fi
if [ ! -e /proc/{world}/root/{marker} ]; then
  echo "{name}: the Slurm {version} sandbox in {dir} is not running (slurmkit sandbox up)" >&2
  exit 2
fi
exec {enter} /bin/sh -c 'cd -- "$1" 2>/dev/null || cd /; shift; exec "$@"' sh "$PWD" {program} "$@"
"""


def write_wrappers(spec: SandboxSpec, where: Where) -> None:
    assert where.world is not None
    enter = shlex.join(_enter(where.world))
    root = Path(spec.root)
    loader, libs = rootfs.direct_runtime(root)
    for name in CLIENTS:
        if not (root / "usr" / "bin" / name).exists():
            continue
        text = _WRAPPER.format(
            version=spec.slurm,
            name=name,
            root=root,
            marker=rootfs.ROOT_MARKER,
            program=shlex.quote(f"/usr/bin/{name}"),
            world=where.world,
            dir=spec.dir,
            conf=shlex.quote(str(spec.slurm_conf)),
            enter=enter,
            loader=shlex.quote(str(loader)),
            libs=shlex.quote(libs),
            direct=shlex.quote(str(root / "usr" / "bin" / name)),
        )
        write_atomic(spec.bin_dir / name, text, mode=0o755)
