"""Bring the sandbox cluster up, report on it, and take it down again.

``up`` is idempotent (a healthy sandbox is left alone), records every pid it
starts in ``state.json`` as it goes (so a failed ``up`` or a later ``down``
can stop exactly those), and cleans up after itself when a step fails.
The steps live beside it: :mod:`.starters` (the daemons), :mod:`.world` (a
version's root), :mod:`.registry` (sandboxes side by side), :mod:`.sshconfig`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import shlex
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem, SlurmError, UsageError
from slurmkit.files import read_text_bounded, write_atomic
from slurmkit.locks import default_lock_path, hold
from slurmkit.sandbox import build, configs, netfault, rootfs, versions
from slurmkit.sandbox.daemons import is_alive, load_daemons, must, require_port_free, stop_all
from slurmkit.sandbox.registry import dir_key, refuse_if_another_runs, register, unregister
from slurmkit.sandbox.requirements import (
    ROOT_MODE_PROGRAMS,
    ensure_installed,
    find_program,
    require_root,
)
from slurmkit.sandbox.spec import DEFAULT_DIR, MARKER, SandboxSpec, optional_text
from slurmkit.sandbox.sshconfig import install_include, remove_include
from slurmkit.sandbox.starters import (
    node_states,
    start_mariadb,
    start_munge,
    start_nodes,
    start_slurmctld,
    start_slurmdbd,
    wait_nodes_ready,
)
from slurmkit.sandbox.versions import host_series
from slurmkit.sandbox.world import CLIENTS, Where, start_world, write_wrappers
from slurmkit.trust import check_trusted, private_dir

Progress = Callable[[str], None]
_OWNED_SUBDIRS = ("etc", "munge", "db", "state", "spool", "log", "run", "gres", "ssh", "bin")
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


@contextlib.contextmanager
def _exclusive(directory: Path) -> Iterator[None]:
    """Serialise up/down on one sandbox: parallel test sessions may all try to start it.

    The lock lives in the caller's own lock directory (root: /run/slurmkit), not beside
    the sandbox in /tmp where another user could plant a symlink or hold it.
    """
    with hold(
        default_lock_path(f"sandbox-{dir_key(directory)}"),
        wait=_LOCK_WAIT,
        what=f"the sandbox in {directory}",
    ):
        yield


def _check_dir(directory: Path) -> None:
    """Refuse a sandbox directory another user owns or can write: root acts on its files."""
    if directory.exists() or directory.is_symlink():
        check_trusted(directory, what="sandbox directory")


def _refuse_foreign(directory: Path) -> None:
    """A directory with files and without our marker is someone's data: never wiped."""
    if directory.exists() and any(directory.iterdir()) and not (directory / MARKER).exists():
        raise UsageError(f"{directory} exists and is not a slurmkit sandbox; choose another --dir")


def _existing(directory: Path | str) -> SandboxSpec:
    """The sandbox ``up`` made in ``directory``; none is a usage error."""
    spec = SandboxSpec.load(Path(directory))
    if spec is None:
        raise UsageError(f"no sandbox in {directory}: run 'slurmkit sandbox up' first")
    return spec


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
    _refuse_foreign(spec.dir)
    refuse_if_another_runs(spec)  # before building a root that could not run anyway
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
    refuse_if_another_runs(spec)
    _prepare_dir(spec)
    if netfault.remove_table(spec.dir):  # a sandbox that died without 'down' left its faults
        progress("removed the network faults a previous sandbox here left behind")
    try:
        register(spec)
        _start_all(spec, progress)
    except BaseException:
        progress("start failed; stopping what was started")
        _down_locked(spec.dir, progress)
        raise
    return UpReport(spec, False, time.monotonic() - started, installed)


def _prepare_dir(spec: SandboxSpec) -> None:
    """Refuse to wipe a directory that is not ours; otherwise start from a clean slate."""
    d = spec.dir
    _refuse_foreign(d)
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
    where = Where(spec)
    if spec.root:
        progress(f"entering the Slurm {spec.slurm} root {spec.root}")
        where.world = start_world(spec)
        write_wrappers(spec, where)
    elif spec.prefix:  # issue 18: clients of a version built from source
        build.write_wrappers(Path(spec.prefix), spec.slurm, spec.bin_dir, spec.slurm_conf, CLIENTS)
    db_password = secrets.token_hex(12)
    _write_configs(spec, db_password)
    progress("starting munged")
    start_munge(spec, where)
    progress("starting MariaDB")
    start_mariadb(spec, db_password)
    progress("starting slurmdbd")
    start_slurmdbd(spec, where)
    progress("starting slurmctld")
    start_slurmctld(spec, where)
    progress(f"starting {spec.nodes} nodes (slurmd + sshd in their own namespaces)")
    start_nodes(spec, where)
    install_include(spec)
    wait_nodes_ready(spec)


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
    host_hosts = optional_text(Path("/etc/hosts"), "hosts file")
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
        must(
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
    daemons = load_daemons(spec)
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
    remove_include(spec)
    unregister(spec.dir)
    return stopped


# --------------------------------------------------------------------------- status
def status(directory: Path | str = DEFAULT_DIR) -> SandboxStatus:
    spec = SandboxSpec.load(Path(directory))
    if spec is None:
        return SandboxStatus(str(directory), False, problem="no sandbox here")
    daemons = load_daemons(spec)
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
        seen = node_states(spec)
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
    spec = _existing(directory)
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
    spec = _existing(directory)
    lines = [f"export SLURM_CONF={shlex.quote(str(spec.slurm_conf))}"]
    if spec.root or spec.prefix:
        lines.append(f'export PATH={shlex.quote(str(spec.bin_dir))}:"$PATH"')
    return lines
