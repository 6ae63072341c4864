"""Bring the sandbox cluster up, report on it, and take it down again.

``up`` is idempotent (a healthy sandbox is left alone), records every pid it
starts in ``state.json`` as it goes (so a failed ``up`` or a later ``down``
can stop exactly those), and cleans up after itself when a step fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import secrets
import shlex
import shutil
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem, SlurmError, SlurmkitError, UsageError
from slurmkit.files import read_text_bounded, write_atomic
from slurmkit.locks import default_lock_dir, default_lock_path, hold
from slurmkit.sandbox import build, configs, netfault, nodemunge, rootfs, versions
from slurmkit.sandbox.daemons import (
    Daemon,
    children_of,
    is_alive,
    port_open,
    proc_text,
    require_port_free,
    stop_all,
    wait_for,
)
from slurmkit.sandbox.requirements import (
    ROOT_MODE_PROGRAMS,
    ensure_installed,
    find_program,
    require_root,
)
from slurmkit.sandbox.spec import (
    DEFAULT_DIR,
    MARKER,
    DamagedStateFile,
    SandboxSpec,
    read_json_object,
)
from slurmkit.slurm.commands import run_slurm
from slurmkit.trust import check_trusted, private_dir

Progress = Callable[[str], None]
SSH_INCLUDE_MARKER = "# added by 'slurmkit sandbox up'; removed by 'slurmkit sandbox down'"
_OWNED_SUBDIRS = ("etc", "munge", "db", "state", "spool", "log", "run", "gres", "ssh", "bin")
# Slurm's client commands that get a wrapper in <dir>/bin for a version from a root
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
_LOCK_WAIT = 900.0  # a parallel session may be building a root and starting the cluster


def _quiet(_: str) -> None:
    pass


@dataclass
class NodeStatus:
    name: str
    state: str
    # the node's sshd listener itself (not the nsenter that started it): what a test stops
    # with SIGSTOP to wedge the node's ssh; None for a node up did not record
    sshd_pid: int | None = None


@dataclass
class SandboxStatus:
    dir: str
    up: bool
    slurm: str = ""
    root: str = ""
    daemons: list[dict[str, object]] = field(default_factory=list)
    nodes: list[NodeStatus] = field(default_factory=list)
    problem: str = ""
    # network faults in force (``sandbox fault``); None when they could not be read
    faults: list[netfault.ActiveFault] | None = field(default_factory=list)


@dataclass
class UpReport:
    spec: SandboxSpec
    already_up: bool
    seconds: float
    installed: list[str] = field(default_factory=list)
    root_seconds: float = 0.0  # time spent building the version's root (0: cached)


# --------------------------------------------------------------------------- state file
def _load_daemons(spec: SandboxSpec) -> list[Daemon]:
    """The daemons ``up`` recorded; a damaged state.json is one clear error."""
    if not os.path.lexists(spec.state_file):
        return []
    data = read_json_object(spec.state_file)
    entries = data.get("daemons", [])
    bad = f"{spec.state_file} is damaged (%s); stop what it started by hand and remove {spec.dir}"
    if not isinstance(entries, list):
        raise DamagedStateFile(bad % "'daemons' is not a list")
    daemons = []
    for entry in entries:
        if not (
            isinstance(entry, dict)
            and type(entry.get("pid")) is int
            and entry["pid"] > 1
            and isinstance(entry.get("name"), str)
            and isinstance(entry.get("match"), str)
            and entry["match"]
        ):
            raise DamagedStateFile(bad % f"bad entry {json.dumps(entry)[:80]}")
        daemons.append(Daemon.from_json(entry))
    return daemons


def _record(spec: SandboxSpec, daemon: Daemon) -> None:
    daemons = [*_load_daemons(spec), daemon]
    write_atomic(spec.state_file, json.dumps({"daemons": [d.to_json() for d in daemons]}, indent=2))


def _slurm_env(spec: SandboxSpec) -> dict[str, str]:
    env = {"SLURM_CONF": str(spec.slurm_conf)}
    if spec.root or spec.prefix:  # the version's clients are the wrappers in <dir>/bin
        env["PATH"] = f"{spec.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


@contextlib.contextmanager
def _exclusive(directory: Path) -> Iterator[None]:
    """Serialise up/down on one sandbox: parallel test sessions may all try to start it.

    The lock lives in the caller's own lock directory (root: /run/slurmkit), not beside
    the sandbox in /tmp where another user could plant a symlink or hold it.
    """
    key = hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:16]
    with hold(
        default_lock_path(f"sandbox-{key}"), wait=_LOCK_WAIT, what=f"the sandbox in {directory}"
    ):
        yield


def _check_dir(directory: Path) -> None:
    """Refuse a sandbox directory another user owns or can write: root acts on its files."""
    if directory.exists() or directory.is_symlink():
        check_trusted(directory, what="sandbox directory")


# --------------------------------------------------------------------------- up
def up(
    spec: SandboxSpec | None = None,
    *,
    install: bool = True,
    progress: Progress = _quiet,
    slurm_source: str | None = None,
) -> UpReport:
    """Start (or confirm) a sandbox cluster; returns how long it took.

    ``spec.slurm`` picks the version: "" (or the host's own series) runs the host's
    packages; any other offered version runs from its cached Debian root.
    """
    spec = spec or SandboxSpec()
    if spec.slurm:
        versions.offered(spec.slurm)  # one line listing the offered versions otherwise
    require_root()
    started = time.monotonic()
    _check_dir(spec.dir)
    if spec.dir.exists() and any(spec.dir.iterdir()) and not (spec.dir / MARKER).exists():
        raise UsageError(f"{spec.dir} exists and is not a slurmkit sandbox; choose another --dir")
    _refuse_if_another_runs(spec)  # before building a root that could not run anyway
    host = host_series()
    built = bool(spec.slurm) and versions.offered(spec.slurm).from_source  # issue 18
    use_root = bool(spec.slurm) and spec.slurm != host and not built
    installed: list[str] = []
    if install:
        installed = ensure_installed(ROOT_MODE_PROGRAMS if use_root else None)
    root_seconds = 0.0
    if built:  # a version built from source: daemons and clients run from its prefix
        prefix, root_seconds = build.ensure_built(spec.slurm, slurm_source, progress)
        spec = dataclasses.replace(spec, prefix=str(prefix), root="")
    elif use_root:
        root, root_seconds = rootfs.ensure_root(versions.offered(spec.slurm), progress)
        spec = dataclasses.replace(spec, root=str(root))
    else:
        host = host or host_series()
        if not host:
            raise EnvironmentProblem("Slurm is not installed on this host (sinfo not found)")
        spec = dataclasses.replace(spec, slurm=host, root="")
    with _exclusive(spec.dir):
        report = _up_locked(spec, started, installed, progress)
    report.root_seconds = root_seconds
    return report


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
    return versions.series(result.stdout.strip()) if result.returncode == 0 else ""


def _up_locked(
    spec: SandboxSpec, started: float, installed: list[str], progress: Progress
) -> UpReport:
    existing = SandboxSpec.load(spec.dir)
    if existing is not None and status(existing.dir).up:
        theirs = (existing.nodes, existing.port_base, existing.net, existing.slurm,
                  existing.virtual_nodes, existing.profile)  # fmt: skip
        if theirs != (spec.nodes, spec.port_base, spec.net, spec.slurm, spec.virtual_nodes,
                      spec.profile):  # fmt: skip
            raise UsageError(
                f"a Slurm {existing.slurm} sandbox ({existing.nodes} nodes, ports from "
                f"{existing.port_base}, 127.0.{existing.net}.N, profile {existing.profile}) is "
                f"already up in {spec.dir}; run 'slurmkit sandbox down --dir {spec.dir}' first"
            )
        return UpReport(existing, True, time.monotonic() - started, installed)
    _refuse_if_another_runs(spec)
    _prepare_dir(spec)
    if netfault.remove_table(spec.dir):  # a sandbox that died without 'down' left its faults
        progress("removed the network faults a previous sandbox here left behind")
    try:
        _register(spec)
        _start_all(spec, progress)
    except BaseException:
        progress("start failed; stopping what was started")
        _down_locked(spec.dir, progress)
        raise
    return UpReport(spec, False, time.monotonic() - started, installed)


# ------------------------------------------------------- sandboxes side by side
# Two sandboxes may run at once (a test session per Slurm version does) when they share
# nothing: not a port (--port-base), not a node address (--net). `up` records each running
# sandbox here (root-owned) so a second `up` that would collide names the one that runs
# instead of failing on a busy port half-way.
def _registry() -> Path:
    return private_dir(default_lock_dir() / "sandboxes", mode=0o755, what="sandbox registry")


def _registry_entry(directory: Path) -> Path:
    key = hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:16]
    return _registry() / f"{key}.json"


def _register(spec: SandboxSpec) -> None:
    data = {
        "dir": str(spec.dir),
        "slurm": spec.slurm,
        "port_base": spec.port_base,
        "net": spec.net,
    }
    write_atomic(_registry_entry(spec.dir), json.dumps(data) + "\n")


def _unregister(directory: Path) -> None:
    with contextlib.suppress(OSError, EnvironmentProblem):
        _registry_entry(directory).unlink(missing_ok=True)


def collision(spec: SandboxSpec, other: SandboxSpec) -> str:
    """What two sandboxes would share ("" for nothing): ports, or node addresses."""
    ours, theirs = spec.port_range, other.port_range
    if ours.start < theirs.stop and theirs.start < ours.stop:
        return f"ports {theirs.start}-{theirs.stop - 1}"
    if spec.net == other.net:
        return f"node addresses 127.0.{other.net}.1-{other.nodes}"
    return ""


def running_sandboxes() -> list[SandboxSpec]:
    """The sandboxes ``up`` registered whose every recorded daemon is alive."""
    found = []
    for entry in sorted(_registry().glob("*.json")):
        try:
            data = read_json_object(entry)
            other = SandboxSpec.load(Path(str(data.get("dir", ""))))
            daemons = _load_daemons(other) if other is not None else []
        except EnvironmentProblem:
            continue  # a damaged or foreign entry names nothing we can stop anyway
        if other is not None and daemons and all(is_alive(d) for d in daemons):
            found.append(other)
    return found


def _refuse_if_another_runs(spec: SandboxSpec) -> None:
    for other in running_sandboxes():
        shared = "" if other.dir == spec.dir else collision(spec, other)
        if shared:
            raise UsageError(
                f"a Slurm {other.slurm} sandbox is already running in {other.dir} with "
                f"{shared} (choose another --port-base/--net, or stop it with "
                f"'slurmkit sandbox down --dir {other.dir}')"
            )


def _prepare_dir(spec: SandboxSpec) -> None:
    """Refuse to wipe a directory that is not ours; otherwise start from a clean slate."""
    d = spec.dir
    if d.exists() and any(d.iterdir()) and not (d / MARKER).exists():
        raise UsageError(f"{d} exists and is not a slurmkit sandbox; choose another --dir")
    if d.exists():
        _down_locked(d, _quiet)  # a half-dead previous sandbox: stop its leftovers first
    private_dir(d, mode=0o755, what="sandbox directory")
    for sub in _OWNED_SUBDIRS:
        shutil.rmtree(d / sub, ignore_errors=True)
    for name in ("state.json", "spec.json"):
        (d / name).unlink(missing_ok=True)
    for sub in _OWNED_SUBDIRS:
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / MARKER).write_text("created by slurmkit sandbox up\n")
    os.chmod(d, 0o755)
    spec.save()


def _start_all(spec: SandboxSpec, progress: Progress) -> None:
    for port, what in [
        (spec.ctld_port, "slurmctld"),
        (spec.dbd_port, "slurmdbd"),
        (spec.mysql_port, "MariaDB"),
    ]:
        require_port_free("127.0.0.1", port, what)
    where = _Where(spec)
    if spec.root:
        progress(f"entering the Slurm {spec.slurm} root {spec.root}")
        where.world = _start_world(spec)
        _write_wrappers(spec, where)
    elif spec.prefix:  # issue 18: clients of a version built from source
        build.write_wrappers(Path(spec.prefix), spec.slurm, spec.bin_dir, spec.slurm_conf, CLIENTS)
    db_password = secrets.token_hex(12)
    _write_configs(spec, db_password)
    progress("starting munged")
    _start_munge(spec, where)
    progress("starting MariaDB")
    _start_mariadb(spec, db_password)
    progress("starting slurmdbd")
    _start_slurmdbd(spec, where)
    progress("starting slurmctld")
    _start_slurmctld(spec, where)
    progress(f"starting {spec.nodes} nodes (slurmd + sshd in their own namespaces)")
    _start_nodes(spec, where)
    _install_ssh_include(spec)
    _wait_nodes_ready(spec)


# ----------------------------------------------------------------- the version's root
@dataclass
class _Where:
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


def _start_world(spec: SandboxSpec) -> int:
    root = Path(spec.root)
    unshare = find_program("unshare") or "unshare"
    daemon = _spawn(
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

    wait_for(chrooted, 30, f"the Slurm {spec.slurm} root to be mounted", _log_hint(spec, "world"))
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


def _write_wrappers(spec: SandboxSpec, where: _Where) -> None:
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


def _write_configs(spec: SandboxSpec, db_password: str) -> None:
    plugins = str(rootfs.plugin_dir(Path(spec.root))) if spec.root else ""
    spec.slurm_conf.write_text(configs.slurm_conf(spec, plugins))
    # slurm.conf's HealthCheckProgram (slurmkit health while <dir>/health.toml exists)
    write_atomic(configs.health_wrapper_path(spec), configs.health_wrapper(spec), mode=0o755)
    write_atomic(configs.reboot_wrapper_path(spec), configs.reboot_wrapper(spec), mode=0o755)
    spec.path("etc", "gres.conf").write_text(configs.gres_conf(spec))
    cgroup = configs.cgroup_conf(spec)
    if cgroup:
        spec.path("etc", "cgroup.conf").write_text(cgroup)
    dbd = spec.path("etc", "slurmdbd.conf")
    dbd.write_text(configs.slurmdbd_conf(spec, db_password))
    os.chmod(dbd, 0o600)  # slurmdbd refuses a config others can read
    host_hosts = _optional_text(Path("/etc/hosts"), "hosts file")
    spec.path("etc", "hosts").write_text(configs.hosts_file(spec, host_hosts))
    for gpu in configs.gpu_files(spec):
        gpu.touch()
    for name in spec.node_names:
        spec.path("spool", name).mkdir(exist_ok=True)
    _write_ssh_files(spec)


def _write_ssh_files(spec: SandboxSpec) -> None:
    ssh = spec.path("ssh")
    os.chmod(ssh, 0o700)
    keygen = find_program("ssh-keygen") or "ssh-keygen"
    for key, comment in (("host_key", "sandbox-host"), ("id_ed25519", "sandbox-root")):
        _must(
            _proc.run(
                [keygen, "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(ssh / key)]
            ),
            "ssh-keygen",
        )
    shutil.copy(ssh / "id_ed25519.pub", ssh / "authorized_keys")
    host_key = read_text_bounded(ssh / "host_key.pub", what="host key", error=EnvironmentProblem)
    (ssh / "known_hosts").write_text(configs.known_hosts(spec, host_key))
    spec.ssh_config.write_text(configs.ssh_client_config(spec))
    for i, name in enumerate(spec.node_names, start=1):
        (ssh / f"sshd_config-{name}").write_text(configs.sshd_config(spec, i))


def _must(result: _proc.Completed, what: str) -> _proc.Completed:
    """The cause in one line: the first line saying ERROR (MariaDB's last one is a bare
    "[ERROR] Aborting", after the one that says why), else the last line."""
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines() or ["no output"]
        errors = [ln for ln in lines if "ERROR" in ln]
        msg = errors[0] if errors else lines[-1]
        raise EnvironmentProblem(f"{what} failed (exit {result.returncode}): {msg.strip()}")
    return result


def _spawn(
    spec: SandboxSpec,
    name: str,
    argv: list[str],
    match: str,
    extra_env: dict[str, str] | None = None,
) -> Daemon:
    env = {**os.environ, **_slurm_env(spec), **(extra_env or {})}
    proc = _proc.spawn(argv, env=env, log_path=str(spec.path("log", f"{name}.out")))
    daemon = Daemon(name, proc.pid, match)
    _record(spec, daemon)
    return daemon


def _log_hint(spec: SandboxSpec, name: str) -> str:
    return f"see {spec.path('log', name + '.out')}"


def _start_munge(spec: SandboxSpec, where: _Where) -> None:
    munge_dir = spec.path("munge")
    key = munge_dir / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    os.chmod(key, 0o400)
    os.chmod(munge_dir, 0o755)  # jobs of non-root users must reach the socket
    _spawn(
        spec,
        "munged",
        where.argv(
            "munged",
            "--foreground",
            "--force",
            f"--socket={spec.munge_socket}",
            f"--key-file={key}",
            f"--pid-file={munge_dir / 'munged.pid'}",
            f"--seed-file={munge_dir / 'munged.seed'}",
            f"--log-file={spec.path('log', 'munged.log')}",
        ),
        str(spec.munge_socket),
    )
    wait_for(spec.munge_socket.exists, 15, "munged's socket", _log_hint(spec, "munged"))


def _start_mariadb(spec: SandboxSpec, db_password: str) -> None:
    data = spec.path("db", "data")
    # Its own tmpdir: MariaDB names temporary tables after its pid (/tmp/#sql-temptable-1f-..),
    # and sandboxes started at once in PID namespaces of their own (scripts/test) have the same
    # pids: the second install failed with "File exists" in the shared /tmp.
    tmp = spec.path("db", "tmp")
    tmp.mkdir(mode=0o700, exist_ok=True)
    _must(
        _proc.run(
            [
                find_program("mariadb-install-db") or "mariadb-install-db",
                "--no-defaults",
                f"--datadir={data}",
                f"--tmpdir={tmp}",
                "--user=root",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
            ],
            timeout=300,
        ),
        "mariadb-install-db",
    )
    _spawn(
        spec,
        "mariadbd",
        [
            find_program("mariadbd") or "mariadbd",
            "--no-defaults",
            "--user=root",
            f"--datadir={data}",
            f"--tmpdir={tmp}",
            f"--socket={spec.mysql_socket}",
            f"--port={spec.mysql_port}",
            "--bind-address=127.0.0.1",
            "--skip-name-resolve",
            f"--pid-file={spec.path('db', 'mariadbd.pid')}",
            f"--log-error={spec.path('log', 'mariadb.log')}",
            "--innodb-buffer-pool-size=128M",
            "--innodb-lock-wait-timeout=900",
            # MariaDB 11.8 (a trixie host) defaults it ON, which 26.05's slurmdbd says it
            # does not support; 'loose-' keeps older servers, which lack it, starting.
            "--loose-innodb-snapshot-isolation=OFF",
        ],
        str(data),
    )
    wait_for(
        lambda: port_open("127.0.0.1", spec.mysql_port),
        60,
        "MariaDB",
        f"see {spec.path('log', 'mariadb.log')}",
    )
    _must(
        _proc.run(
            [
                find_program("mariadb") or "mariadb",
                "--no-defaults",
                "-S",
                str(spec.mysql_socket),
                "-u",
                "root",
            ],
            input=configs.db_bootstrap_sql(db_password),
        ),
        "creating the accounting database",
    )


def _start_slurmdbd(spec: SandboxSpec, where: _Where) -> None:
    extra = versions.OFFERED[spec.slurm].slurmdbd_env if spec.root else {}
    _spawn(spec, "slurmdbd", where.argv("slurmdbd", "-D"), "slurmdbd", extra)
    wait_for(
        lambda: port_open("127.0.0.1", spec.dbd_port), 60, "slurmdbd", _log_hint(spec, "slurmdbd")
    )
    _sacctmgr(spec, "add", "cluster", spec.cluster_name)


def _sacctmgr(spec: SandboxSpec, *args: str) -> None:
    """sacctmgr may race slurmdbd's first seconds; retry briefly instead of sleeping blindly."""
    deadline = time.monotonic() + 30
    while True:
        try:
            run_slurm(["sacctmgr", "-i", *args], env=_slurm_env(spec), timeout=30)
            return
        except SlurmError as exc:
            if "already exists" in str(exc) or "Nothing new added" in exc.stderr:
                return
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _start_slurmctld(spec: SandboxSpec, where: _Where) -> None:
    _spawn(spec, "slurmctld", where.argv("slurmctld", "-D", "-i"), "slurmctld")

    def answers() -> bool:
        try:
            run_slurm(["scontrol", "ping"], env=_slurm_env(spec), timeout=10)
            return True
        except SlurmError:
            return False

    wait_for(answers, 60, "slurmctld", _log_hint(spec, "slurmctld"))
    _sacctmgr(
        spec,
        "add",
        "account",
        "sandbox",
        f"Cluster={spec.cluster_name}",
        "Description=slurmkit sandbox",
        "Organization=slurmkit",
    )
    _sacctmgr(spec, "add", "user", "root", "Account=sandbox", f"Cluster={spec.cluster_name}")


# The node's PID 1 is tini (it reaps finished steps); hostname and /etc/hosts are
# set inside the node's own UTS and mount namespaces. Names arrive as positional
# parameters, never spliced into the script text.
# slurmd runs under configs.NODE_SUPERVISOR ($5, marker $6) so the RebootProgram can restart it.
_NODE_SCRIPT = (
    'hostname "$1" && mount --bind "$2" /etc/hosts && '
    'exec "$3" -- sh -c "$5" sh "$6" "$4" -D -N "$1"'
)


# sshd refuses to start without its privilege-separation directory, which only the
# openssh-server service unit creates: a machine where sshd never ran as a service has none.
_SSHD_RUNTIME_DIR = Path("/run/sshd")


def _ensure_sshd_runtime_dir() -> None:
    _SSHD_RUNTIME_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    os.chmod(_SSHD_RUNTIME_DIR, 0o755)


def _start_nodes(spec: SandboxSpec, where: _Where) -> None:
    if spec.root:
        (Path(spec.root) / "run" / "sshd").mkdir(mode=0o755, exist_ok=True)
    else:
        _ensure_sshd_runtime_dir()
    hosts = str(spec.path("etc", "hosts"))
    tini = where.program("tini")
    slurmd = where.program("slurmd")
    for name in spec.node_names:
        outer = _spawn(
            spec,
            f"node-ns-{name}",
            where.argv(
                "unshare",
                "--pid",
                "--uts",
                "--mount",
                "--fork",
                "--mount-proc",
                "--propagation",
                "private",
                "sh",
                "-c",
                _NODE_SCRIPT,
                "sh",
                name,
                hosts,
                tini,
                slurmd,
                configs.NODE_SUPERVISOR,
                str(configs.reboot_marker(spec, name)),
            ),
            f" {name} {hosts} ",
        )
        init_pid = _wait_child(outer.pid, f"node {name} to start", "tini")
        _record(spec, Daemon(f"node-{name}", init_pid, f"-N {name}"))
        if versions.munge_per_node(spec.slurm):  # issue 18: 25.11 needs a munged per node
            nodemunge.start(spec, name, init_pid, lambda *a: _spawn(spec, *a))
        # -r: the node's root directory (the version's root, or / on the host)
        config = str(spec.path("ssh", f"sshd_config-{name}"))
        enter = find_program("nsenter") or "nsenter"
        wrapper = _spawn(
            spec,
            f"sshd-ns-{name}",
            [
                enter,
                "-t",
                str(init_pid),
                "-p",
                "-u",
                "-m",
                "-r",
                "-w",
                where.program("sshd"),
                "-D",
                "-e",
                "-f",
                config,
            ],
            f"sshd_config-{name}",
        )
        # nsenter -p forks: record the sshd itself, the process that answers on the port
        sshd_pid = _wait_child(wrapper.pid, f"sshd on {name} to start", f"sshd_config-{name}")
        _record(spec, Daemon(f"sshd-{name}", sshd_pid, f"sshd_config-{name}"))


def _wait_child(pid: int, what: str, match: str) -> int:
    """The host pid of ``pid``'s only child once it runs ``match`` (a namespace's first process)."""
    found: list[int] = []

    def ready() -> bool:
        kids = children_of(pid)
        if kids and is_alive(Daemon(what, kids[0], match)):
            found.append(kids[0])
            return True
        return False

    wait_for(ready, 15, what)
    return found[0]


def _node_states(spec: SandboxSpec) -> dict[str, str]:
    """Node name -> sinfo state word, in one call (sinfo -N lists a node once per partition)."""
    out = run_slurm(["sinfo", "-h", "-N", "-o", "%N %T"], env=_slurm_env(spec), timeout=10).stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


def _wait_nodes_ready(spec: SandboxSpec) -> None:
    def all_idle() -> bool:
        try:
            states = _node_states(spec)
        except SlurmError:
            return False
        return all(states.get(n, "").rstrip("*") == "idle" for n in spec.node_names)

    wait_for(all_idle, 90, "all nodes to be idle", _log_hint(spec, "slurmctld"))
    wait_for(
        lambda: all(port_open(spec.node_addr(i), spec.ssh_port) for i in range(1, spec.nodes + 1)),
        30,
        "every node's sshd",
    )


def _ssh_user_config() -> Path:
    return Path.home() / ".ssh" / "config"


def _optional_text(path: Path, what: str) -> str:
    """The text of a file the host may not have ("" then); a FIFO or a device is an error."""
    try:
        return read_text_bounded(path, what=what, follow_links=True, error=EnvironmentProblem)
    except FileNotFoundError:
        return ""


def _install_ssh_include(spec: SandboxSpec) -> None:
    """Make plain ``ssh node-2`` (and pdsh, and paramiko) reach the sandbox nodes."""
    cfg = _ssh_user_config()
    cfg.parent.mkdir(mode=0o700, exist_ok=True)
    include = f"Include {spec.ssh_config}"
    current = _optional_text(cfg, "ssh config")
    if include in current.splitlines():
        return
    # At the top: an Include after a Host block would only apply inside that block.
    cfg.write_text(f"{SSH_INCLUDE_MARKER}\n{include}\n{current}")
    os.chmod(cfg, 0o600)


def _remove_ssh_include(spec: SandboxSpec) -> None:
    """Remove this sandbox's Include and the marker just above it, and nothing else.

    Another sandbox (other --dir) has the same marker line; it must keep its own.
    """
    cfg = _ssh_user_config()
    text = _optional_text(cfg, "ssh config")
    if not text:
        return
    include = f"Include {spec.ssh_config}"
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    for line in lines:
        if line.rstrip("\n") == include:
            if kept and kept[-1].rstrip("\n") == SSH_INCLUDE_MARKER:
                kept.pop()
            continue
        kept.append(line)
    if kept != lines:
        cfg.write_text("".join(kept))


# --------------------------------------------------------------------------- down
def down(directory: Path | str = DEFAULT_DIR, *, progress: Progress = _quiet) -> list[str]:
    """Stop exactly the daemons ``up`` recorded; return the names stopped.

    Only in a directory the caller owns and nobody else can write: the pids in
    another user's state.json are never signalled.
    """
    directory = Path(directory)
    if not directory.exists() and not directory.is_symlink():
        return []
    _check_dir(directory)
    with _exclusive(directory):
        return _down_locked(directory, progress)


def _down_locked(directory: Path, progress: Progress) -> list[str]:
    spec = SandboxSpec.load(Path(directory))
    if spec is None:
        return []
    daemons = _load_daemons(spec)
    # Nodes first (a node's PID 1 takes slurmd, sshd and every job process with it),
    # then the controller (it saves state and reports to slurmdbd), then the rest, and
    # last the world holding a version's root (its mounts vanish with it).
    nodes = ("node-", "sshd-")
    phases = [
        [d for d in daemons if d.name.startswith(nodes)],
        [d for d in daemons if d.name == "slurmctld"],
        [
            d
            for d in daemons
            if not d.name.startswith(nodes) and d.name not in ("slurmctld", "world")
        ],
        [d for d in daemons if d.name == "world"],
    ]
    stopped = []
    for phase in phases:
        for daemon in stop_all(phase):
            progress(f"stopped {daemon.name} (pid {daemon.pid})")
            stopped.append(daemon.name)
    try:
        if netfault.remove_table(spec.dir):
            progress(f"removed the network faults (nft table {netfault.table_name(spec.dir)})")
    except EnvironmentProblem as exc:  # the daemons are stopped; say so and finish the rest
        progress(f"could not remove the network faults: {exc}")
    spec.state_file.unlink(missing_ok=True)
    shutil.rmtree(spec.bin_dir, ignore_errors=True)  # wrappers that would enter a dead world
    _remove_ssh_include(spec)
    _unregister(spec.dir)
    return stopped


# --------------------------------------------------------------------------- status
def status(directory: Path | str = DEFAULT_DIR) -> SandboxStatus:
    spec = SandboxSpec.load(Path(directory))
    if spec is None:
        return SandboxStatus(str(directory), False, problem="no sandbox here")
    daemons = _load_daemons(spec)
    report = SandboxStatus(
        str(spec.dir),
        False,
        spec.slurm,
        spec.root,
        [{"name": d.name, "pid": d.pid, "alive": is_alive(d)} for d in daemons],
    )
    dead = [d["name"] for d in report.daemons if not d["alive"]]
    if not daemons:
        report.problem = "not running"
        return report
    if dead:
        report.problem = "not running: " + ", ".join(map(str, dead))
        return report
    try:
        seen = _node_states(spec)
    except SlurmError as exc:
        report.problem = str(exc)
        return report
    sshd = {d.name.removeprefix("sshd-"): d.pid for d in daemons if d.name.startswith("sshd-node-")}
    report.nodes = [
        NodeStatus(n, s, sshd.get(n))
        for n, s in sorted(seen.items(), key=lambda kv: int(kv[0].split("-")[-1]))
    ]
    report.up = True
    try:
        report.faults = netfault.active(spec)
    except EnvironmentProblem:
        report.faults = None  # no nft, or not allowed to read the rules (not root)
    return report


# --------------------------------------------------------------------------- fault
def fault(
    directory: Path | str, node: str, action: str, rate: str = ""
) -> list[netfault.ActiveFault]:
    """Put a network fault on one node of a running sandbox, or clear it.

    ``action`` is ``net-down``, ``net-slow`` (``rate``: what the node's data traffic
    is policed to) or ``clear``. Returns the fault put in place, or those cleared.
    Refused (exit 2) when the sandbox is not up or ``node`` is not one of its nodes:
    a fault on nothing would make a test pass for the wrong reason.
    """
    if action not in (*netfault.FAULTS, "clear"):
        raise UsageError(f"unknown fault {action!r}: one of {', '.join(netfault.FAULTS)}, clear")
    if rate and action != "net-slow":
        raise UsageError("--rate goes with net-slow only")
    spec = SandboxSpec.load(Path(directory))
    if spec is None:
        raise UsageError(f"no sandbox in {directory}: run 'slurmkit sandbox up' first")
    netfault.node_index(spec, node)
    require_root()  # nft needs CAP_NET_ADMIN; said plainly before nft says it obscurely
    state = status(spec.dir)
    if not state.up:
        raise UsageError(f"the sandbox in {spec.dir} is not up ({state.problem})")
    if action == "clear":
        return netfault.clear(spec, node)
    return [netfault.set_fault(spec, node, action, rate)]


def env_lines(directory: Path | str = DEFAULT_DIR) -> list[str]:
    """The ``export`` lines a shell needs to use the sandbox with Slurm's own commands."""
    spec = SandboxSpec.load(Path(directory))
    if spec is None:
        raise UsageError(f"no sandbox in {directory}: run 'slurmkit sandbox up' first")
    lines = [f"export SLURM_CONF={shlex.quote(str(spec.slurm_conf))}"]
    if spec.root or spec.prefix:
        lines.append(f'export PATH={shlex.quote(str(spec.bin_dir))}:"$PATH"')
    return lines
