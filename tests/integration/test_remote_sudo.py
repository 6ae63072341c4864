"""``--sudo``, ``--sudo-user`` and ``--env-setup`` with a non-root ssh user (issue 17 item 2).

The sandbox nodes' sshd run as root and share the host's accounts and /etc, and every
node has its own host name (UTS namespace). The test makes a login user
(``slurmkit-sudo``, shell /bin/sh, password field ``*``: sshd without PAM refuses
locked ``!`` accounts), an ssh config that logs in as it, and one sudoers file:

    slurmkit-sudo ALL=(slurmkit-test) NOPASSWD: ALL
    slurmkit-sudo node-1=(root) NOPASSWD: ALL

(and, while the module runs, the sandbox's ssh folder traversable so that sshd, reading
the authorized keys as the user logging in, can), so ``--sudo-user slurmkit-test`` works
on every node and ``--sudo`` (root) only on node-1: the other nodes must each fail at
once with sudo's "a password is required" (``sudo -n``: never a prompt, never a
timeout) while node-1 goes on. The file is removed afterwards. Versions whose root has
no sudo are said so (skipped with the reason), not passed.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit import _proc, sandbox
from tests.integration.conftest import ensure_test_accounts

LOGIN = "slurmkit-sudo"
TARGET = "slurmkit-test"  # tests/integration/test_undrain.py's user (nologin shell)
TARGET_UID = 2001
SUDOERS_FILE = "etc/sudoers.d/slurmkit-itest-sudo"
TRANSPORTS = ["pdsh", "ssh"]


def _user(name: str, *args: str) -> None:
    if _proc.run(["getent", "passwd", name]).returncode != 0:
        made = _proc.run(["useradd", *args, name])
        assert made.returncode == 0, made.stderr


@pytest.fixture(scope="module")
def shared_dir() -> Iterator[Path]:
    """A folder both test users can read (pytest's tmp_path is root's, mode 700)."""
    path = Path(tempfile.mkdtemp(prefix="slurmkit-sudo-itest-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def login_config(cluster: sandbox.SandboxSpec, shared_dir: Path) -> Iterator[Path]:
    """An ssh config logging in as the non-root user, and its sudoers rule."""
    on_node = _proc.run(["ssh", "-F", str(cluster.ssh_config), "node-1", "command -v sudo"])
    if on_node.returncode != 0:
        pytest.skip(f"sudo is not installed in the Slurm {cluster.slurm} root (rootfs packages)")
    home = shared_dir / "home"
    home.mkdir()
    _user(LOGIN, "--home-dir", str(home), "--shell", "/bin/sh")
    _user(TARGET, "--no-create-home", "--uid", str(TARGET_UID), "--shell", "/usr/sbin/nologin")
    ensure_test_accounts()  # LOGIN not locked, no password ("*"), before any root started
    os.chown(home, int(_proc.run(["id", "-u", LOGIN]).stdout), -1)
    # The nodes' /etc: the host's, or (another version) the root's own, which the world
    # does not bind (only passwd, group, shadow and hosts come from the host).
    sudoers = Path(cluster.root or "/") / SUDOERS_FILE
    sudoers.parent.mkdir(mode=0o755, exist_ok=True)
    rule = f"{LOGIN} ALL=({TARGET}) NOPASSWD: ALL\n{LOGIN} node-1=(root) NOPASSWD: ALL\n"
    sudoers.write_text(rule)
    sudoers.chmod(0o440)
    checked = _proc.run(["visudo", "-c", "-f", str(sudoers)])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # sshd reads AuthorizedKeysFile as the user logging in: the sandbox's ssh folder (700)
    # is made traversable for the test only (711: no listing; the private keys stay 600).
    keys = cluster.ssh_config.parent
    mode = keys.stat().st_mode & 0o7777
    keys.chmod(mode | 0o011)
    config = shared_dir / "ssh_config"
    text = cluster.ssh_config.read_text()
    assert "  User root\n" in text
    config.write_text(text.replace("  User root\n", f"  User {LOGIN}\n"))
    try:
        yield config
    finally:
        keys.chmod(mode)
        sudoers.unlink(missing_ok=True)


def _run(run_cli, config: Path, via: str, *args: str, exit_code: int) -> dict[str, dict]:
    result = run_cli(
        "run",
        "-w",
        "node-[1-4]",
        "--via",
        via,
        "--ssh-config",
        str(config),
        "--json",
        *args,
        exit_code=exit_code,
    )
    return {r["node"]: r for r in json.loads(result.stdout)["nodes"]}


@pytest.mark.parametrize("via", TRANSPORTS)
def test_login_user_is_not_root(run_cli, login_config: Path, via: str) -> None:
    nodes = _run(run_cli, login_config, via, "--", "id -un", exit_code=0)
    assert {n: r["stdout"] for n, r in nodes.items()} == {
        f"node-{i}": f"{LOGIN}\n" for i in (1, 2, 3, 4)
    }


@pytest.mark.parametrize("via", TRANSPORTS)
def test_sudo_user_runs_as_that_user_after_env_setup(
    run_cli, login_config: Path, via: str, shared_dir: Path
) -> None:
    setup = shared_dir / "activate"
    setup.write_text('SK_ENV="set up as $(id -un)"\n')
    setup.chmod(0o644)
    command = 'echo "$(id -un) $(id -u) $SK_ENV"'
    args = ("--sudo-user", TARGET, "--env-setup", str(setup), "--", command)
    nodes = _run(run_cli, login_config, via, *args, exit_code=0)
    want = f"{TARGET} {TARGET_UID} set up as {TARGET}\n"
    assert {n: r["stdout"] for n, r in nodes.items()} == {f"node-{i}": want for i in (1, 2, 3, 4)}


@pytest.mark.parametrize("via", TRANSPORTS)
def test_a_failing_env_setup_never_runs_the_command(run_cli, login_config: Path, via: str) -> None:
    args = ("--sudo-user", TARGET, "--env-setup", "false", "--", "echo RAN")
    nodes = _run(run_cli, login_config, via, *args, exit_code=1)
    for node in nodes.values():
        assert node["status"] == "failed" and node["exit_code"] == 125
        assert "RAN" not in node["stdout"]
        assert "slurmkit: --env-setup failed (exit 1)" in node["stderr"]


@pytest.mark.parametrize("via", TRANSPORTS)
def test_missing_sudo_rule_fails_that_node_at_once_and_the_others_go_on(
    run_cli, login_config: Path, via: str
) -> None:
    nodes = _run(
        run_cli, login_config, via, "--sudo", "--timeout", "60", "--", "id -un", exit_code=1
    )
    assert nodes["node-1"]["status"] == "ok" and nodes["node-1"]["stdout"] == "root\n"
    for name in ("node-2", "node-3", "node-4"):
        # failed, not timeout: sudo -n answered at once instead of prompting
        assert nodes[name]["status"] == "failed", nodes[name]
        assert nodes[name]["error"] == "sudo: a password is required"
    text = run_cli(
        "run",
        "-w",
        "node-[1-4]",
        "--via",
        via,
        "--ssh-config",
        str(login_config),
        "--sudo",
        "--",
        "id -un",
        exit_code=1,
    ).stdout
    # one failure line per node (or per group of nodes failing alike), never node-1
    failures = [ln for ln in text.splitlines() if "failed: sudo: a password is required" in ln]
    assert failures and all(ln.startswith("node-") and "node-1" not in ln for ln in failures)


def test_hostile_words_reach_the_node_literally(run_cli, login_config: Path) -> None:
    hostile = "$(touch /tmp/slurmkit-sudo-pwned)'; id; '"
    nodes = _run(
        run_cli,
        login_config,
        "pdsh",
        "--sudo-user",
        TARGET,
        "--",
        "printf",
        "%s",
        hostile,
        exit_code=0,
    )
    assert {r["stdout"] for r in nodes.values()} == {hostile}
    assert not Path("/tmp/slurmkit-sudo-pwned").exists()


def test_srun_steps_take_the_same_line(run_cli, login_config: Path, shared_dir: Path) -> None:
    """--via srun: the step runs as the job's user (root here), sudo -u and the setup inside."""
    from slurmkit.slurm import query
    from slurmkit.slurm._exec import run_slurm
    from tests.integration.conftest import poll, submit

    setup = shared_dir / "activate-srun"
    setup.write_text("SK_ENV=srun-setup\n")
    setup.chmod(0o644)
    job = submit(
        "-N2", "--ntasks-per-node=1", "-J", "sk-sudo-srun", "-o", "/dev/null", "--wrap", "sleep 300"
    )
    try:
        poll(lambda: query.jobs(job_ids=[job])[0].state == "RUNNING", 120, "the allocation")
        args = ["--via", "srun", "--jobid", job, "--sudo-user", TARGET, "--env-setup", str(setup)]
        result = run_cli("run", *args, "--json", "--", 'echo "$(id -un) $SK_ENV"', exit_code=0)
        nodes = json.loads(result.stdout)["nodes"]
        assert len(nodes) == 2
        assert {r["stdout"] for r in nodes} == {f"{TARGET} srun-setup\n"}
    finally:
        run_slurm(["scancel", job], check=False)
