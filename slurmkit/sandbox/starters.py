"""Start the sandbox's daemons, each waited for until it answers: munged, MariaDB,
slurmdbd, slurmctld, and the nodes (slurmd and sshd in namespaces of their own).

Every daemon is started with :func:`slurmkit.sandbox.daemons.spawn`, which records
it in state.json before anything waits on it, so ``down`` can stop it whatever fails next.
"""

from __future__ import annotations

import os
import pwd
import secrets
import time
from pathlib import Path

from slurmkit import _proc
from slurmkit.errors import SlurmError
from slurmkit.sandbox import configs, nodemunge, versions
from slurmkit.sandbox.daemons import (
    Daemon,
    children_of,
    is_alive,
    log_hint,
    must,
    port_open,
    record,
    slurm_env,
    spawn,
    wait_for,
)
from slurmkit.sandbox.requirements import find_program
from slurmkit.sandbox.spec import SandboxSpec
from slurmkit.sandbox.world import Where
from slurmkit.slurm.commands import run_slurm


def start_munge(spec: SandboxSpec, where: Where) -> None:
    munge_dir = spec.path("munge")
    key = munge_dir / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    os.chmod(key, 0o400)
    os.chmod(munge_dir, 0o755)  # jobs of non-root users must reach the socket
    spawn(
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
    wait_for(spec.munge_socket.exists, 15, "munged's socket", log_hint(spec, "munged"))


def start_mariadb(spec: SandboxSpec, db_password: str) -> None:
    data = spec.path("db", "data")
    # Its own tmpdir: MariaDB names temporary tables after its pid (/tmp/#sql-temptable-1f-..),
    # and sandboxes started at once in PID namespaces of their own (scripts/test) have the same
    # pids: the second install failed with "File exists" in the shared /tmp.
    tmp = spec.path("db", "tmp")
    tmp.mkdir(mode=0o700, exist_ok=True)
    must(
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
    spawn(
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
    must(
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


def start_slurmdbd(spec: SandboxSpec, where: Where) -> None:
    extra = versions.OFFERED[spec.slurm].slurmdbd_env if spec.root else {}
    spawn(spec, "slurmdbd", where.argv("slurmdbd", "-D"), "slurmdbd", extra)
    wait_for(
        lambda: port_open("127.0.0.1", spec.dbd_port), 60, "slurmdbd", log_hint(spec, "slurmdbd")
    )
    _sacctmgr(spec, "add", "cluster", spec.cluster_name)
    # Before slurmctld starts, so it loads them: under AccountingStorageEnforce a user
    # without an association cannot submit (configs.ENFORCE).
    _sacctmgr(
        spec,
        "add",
        "account",
        SANDBOX_ACCOUNT,
        f"Cluster={spec.cluster_name}",
        "Description=slurmkit sandbox",
        "Organization=slurmkit",
    )
    add_users(spec, local_users())


SANDBOX_ACCOUNT = "sandbox"
FIRST_USER_UID = 1000  # Debian's UID_MIN: the accounts people log in as (nobody is 65534)


def local_users() -> list[str]:
    """root and this machine's users: who may submit jobs to the sandbox.

    nobody (65534) is added too, but Slurm 25.11+ reads the name nobody as its own uid 99
    (uid.c, SLURM_AUTH_NOBODY): there uid 65534 matches no association and cannot submit.
    """
    names = {p.pw_name for p in pwd.getpwall() if p.pw_uid >= FIRST_USER_UID}
    return ["root", *sorted(names - {"root"})]


def add_users(spec: SandboxSpec, names: list[str]) -> None:
    """Associations in the sandbox's account; a name that has one already is left as it is."""
    users = ",".join(names)
    _sacctmgr(
        spec, "add", "user", users, f"Account={SANDBOX_ACCOUNT}", f"Cluster={spec.cluster_name}"
    )


def _sacctmgr(spec: SandboxSpec, *args: str) -> None:
    """sacctmgr may race slurmdbd's first seconds; retry briefly instead of sleeping blindly."""
    deadline = time.monotonic() + 30
    while True:
        try:
            run_slurm(["sacctmgr", "-i", *args], env=slurm_env(spec), timeout=30)
            return
        except SlurmError as exc:
            if _added_already(exc):
                return
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


# What sacctmgr says when everything asked for is there already: 22.05 "Nothing new
# added", 24.11+ "Request didn't affect anything" (exit 1 both).
_NOTHING_NEW = ("already exists", "Nothing new added", "Request didn't affect anything")


def _added_already(exc: SlurmError) -> bool:
    return any(words in str(exc) or words in exc.stderr for words in _NOTHING_NEW)


def start_slurmctld(spec: SandboxSpec, where: Where) -> None:
    spawn(spec, "slurmctld", where.argv("slurmctld", "-D", "-i"), "slurmctld")

    def answers() -> bool:
        try:
            run_slurm(["scontrol", "ping"], env=slurm_env(spec), timeout=10)
            return True
        except SlurmError:
            return False

    wait_for(answers, 60, "slurmctld", log_hint(spec, "slurmctld"))


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


def start_nodes(spec: SandboxSpec, where: Where) -> None:
    if spec.root:
        (Path(spec.root) / "run" / "sshd").mkdir(mode=0o755, exist_ok=True)
    else:
        _ensure_sshd_runtime_dir()
    hosts = str(spec.path("etc", "hosts"))
    tini = where.program("tini")
    slurmd = where.program("slurmd")
    for name in spec.node_names:
        outer = spawn(
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
        record(spec, Daemon(f"node-{name}", init_pid, f"-N {name}"))
        if versions.munge_per_node(spec.slurm):  # issue 18: 25.11 needs a munged per node
            nodemunge.start(spec, name, init_pid)
        # -r: the node's root directory (the version's root, or / on the host)
        config = str(spec.path("ssh", f"sshd_config-{name}"))
        enter = find_program("nsenter") or "nsenter"
        wrapper = spawn(
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
        record(spec, Daemon(f"sshd-{name}", sshd_pid, f"sshd_config-{name}"))


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


def node_states(spec: SandboxSpec) -> dict[str, str]:
    """Node name -> sinfo state word, in one call (sinfo -N lists a node once per partition)."""
    out = run_slurm(["sinfo", "-h", "-N", "-o", "%N %T"], env=slurm_env(spec), timeout=10).stdout
    return dict(line.split() for line in out.splitlines() if line.strip())


def wait_nodes_ready(spec: SandboxSpec) -> None:
    def all_idle() -> bool:
        try:
            states = node_states(spec)
        except SlurmError:
            return False
        return all(states.get(n, "").rstrip("*") == "idle" for n in spec.node_names)

    wait_for(all_idle, 90, "all nodes to be idle", log_hint(spec, "slurmctld"))
    wait_for(
        lambda: all(port_open(spec.node_addr(i), spec.ssh_port) for i in range(1, spec.nodes + 1)),
        30,
        "every node's sshd",
    )
