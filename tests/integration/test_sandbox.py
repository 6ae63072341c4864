"""The sandbox is a real cluster: what issue 2's 'done means' lists, checked end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurmkit import _proc, sandbox
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll, sacct_state, spare_spec, submit

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}


@pytest.mark.smoke
def test_all_nodes_usable_with_gpus(cluster: sandbox.SandboxSpec) -> None:
    def rows() -> list[list[str]]:
        out = run_slurm(["sinfo", "-h", "-N", "-p", "gpu", "-o", "%N|%T|%G|%c"]).stdout
        return [line.split("|") for line in out.split()]

    # A node may still be "completing" the previous test's job: wait for it to settle.
    settled = poll(
        lambda: (r := rows()) and {x[1] for x in r} <= {"idle", "mixed", "allocated"} and r,
        60,
        "every node to be idle, mixed or allocated",
    )
    assert [r[0] for r in settled] == cluster.node_names
    assert {r[2] for r in settled} == {f"gpu:{cluster.gpus}"}
    assert {r[3] for r in settled} == {str(cluster.cpus)}


def test_batch_job_runs_and_is_accounted(cluster: sandbox.SandboxSpec, tmp_path: Path) -> None:
    out = tmp_path / "hostname.out"
    job_id = submit("--wrap", "hostname", "-o", str(out))
    state = poll(lambda: (s := sacct_state(job_id)) in TERMINAL and s, 60, f"job {job_id} to end")
    assert state == "COMPLETED"
    assert out.read_text().strip() in cluster.node_names


def test_multi_node_step_sees_one_hostname_per_node(cluster: sandbox.SandboxSpec) -> None:
    result = run_slurm(
        [
            "srun",
            "-N",
            str(cluster.nodes),
            "--gres=gpu:2",
            "bash",
            "-c",
            'echo "$SLURMD_NODENAME $(hostname) $SLURM_GPUS_ON_NODE"',
        ],
        timeout=120,
    )
    lines = sorted(line.split() for line in result.stdout.splitlines())
    assert lines == sorted([name, name, "2"] for name in cluster.node_names)


def test_ssh_reaches_each_node_in_its_own_namespace(cluster: sandbox.SandboxSpec) -> None:
    result = _proc.run(["ssh", "-o", "BatchMode=yes", "node-2", "hostname; ps -eo comm"])
    assert result.returncode == 0, result.stderr
    hostname, *processes = result.stdout.split()
    assert hostname == "node-2"
    assert "slurmd" in processes
    assert "slurmctld" not in processes  # the controller runs on the host, not in node-2
    assert processes.count("slurmd") == 1


def test_ssh_checks_host_keys(cluster: sandbox.SandboxSpec) -> None:
    result = _proc.run(["ssh", "-G", "node-3"])
    settings = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert settings["stricthostkeychecking"] in ("true", "yes")
    assert settings["hostname"] == cluster.node_addr(3)


def test_pdsh_reaches_every_node(cluster: sandbox.SandboxSpec) -> None:
    result = _proc.run(["pdsh", "-R", "ssh", "-w", cluster.nodelist, "hostname"])
    assert result.returncode == 0, result.stderr
    pairs = sorted(line.split(": ") for line in result.stdout.splitlines())
    assert pairs == sorted([n, n] for n in cluster.node_names)


def test_node_names_resolve_inside_jobs(cluster: sandbox.SandboxSpec) -> None:
    result = run_slurm(["srun", "-N1", "-w", "node-2", "getent", "hosts", "node-1"], timeout=60)
    assert result.stdout.split() == [cluster.node_addr(1), "node-1"]


def test_status_and_env_commands(cluster: sandbox.SandboxSpec, run_cli, slurm_version) -> None:
    status = json.loads(run_cli("sandbox", "status", "--dir", str(cluster.dir), "--json").stdout)
    assert status["up"] is True
    assert status["slurm"] == slurm_version  # what the live cluster's sinfo --version says
    env = run_cli("sandbox", "env", "--dir", str(cluster.dir)).stdout.splitlines()
    assert env[0] == f"export SLURM_CONF={cluster.slurm_conf}"
    if cluster.root or cluster.prefix:  # a root or a built prefix: its wrappers first on PATH
        assert env[1:] == [f'export PATH={cluster.bin_dir}:"$PATH"']
    else:
        assert env[1:] == []


def test_every_client_and_node_runs_the_chosen_version(
    cluster: sandbox.SandboxSpec, slurm_version: str
) -> None:
    """sinfo/sbatch/srun on the host, and ssh node-2's clients, all say the same version."""
    requested = os.environ.get("SLURMKIT_TEST_SLURM", "")
    if requested:
        assert slurm_version == requested
    via_ssh = _proc.run(["ssh", "-o", "BatchMode=yes", "node-2", "scontrol --version"])
    assert via_ssh.stdout.split()[-1].startswith(slurm_version + "."), via_ssh.stderr
    in_job = run_slurm(["srun", "-N1", "-w", "node-3", "sinfo", "--version"], timeout=60)
    assert in_job.stdout.split()[-1].startswith(slurm_version + ".")
    # a job runs the host venv's Python and slurmkit by absolute path, on every version
    probe = run_slurm(
        ["srun", "-N1", "-w", "node-1", sys.executable, "-c", "import slurmkit; print('ok')"],
        timeout=60,
    )
    assert probe.stdout.strip() == "ok"


def test_sshd_recorded_is_the_listener_itself(cluster: sandbox.SandboxSpec) -> None:
    """status records sshd's own pid, not the nsenter that started it."""
    daemons = {d["name"]: d["pid"] for d in sandbox.status(cluster.dir).daemons}
    for node in cluster.node_names:
        cmdline = Path(f"/proc/{daemons[f'sshd-{node}']}/cmdline").read_bytes()
        # OpenSSH 10 (trixie, sid) rewrites its argv to "sshd: /usr/sbin/sshd -D ... [listener]"
        assert b"nsenter" not in cmdline and cmdline.startswith((b"/usr/sbin/sshd", b"sshd: "))
        assert f"sshd_config-{node}".encode() in cmdline


@pytest.mark.parametrize("shared", ["ports", "node addresses"])
def test_a_second_sandbox_sharing_ports_or_addresses_is_refused_naming_the_running_one(
    cluster: sandbox.SandboxSpec, tmp_path: Path, run_cli, shared: str
) -> None:
    """Another version, another dir; its ports overlap the session's, or its node addresses
    are the session's: refused before anything starts, and the session's sandbox goes on."""
    other = "24.11" if cluster.slurm != "24.11" else "26.05"
    if shared == "ports":
        where = ("--port-base", str(cluster.port_base + 50), "--net", str(cluster.net + 100))
    else:
        where = ("--port-base", str(cluster.port_base + 40000), "--net", str(cluster.net))
    directory = tmp_path / "other"
    try:
        result = run_cli(
            "sandbox", "up", "--dir", str(directory), "--slurm", other, "--no-install", *where,
            exit_code=2,
        )  # fmt: skip
    finally:  # had it started, the session's nodes would be shadowed in ~/.ssh/config
        sandbox.down(directory)
    (line,) = result.stderr.strip().splitlines()
    assert f"a Slurm {cluster.slurm} sandbox is already running in {cluster.dir}" in line
    assert f"with {shared} " in line
    assert sandbox.status(cluster.dir).up


def test_status_of_a_missing_sandbox_exits_1(tmp_path: Path, run_cli) -> None:
    result = run_cli("sandbox", "status", "--dir", str(tmp_path / "none"), exit_code=1)
    assert "down" in result.stderr


def test_up_is_idempotent(cluster: sandbox.SandboxSpec) -> None:
    pids_before = sandbox.status(cluster.dir).daemons
    report = sandbox.up(cluster)
    assert report.already_up
    assert sandbox.status(cluster.dir).daemons == pids_before


def test_up_refuses_a_directory_that_is_not_a_sandbox(tmp_path: Path, run_cli) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    result = run_cli("sandbox", "up", "--dir", str(tmp_path), "--no-install", exit_code=2)
    assert "not a slurmkit sandbox" in result.stderr
    assert (tmp_path / "precious.txt").read_text() == "keep me"


AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def test_up_without_root_says_what_it_needs() -> None:
    """For real, as the unprivileged user nobody (when nobody can reach this checkout)."""
    slurmkit = str(Path(sys.executable).parent / "slurmkit")
    probe = subprocess.run([*AS_NOBODY, slurmkit, "--version"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(
            "this checkout or its Python is not reachable by user nobody (e.g. under /root)"
        )
    result = subprocess.run(
        [*AS_NOBODY, slurmkit, "sandbox", "up", "--dir", "/tmp/slurmkit-nobody"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().startswith("slurmkit: the sandbox needs root")
    assert "Traceback" not in result.stderr


def _mounts_under(path: str) -> list[str]:
    """Mount points under ``path`` as the host sees them (the world's stay in its namespace)."""
    return [
        line.split()[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if line.split()[4].startswith(path)
    ]


def test_second_sandbox_lifecycle_leaves_nothing_behind(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    """A 1-node sandbox of the same version on other ports: up, use, down; then every recorded
    pid is gone, and nothing is mounted on the host."""
    spec = spare_spec(cluster, tmp_path, nodes=1)
    report = sandbox.up(spec, install=False)
    try:
        recorded = sandbox.status(spec.dir).daemons
        # munged mariadbd slurmdbd slurmctld + ns, init, sshd's nsenter, sshd per node
        # (+ the world holding the root for a version from a root; + a munged per node for
        # a version built into a prefix: slurmkit.sandbox.nodemunge)
        own = (1 if report.spec.root else 0) + (spec.nodes if report.spec.prefix else 0)
        assert len(recorded) == 4 + 4 + own
        env = {"SLURM_CONF": str(spec.slurm_conf)}
        if report.spec.root or report.spec.prefix:
            env["PATH"] = f"{report.spec.bin_dir}:{os.environ['PATH']}"
        assert (
            run_slurm(["srun", "-N1", "hostname"], env=env, timeout=60).stdout.strip() == "node-1"
        )
    finally:
        stopped = sandbox.down(spec.dir)
    assert not sandbox.status(spec.dir).up
    assert {d["name"] for d in recorded} <= set(stopped) | {"node-ns-node-1", "sshd-ns-node-1"}
    if report.spec.root:
        assert _mounts_under(report.spec.root) == []
    if report.spec.root or report.spec.prefix:
        assert not report.spec.bin_dir.exists()
    for daemon in recorded:
        stat = Path(f"/proc/{daemon['pid']}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    ssh_config = Path.home() / ".ssh" / "config"
    assert str(spec.ssh_config) not in ssh_config.read_text()
    # and the session's cluster is untouched
    assert sandbox.status(cluster.dir).up
