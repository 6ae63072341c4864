"""The sandbox's configuration files, as pure functions of its spec.

Choices that matter for what tests can observe:
- ``ProctrackType=proctrack/linuxproc``: no cgroups are available in containers; the
  PID namespace per node gives the isolation.
- ``TaskPlugin=task/affinity``: tasks are bound to CPUs as on the clusters users run,
  so ``sched_getaffinity`` in a step shows what srun gave each task (on 22.05 a plain
  srun's tasks get 1 CPU each whatever the job's --cpus-per-task: what ``cpus check``
  and the seed's test look for). Nodes claim more CPUs than the host has
  (``config_overrides``); Slurm's masks then fold onto the host's CPUs (22.05 gave
  both tasks of a 2-task step the mask 0x1 on a 2-CPU host): the counts are right, the
  CPU ids may repeat across tasks. ``task/cgroup`` is not used: 24.11/26.05 run from a Debian root
  without the cgroup mounts (``CgroupPlugin=disabled``, see :func:`cgroup_conf`), and
  on 22.05 the four slurmd of one host would share one cgroup tree, where a job on
  two nodes has the same ``job_N`` directory twice.
- ``SlurmdParameters=config_overrides``: nodes claim more CPUs than the host has.
- GPUs are gres over plain files; Slurm warns they are not devices but keeps them.
- ``AccountingStoragePass`` names our munge socket: it is how clients reach
  slurmdbd with a non-default munge (``AuthInfo`` alone is ignored by sacctmgr).
- ``HealthCheckProgram`` is ``<dir>/bin/slurmkit-health`` every 5 s in any node state:
  a wrapper that runs ``slurmkit health --config <dir>/health.toml`` only while that
  file exists and exits 0 at once otherwise, so only a test that writes the file sees
  Slurm drain a node by itself, and every other test runs as before.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from slurmkit.sandbox import versions, virtual
from slurmkit.sandbox.spec import SandboxSpec

DB_USER = "slurm"
DB_NAME = "slurm_acct_db"
HEALTH_WRAPPER = "slurmkit-health"
HEALTH_CONFIG = "health.toml"
# Short, so a test sees Slurm drain a node within seconds; the wrapper costs one `test -f`
# per node and interval while no health.toml exists.
HEALTH_INTERVAL = 5

# What differs between the timing profiles (``sandbox up --profile``). "production" is
# Slurm's own defaults where the demo and users meet them; "test" shortens what the test
# suite waits on, with the same Slurm underneath:
# - MessageTimeout: a hung controller's silence ends after it (and slurmkit's re-check
#   window, read from it: slurmkit.slurm.recheck, is two of it);
# - sched_interval/bf_interval: the main and backfill schedulers' periodic passes (60 s and
#   30 s by default) that start what no event started (a released job, a freed node).
# UnkillableStepTimeout stays 10 s in both (slurmctld logs that it wants 5 MessageTimeouts;
# shorter than that is what makes a real "Kill task failed" drain happen within a test).
# SlurmdTimeout stays 30 s in both: a job with a frozen node must outlive one net-check
# round, whose pair with that node is killed only after the pair's limit plus 30 s to launch
# (templates/_net_check.py LAUNCH_GRACE). With 12 s and 20 s, the job ended NODE_FAIL first on
# 26.05 and the healthy pair's result was lost (faulty scan's mid-scan test).
# What each step used (MaxRSS, TotalCPU per task and node), for ``why`` and its efficiency
# figures: gathered every 2 s, as test jobs last seconds. OverMemoryKill would end a step
# over its memory limit as OUT_OF_MEMORY without cgroups, but a limit reaches a step only
# where memory is a consumable resource (CR_*_Memory); this sandbox schedules CR_CPU (one
# job's default --mem would otherwise hold a whole node), so a job over its --mem runs on
# and ends COMPLETED with MaxRSS above ReqMem: what ``why`` flags, and what the live test
# checks (tests/integration/test_why_ended.py).
ACCOUNTING = (
    "JobAcctGatherType=jobacct_gather/linux",
    "JobAcctGatherFrequency=task=2",
    "JobAcctGatherParams=OverMemoryKill",
)

# Limits enforced as on production clusters: a QOS's MaxJobsPerUser holds a job back
# (QOSMaxJobsPerUserLimit, what ``why`` explains), a user without an association cannot
# submit (starters.add_users makes them). Not ``qos``: it refuses a job whose association
# was not granted its QOS ("Invalid qos specification", root included), and the QOS tests
# make (why's preemptor) are not granted. ``limits`` also changes queue age (acct_policy.c):
# a hold clears a pending job's AccrueTime (_hold_job_rec -> acct_policy_remove_accrue_time)
# and the next scheduler pass restarts it at the release: the age factor starts from 0.
# ``PriorityFlags=ACCRUE_ALWAYS`` makes AccrueTime the submit time and skips that removal:
# the age is kept across a hold (what ``train hold`` promises). ``train hold`` says on
# stderr when a cluster enforces limits without it.
ENFORCE = "AccountingStorageEnforce=associations,limits,safe"

PROFILES: dict[str, list[str]] = {
    "production": [],
    "test": [
        "MessageTimeout=5",
        "SchedulerParameters=sched_interval=5,bf_interval=5",
    ],
}


def slurm_conf(spec: SandboxSpec, plugin_dir: str = "") -> str:
    """``plugin_dir``: the version's plugins when it runs from a root (see rootfs)."""
    d = spec.dir
    lines = [
        f"ClusterName={spec.cluster_name}",
        "SlurmctldHost=localhost(127.0.0.1)",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        f"AuthInfo=socket={spec.munge_socket}",
        "CredType=cred/munge",
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n",
        f"SlurmctldPidFile={d}/run/slurmctld.pid",
        f"SlurmdPidFile={d}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/log/slurmctld.log",
        f"SlurmdLogFile={d}/log/slurmd-%n.log",
        f"SlurmctldPort={spec.ctld_port}",
        "ProctrackType=proctrack/linuxproc",
        # Tasks bound to CPUs, as on the clusters users run (see the module's docstring).
        "TaskPlugin=task/affinity",
        "SchedulerType=sched/backfill",
        # Multifactor with only the age factor: one point per second queued (up to an
        # hour), so "does a released train keep its queue age" is observable in seconds.
        "PriorityType=priority/multifactor",
        "PriorityWeightAge=3600",
        "PriorityMaxAge=01:00:00",
        "PriorityCalcPeriod=1",
        "PriorityFlags=ACCRUE_ALWAYS",  # queue age kept across a hold (see ENFORCE)
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        "SlurmdTimeout=30",
        *PROFILES[spec.profile],
        "MinJobAge=300",
        "KillWait=5",
        # Slurm's 60 s default, shortened so a real "Kill task failed" drain (a process
        # that SIGKILL cannot end) happens within a test; normal exits never come near it.
        "UnkillableStepTimeout=10",
        "MpiDefault=none",
        "GresTypes=gpu",
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=127.0.0.1",
        f"AccountingStoragePort={spec.dbd_port}",
        f"AccountingStoragePass={spec.munge_socket}",
        "AccountingStorageTRES=gres/gpu",
        ENFORCE,
        # Accounting gathers what each step used (see ACCOUNTING).
        *ACCOUNTING,
        # Preemption by QOS only: no QOS preempts another until a test makes one with
        # sacctmgr (Preempt=normal), so no existing job is ever preempted.
        "PreemptType=preempt/qos",
        "PreemptMode=CANCEL",
        f"HealthCheckProgram={health_wrapper_path(spec)}",
        f"HealthCheckInterval={HEALTH_INTERVAL}",
        "HealthCheckNodeState=ANY",
        f"RebootProgram={reboot_wrapper_path(spec)}",  # restarts the node's slurmd (node reboot)
    ]
    if plugin_dir:
        lines.append(f"PluginDir={plugin_dir}")
    gres = f" Gres=gpu:{spec.gpus}" if spec.gpus else ""
    sockets, cores, threads = _topology(spec.cpus)
    for i, name in enumerate(spec.node_names, start=1):
        lines.append(
            f"NodeName={name} NodeHostname={name} NodeAddr={spec.node_addr(i)}"
            f" Port={spec.slurmd_port(i)} CPUs={spec.cpus} Boards=1"
            f" SocketsPerBoard={sockets} CoresPerSocket={cores} ThreadsPerCore={threads}"
            f" RealMemory=1000{gres} State=UNKNOWN"
        )
    lines.append(f"PartitionName=gpu Nodes={spec.nodelist} Default=YES MaxTime=INFINITE State=UP")
    lines.append(f"PartitionName=cpu Nodes={spec.nodelist} MaxTime=INFINITE State=UP")
    lines.extend(virtual.slurm_conf_lines(spec))  # --virtual-nodes N (issue 18)
    lines.extend(versions.extra_conf(spec.slurm))  # a version's own lines (issue 18)
    return "\n".join(lines) + "\n"


def health_wrapper_path(spec: SandboxSpec) -> Path:
    return spec.bin_dir / HEALTH_WRAPPER


def health_config_path(spec: SandboxSpec) -> Path:
    return spec.path(HEALTH_CONFIG)


def health_wrapper(spec: SandboxSpec, python: str | None = None) -> str:
    """The ``HealthCheckProgram`` script (root-owned, 0755, written by ``sandbox up``).

    slurmd runs it with almost no environment, so it names the sandbox's slurm.conf and a
    PATH whose first entry holds the version's client wrappers (inside a version's root
    those run the real client). The venv's python is the one running ``sandbox up``: the
    nodes of a version run from a root see /work, /tmp and that interpreter bound in.
    """
    python = python or sys.executable
    config = health_config_path(spec)
    path = f"{spec.bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return (
        "#!/bin/sh\n"
        "# Slurm's HealthCheckProgram in the slurmkit sandbox (written by 'slurmkit sandbox up'):\n"
        f"# runs 'slurmkit health' only while {config} exists.\n"
        f"[ -f {shlex.quote(str(config))} ] || exit 0\n"
        f"SLURM_CONF={shlex.quote(str(spec.slurm_conf))}\n"
        f"PATH={shlex.quote(path)}\n"
        "export SLURM_CONF PATH\n"
        f"exec {shlex.quote(python)} -m slurmkit health --config {shlex.quote(str(config))}\n"
    )


# ---- RebootProgram (slurmkit node reboot): a sandbox node "reboots" by restarting its slurmd.
# slurmctld ends a reboot when the node registers with a boot time after the request; a
# node here cannot boot its kernel, so its slurmd runs under NODE_SUPERVISOR (tini's child)
# and the RebootProgram, run by slurmd on the node itself, leaves a marker and TERMs slurmd;
# the supervisor starts it again with -b ("report node rebooted when daemon restarted").
# Boot times are whole seconds and slurmctld waits while boot_time < boot_req_time
# (node_mgr.c waiting_for_node_boot): a node booted in the second of the next reboot request
# answers its pings as back, and 24.11 leaves it IDLE+REBOOT_ISSUED for good (issue 17). So
# -b reports a boot one second before the restart (SLURMD_BOOT_TIME, read by 24.11+ slurmd
# -b): still after this request (the RebootProgram waits 1 s), always before the next one.
# 22.05's slurmd ignores SLURMD_BOOT_TIME (-b counts uptime from its start), and a request
# in the second of a boot stuck a node there too; 'node reboot' itself waits such a boot
# out (node/reboot.py FRESH_BOOT), as a real node's next reboot would need.
REBOOT_WRAPPER = "slurmkit-reboot"
NODE_SUPERVISOR = (
    "m=$1; shift; b=; trap 'kill -TERM \"$p\" 2>/dev/null' TERM INT\n"
    'while :; do "$@" $b & p=$!; wait "$p"; rc=$?\n'
    '  while kill -0 "$p" 2>/dev/null; do wait "$p"; rc=$?; done\n'
    '  [ -e "$m" ] || exit "$rc"; rm -f "$m"; b=-b\n'
    "  SLURMD_BOOT_TIME=$(($(date +%s) - 1)); export SLURMD_BOOT_TIME\n"
    "done\n"
)


def reboot_wrapper_path(spec: SandboxSpec) -> Path:
    return spec.bin_dir / REBOOT_WRAPPER


def reboot_marker(spec: SandboxSpec, node: str) -> Path:
    return spec.path("run", f"reboot-{node}")


def reboot_wrapper(spec: SandboxSpec) -> str:
    """The ``RebootProgram`` (root-owned, 0755): mark this node, TERM its slurmd a second later.

    The delay lets slurmd's reboot RPC return before slurmd is asked to stop.
    """
    run = shlex.quote(str(spec.path("run")))
    return (
        "#!/bin/sh\n"
        "# Slurm's RebootProgram in the slurmkit sandbox (written by 'slurmkit sandbox up'):\n"
        "# restarts this node's slurmd, which then registers as freshly booted (slurmd -b).\n"
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin; export PATH\n"
        "node=$(hostname)\n"
        'case $node in ""|*[!A-Za-z0-9._-]*) echo "bad node name" >&2; exit 1;; esac\n'
        f'pid=$(cat {run}/slurmd-"$node".pid) || exit 1\n'
        f': > {run}/reboot-"$node" || exit 1\n'
        '( sleep 1; kill -TERM "$pid" ) </dev/null >/dev/null 2>&1 &\n'
    )


def cgroup_conf(spec: SandboxSpec) -> str:
    """``cgroup.conf`` for a version that runs from a root, where /sys lacks the cgroup mounts.

    24.11+ slurmd load a cgroup plugin even with proctrack/linuxproc and task/none, and
    fail in a chroot unless told there is none; 22.05 rejects the setting: "" there.
    """
    from slurmkit.sandbox.versions import OFFERED

    version = OFFERED.get(spec.slurm)
    if not (spec.root or spec.prefix) or version is None or not version.cgroup_disabled:
        return ""
    return "CgroupPlugin=disabled\n"


def _topology(cpus: int) -> tuple[int, int, int]:
    """Sockets, cores per socket, threads per core that multiply to ``cpus`` (2x2x2 for 8)."""
    threads = 2 if cpus % 2 == 0 else 1
    rest = cpus // threads
    sockets = 2 if rest % 2 == 0 else 1
    return sockets, rest // sockets, threads


def gres_conf(spec: SandboxSpec) -> str:
    if not spec.gpus:
        return ""
    files = (
        spec.path("gres", "gpu0")
        if spec.gpus == 1
        else spec.path("gres", f"gpu[0-{spec.gpus - 1}]")
    )
    return f"NodeName={spec.nodelist} Name=gpu File={files}\n"


def gpu_files(spec: SandboxSpec) -> list[Path]:
    return [spec.path("gres", f"gpu{i}") for i in range(spec.gpus)]


def slurmdbd_conf(spec: SandboxSpec, db_password: str) -> str:
    d = spec.dir
    return (
        "\n".join(
            [
                "AuthType=auth/munge",
                f"AuthInfo=socket={spec.munge_socket}",
                "DbdHost=localhost",
                "DbdAddr=127.0.0.1",
                f"DbdPort={spec.dbd_port}",
                "SlurmUser=root",
                f"LogFile={d}/log/slurmdbd.log",
                f"PidFile={d}/run/slurmdbd.pid",
                "StorageType=accounting_storage/mysql",
                "StorageHost=127.0.0.1",
                f"StoragePort={spec.mysql_port}",
                f"StorageUser={DB_USER}",
                f"StoragePass={db_password}",
                f"StorageLoc={DB_NAME}",
            ]
        )
        + "\n"
    )


def db_bootstrap_sql(db_password: str) -> str:
    quoted = db_password.replace("\\", "\\\\").replace("'", "\\'")
    return (
        f"CREATE USER IF NOT EXISTS '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{quoted}';\n"
        f"CREATE DATABASE IF NOT EXISTS {DB_NAME};\n"
        f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'127.0.0.1';\n"
    )


def hosts_file(spec: SandboxSpec, host_hosts: str) -> str:
    """The /etc/hosts each node sees: the host's plus every node name.

    Launchers need ``MASTER_ADDR=node-1`` to resolve inside jobs.
    """
    nodes = "\n".join(
        f"{spec.node_addr(i)} {name}" for i, name in enumerate(spec.node_names, start=1)
    )
    return f"{host_hosts.rstrip()}\n# slurmkit sandbox nodes\n{nodes}\n"


def sshd_config(spec: SandboxSpec, index: int) -> str:
    d = spec.dir
    return (
        "\n".join(
            [
                f"ListenAddress {spec.node_addr(index)}:{spec.ssh_port}",
                f"HostKey {d}/ssh/host_key",
                "PidFile none",
                f"AuthorizedKeysFile {d}/ssh/authorized_keys",
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                # the state dir lives under /tmp, which StrictModes rejects as group/world writable
                "StrictModes no",
                f"SetEnv SLURM_CONF={spec.slurm_conf}{_node_path(spec)}",
                "Subsystem sftp /usr/lib/openssh/sftp-server",
            ]
        )
        + "\n"
    )


def _node_path(spec: SandboxSpec) -> str:
    """A built version's clients first on an ssh session's PATH (`` PATH=...``), else nothing.

    A version from a root has its own /usr/bin inside the node; a version built into a prefix
    shares the host's filesystem, where /usr/bin holds the host's own (older) clients.
    """
    if not spec.prefix:
        return ""
    system = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return f" PATH={spec.prefix}/bin:{spec.prefix}/sbin:{system}"


def ssh_client_config(spec: SandboxSpec) -> str:
    """Maps node-N to 127.0.1.N with host-key checking on (the sandbox's own known_hosts)."""
    d = spec.dir
    blocks = [
        f"Host {name}\n  HostName {spec.node_addr(i)}\n"
        for i, name in enumerate(spec.node_names, start=1)
    ]
    blocks.append(
        f"Host {' '.join(spec.node_names)}\n"
        f"  Port {spec.ssh_port}\n"
        "  User root\n"
        f"  IdentityFile {d}/ssh/id_ed25519\n"
        "  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {d}/ssh/known_hosts\n"
        "  StrictHostKeyChecking yes\n"
    )
    return "".join(blocks)


def known_hosts(spec: SandboxSpec, host_public_key: str) -> str:
    key = " ".join(host_public_key.split()[:2])
    return "".join(
        f"[{name}]:{spec.ssh_port},[{spec.node_addr(i)}]:{spec.ssh_port} {key}\n"
        for i, name in enumerate(spec.node_names, start=1)
    )
