"""Bring the sandbox cluster up, report on it, and take it down again.

``up`` is idempotent (a healthy sandbox is left alone), records every pid it
starts in ``state.json`` as it goes (so a failed ``up`` or a later ``down``
can stop exactly those), and cleans up after itself when a step fails.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem, SlurmError, UsageError
from slurmkit.sandbox import configs
from slurmkit.sandbox.daemons import (
    Daemon,
    children_of,
    is_alive,
    port_open,
    require_port_free,
    stop_all,
    wait_for,
)
from slurmkit.sandbox.requirements import ensure_installed, find_program, require_root
from slurmkit.sandbox.spec import DEFAULT_DIR, MARKER, SandboxSpec
from slurmkit.slurm._exec import run_slurm

Progress = Callable[[str], None]
SSH_INCLUDE_MARKER = "# added by 'slurmkit sandbox up'; removed by 'slurmkit sandbox down'"
_OWNED_SUBDIRS = ("etc", "munge", "db", "state", "spool", "log", "run", "gres", "ssh")


def _quiet(_: str) -> None:
    pass


@dataclass
class NodeStatus:
    name: str
    state: str


@dataclass
class SandboxStatus:
    dir: str
    up: bool
    daemons: list[dict[str, object]] = field(default_factory=list)
    nodes: list[NodeStatus] = field(default_factory=list)
    problem: str = ""


@dataclass
class UpReport:
    spec: SandboxSpec
    already_up: bool
    seconds: float
    installed: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- state file
def _load_daemons(spec: SandboxSpec) -> list[Daemon]:
    if not spec.state_file.exists():
        return []
    data = json.loads(spec.state_file.read_text())
    return [Daemon.from_json(d) for d in data.get("daemons", [])]


def _record(spec: SandboxSpec, daemon: Daemon) -> None:
    daemons = [*_load_daemons(spec), daemon]
    tmp = spec.state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps({"daemons": [d.to_json() for d in daemons]}, indent=2))
    tmp.replace(spec.state_file)


def _slurm_env(spec: SandboxSpec) -> dict[str, str]:
    return {"SLURM_CONF": str(spec.slurm_conf)}


@contextlib.contextmanager
def _exclusive(directory: Path):
    """Serialise up/down on one sandbox: parallel test sessions may all try to start it."""
    lock_path = Path(f"{Path(directory).resolve()}.lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --------------------------------------------------------------------------- up
def up(
    spec: SandboxSpec | None = None, *, install: bool = True, progress: Progress = _quiet
) -> UpReport:
    """Start (or confirm) a sandbox cluster; returns how long it took."""
    spec = spec or SandboxSpec()
    require_root()
    started = time.monotonic()
    installed = ensure_installed() if install else []
    with _exclusive(spec.dir):
        return _up_locked(spec, started, installed, progress)


def _up_locked(
    spec: SandboxSpec, started: float, installed: list[str], progress: Progress
) -> UpReport:
    existing = SandboxSpec.load(spec.dir)
    if existing is not None and status(existing.dir).up:
        if (existing.nodes, existing.port_base) != (spec.nodes, spec.port_base):
            raise UsageError(
                f"a sandbox with {existing.nodes} nodes is already up in {spec.dir}; "
                "run 'slurmkit sandbox down' first"
            )
        return UpReport(existing, True, time.monotonic() - started, installed)
    _prepare_dir(spec)
    try:
        _start_all(spec, progress)
    except BaseException:
        progress("start failed; stopping what was started")
        _down_locked(spec.dir, progress)
        raise
    return UpReport(spec, False, time.monotonic() - started, installed)


def _prepare_dir(spec: SandboxSpec) -> None:
    """Refuse to wipe a directory that is not ours; otherwise start from a clean slate."""
    d = spec.dir
    if d.exists() and any(d.iterdir()) and not (d / MARKER).exists():
        raise UsageError(f"{d} exists and is not a slurmkit sandbox; choose another --dir")
    if d.exists():
        _down_locked(d, _quiet)  # a half-dead previous sandbox: stop its leftovers first
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
    db_password = secrets.token_hex(12)
    _write_configs(spec, db_password)
    progress("starting munged")
    _start_munge(spec)
    progress("starting MariaDB")
    _start_mariadb(spec, db_password)
    progress("starting slurmdbd")
    _start_slurmdbd(spec)
    progress("starting slurmctld")
    _start_slurmctld(spec)
    progress(f"starting {spec.nodes} nodes (slurmd + sshd in their own namespaces)")
    _start_nodes(spec)
    _install_ssh_include(spec)
    _wait_nodes_ready(spec)


def _write_configs(spec: SandboxSpec, db_password: str) -> None:
    spec.slurm_conf.write_text(configs.slurm_conf(spec))
    spec.path("etc", "gres.conf").write_text(configs.gres_conf(spec))
    dbd = spec.path("etc", "slurmdbd.conf")
    dbd.write_text(configs.slurmdbd_conf(spec, db_password))
    os.chmod(dbd, 0o600)  # slurmdbd refuses a config others can read
    host_hosts = Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else ""
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
    (ssh / "known_hosts").write_text(configs.known_hosts(spec, (ssh / "host_key.pub").read_text()))
    spec.ssh_config.write_text(configs.ssh_client_config(spec))
    for i, name in enumerate(spec.node_names, start=1):
        (ssh / f"sshd_config-{name}").write_text(configs.sshd_config(spec, i))


def _must(result: _proc.Completed, what: str) -> _proc.Completed:
    if result.returncode != 0:
        msg = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise EnvironmentProblem(f"{what} failed (exit {result.returncode}): {msg[0]}")
    return result


def _spawn(spec: SandboxSpec, name: str, argv: list[str], match: str) -> Daemon:
    proc = _proc.spawn(
        argv, env={**os.environ, **_slurm_env(spec)}, log_path=str(spec.path("log", f"{name}.out"))
    )
    daemon = Daemon(name, proc.pid, match)
    _record(spec, daemon)
    return daemon


def _log_hint(spec: SandboxSpec, name: str) -> str:
    return f"see {spec.path('log', name + '.out')}"


def _start_munge(spec: SandboxSpec) -> None:
    munge_dir = spec.path("munge")
    key = munge_dir / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    os.chmod(key, 0o400)
    os.chmod(munge_dir, 0o755)  # jobs of non-root users must reach the socket
    _spawn(
        spec,
        "munged",
        [
            find_program("munged") or "munged",
            "--foreground",
            "--force",
            f"--socket={spec.munge_socket}",
            f"--key-file={key}",
            f"--pid-file={munge_dir / 'munged.pid'}",
            f"--seed-file={munge_dir / 'munged.seed'}",
            f"--log-file={spec.path('log', 'munged.log')}",
        ],
        str(spec.munge_socket),
    )
    wait_for(spec.munge_socket.exists, 15, "munged's socket", _log_hint(spec, "munged"))


def _start_mariadb(spec: SandboxSpec, db_password: str) -> None:
    data = spec.path("db", "data")
    _must(
        _proc.run(
            [
                find_program("mariadb-install-db") or "mariadb-install-db",
                "--no-defaults",
                f"--datadir={data}",
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
            f"--socket={spec.mysql_socket}",
            f"--port={spec.mysql_port}",
            "--bind-address=127.0.0.1",
            "--skip-name-resolve",
            f"--pid-file={spec.path('db', 'mariadbd.pid')}",
            f"--log-error={spec.path('log', 'mariadb.log')}",
            "--innodb-buffer-pool-size=128M",
            "--innodb-lock-wait-timeout=900",
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


def _start_slurmdbd(spec: SandboxSpec) -> None:
    _spawn(spec, "slurmdbd", [find_program("slurmdbd") or "slurmdbd", "-D"], "slurmdbd")
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


def _start_slurmctld(spec: SandboxSpec) -> None:
    _spawn(spec, "slurmctld", [find_program("slurmctld") or "slurmctld", "-D", "-i"], "slurmctld")

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
_NODE_SCRIPT = 'hostname "$1" && mount --bind "$2" /etc/hosts && exec "$3" -- "$4" -D -N "$1"'


# sshd refuses to start without its privilege-separation directory, which only the
# openssh-server service unit creates: a machine where sshd never ran as a service has none.
_SSHD_RUNTIME_DIR = Path("/run/sshd")


def _ensure_sshd_runtime_dir() -> None:
    _SSHD_RUNTIME_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    os.chmod(_SSHD_RUNTIME_DIR, 0o755)


def _start_nodes(spec: SandboxSpec) -> None:
    _ensure_sshd_runtime_dir()
    hosts = str(spec.path("etc", "hosts"))
    tini = find_program("tini") or "tini"
    slurmd = find_program("slurmd") or "slurmd"
    for name in spec.node_names:
        outer = _spawn(
            spec,
            f"node-ns-{name}",
            [
                find_program("unshare") or "unshare",
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
            ],
            f" {name} {hosts} ",
        )
        init_pid = _wait_child(outer.pid, name)
        _record(spec, Daemon(f"node-{name}", init_pid, f"-N {name}"))
        _spawn(
            spec,
            f"sshd-{name}",
            [
                find_program("nsenter") or "nsenter",
                "-t",
                str(init_pid),
                "-p",
                "-u",
                "-m",
                find_program("sshd") or "/usr/sbin/sshd",
                "-D",
                "-e",
                "-f",
                str(spec.path("ssh", f"sshd_config-{name}")),
            ],
            f"sshd_config-{name}",
        )


def _wait_child(pid: int, name: str) -> int:
    """The host pid of a node namespace's PID 1 (unshare's only child) once it has exec'd tini."""
    found: list[int] = []

    def ready() -> bool:
        kids = children_of(pid)
        if kids and is_alive(Daemon(name, kids[0], "tini")):
            found.append(kids[0])
            return True
        return False

    wait_for(ready, 15, f"node {name} to start")
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


def _install_ssh_include(spec: SandboxSpec) -> None:
    """Make plain ``ssh node-2`` (and pdsh, and paramiko) reach the sandbox nodes."""
    cfg = _ssh_user_config()
    cfg.parent.mkdir(mode=0o700, exist_ok=True)
    include = f"Include {spec.ssh_config}"
    current = cfg.read_text() if cfg.exists() else ""
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
    if not cfg.exists():
        return
    include = f"Include {spec.ssh_config}"
    lines = cfg.read_text().splitlines(keepends=True)
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
    """Stop exactly the daemons ``up`` recorded; return the names stopped."""
    if not Path(directory).exists():
        return []
    with _exclusive(Path(directory)):
        return _down_locked(Path(directory), progress)


def _down_locked(directory: Path, progress: Progress) -> list[str]:
    spec = SandboxSpec.load(Path(directory))
    if spec is None:
        return []
    daemons = _load_daemons(spec)
    # Nodes first (a node's PID 1 takes slurmd, sshd and every job process with it),
    # then the controller (it saves state and reports to slurmdbd), then the rest.
    phases = [
        [d for d in daemons if d.name.startswith(("node-", "sshd-"))],
        [d for d in daemons if d.name == "slurmctld"],
        [d for d in daemons if not d.name.startswith(("node-", "sshd-")) and d.name != "slurmctld"],
    ]
    stopped = []
    for phase in phases:
        for daemon in stop_all(phase):
            progress(f"stopped {daemon.name} (pid {daemon.pid})")
            stopped.append(daemon.name)
    spec.state_file.unlink(missing_ok=True)
    _remove_ssh_include(spec)
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
    report.nodes = [
        NodeStatus(n, s) for n, s in sorted(seen.items(), key=lambda kv: int(kv[0].split("-")[-1]))
    ]
    report.up = True
    return report


def env_lines(directory: Path | str = DEFAULT_DIR) -> list[str]:
    """The ``export`` lines a shell needs to use the sandbox with Slurm's own commands."""
    spec = SandboxSpec.load(Path(directory))
    if spec is None:
        raise UsageError(f"no sandbox in {directory}: run 'slurmkit sandbox up' first")
    return [f"export SLURM_CONF={spec.slurm_conf}"]
