"""The sandbox's config files, checked for the facts Slurm and sshd depend on."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit.errors import UsageError
from slurmkit.sandbox import configs
from slurmkit.sandbox.spec import SandboxSpec


@pytest.fixture
def spec(tmp_path: Path) -> SandboxSpec:
    return SandboxSpec(dir=tmp_path, nodes=4)


def _conf_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_gres_types_come_before_node_lines(spec: SandboxSpec) -> None:
    lines = _conf_lines(configs.slurm_conf(spec))
    first_node = next(i for i, line in enumerate(lines) if line.startswith("NodeName="))
    assert lines.index("GresTypes=gpu") < first_node


def test_each_node_has_its_own_address_and_port(spec: SandboxSpec) -> None:
    nodes = [ln for ln in _conf_lines(configs.slurm_conf(spec)) if ln.startswith("NodeName=")]
    fields = [dict(kv.split("=", 1) for kv in ln.split()) for ln in nodes]
    assert [f["NodeName"] for f in fields] == ["node-1", "node-2", "node-3", "node-4"]
    assert [f["NodeAddr"] for f in fields] == [f"127.0.1.{i}" for i in range(1, 5)]
    assert len({f["Port"] for f in fields}) == 4
    assert {f["Gres"] for f in fields} == {"gpu:4"}


def test_accounting_uses_the_sandbox_munge_socket(spec: SandboxSpec) -> None:
    conf = configs.slurm_conf(spec)
    assert f"AuthInfo=socket={spec.munge_socket}" in conf
    # sacctmgr ignores AuthInfo when talking to slurmdbd; AccountingStoragePass is its socket
    assert f"AccountingStoragePass={spec.munge_socket}" in conf


@pytest.mark.parametrize("cpus", [1, 2, 3, 6, 8, 12, 64])
def test_topology_multiplies_to_the_cpu_count(cpus: int) -> None:
    sockets, cores, threads = configs._topology(cpus)
    assert sockets * cores * threads == cpus


def test_tasks_are_bound_to_cpus_without_cgroups(spec: SandboxSpec) -> None:
    """task/affinity: a step's sched_getaffinity shows what srun gave each task (cpus check)."""
    lines = configs.slurm_conf(spec).splitlines()
    assert "TaskPlugin=task/affinity" in lines
    assert "ProctrackType=proctrack/linuxproc" in lines
    assert not any("cgroup" in line for line in lines if line.startswith("TaskPlugin="))


def test_gres_conf_lists_one_file_per_gpu(spec: SandboxSpec) -> None:
    assert configs.gres_conf(spec).strip().endswith(f"File={spec.dir}/gres/gpu[0-3]")
    assert configs.gres_conf(SandboxSpec(dir=spec.dir, gpus=0)) == ""
    assert len(configs.gpu_files(spec)) == 4


def test_ssh_keeps_host_key_checking_on(spec: SandboxSpec) -> None:
    client = configs.ssh_client_config(spec)
    assert "StrictHostKeyChecking yes" in client
    assert "StrictHostKeyChecking no" not in client
    assert "Host node-3\n  HostName 127.0.1.3\n" in client
    known = configs.known_hosts(spec, "ssh-ed25519 AAAAKEY sandbox-host\n")
    assert f"[node-2]:{spec.ssh_port},[127.0.1.2]:{spec.ssh_port} ssh-ed25519 AAAAKEY\n" in known


def test_sshd_listens_only_on_its_node_address(spec: SandboxSpec) -> None:
    text = configs.sshd_config(spec, 3)
    assert f"ListenAddress 127.0.1.3:{spec.ssh_port}" in text
    assert "PasswordAuthentication no" in text
    assert f"SetEnv SLURM_CONF={spec.slurm_conf}" in text


def test_hosts_file_keeps_the_host_entries(spec: SandboxSpec) -> None:
    text = configs.hosts_file(spec, "127.0.0.1 localhost\n")
    assert text.startswith("127.0.0.1 localhost\n")
    assert "127.0.1.4 node-4\n" in text


def test_db_password_is_quoted_in_sql() -> None:
    sql = configs.db_bootstrap_sql("it's")
    assert "IDENTIFIED BY 'it\\'s'" in sql


@pytest.mark.parametrize(
    "kwargs", [{"nodes": 0}, {"nodes": 201}, {"cpus": 0}, {"gpus": -1}, {"port_base": 80}]
)
def test_spec_rejects_impossible_sizes(tmp_path: Path, kwargs: dict[str, int]) -> None:
    with pytest.raises(UsageError):
        SandboxSpec(dir=tmp_path, **kwargs)


def test_spec_round_trips_through_its_file(spec: SandboxSpec) -> None:
    spec.save()
    assert SandboxSpec.load(spec.dir) == spec
    assert SandboxSpec.load(spec.dir / "missing") is None


def test_removing_one_sandbox_include_keeps_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slurmkit.sandbox import sshconfig

    monkeypatch.setattr(sshconfig.Path, "home", lambda: tmp_path)
    first = SandboxSpec(dir=tmp_path / "a")
    second = SandboxSpec(dir=tmp_path / "b", port_base=19800)
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text("Host example\n  User me\n")
    sshconfig.install_include(first)
    sshconfig.install_include(second)
    sshconfig.install_include(second)  # idempotent
    sshconfig.remove_include(second)
    text = (tmp_path / ".ssh" / "config").read_text()
    assert text == (
        f"{sshconfig.SSH_INCLUDE_MARKER}\nInclude {first.ssh_config}\nHost example\n  User me\n"
    )


def test_sandbox_up_as_non_root_is_one_line_exit_2(
    run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The non-root path in-process (the integration suite also runs it as user nobody)."""
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    result = run_cli("sandbox", "up", "--dir", "/tmp/slurmkit-never", exit_code=2)
    assert result.stderr.startswith("slurmkit: the sandbox needs root")
    assert result.stderr.count("\n") == 1


def test_a_restarted_node_reports_a_boot_before_its_start_second(tmp_path: Path) -> None:
    """issue 17: slurmctld waits for a reboot while ``boot_time < boot_req_time`` (whole
    seconds). A node that "boots" in the same second as the next reboot request answers that
    request's pings as if already back: 24.11 then leaves it IDLE+REBOOT_ISSUED for good. The
    supervisor restarts slurmd with -b and a boot time one second before the restart."""
    import subprocess

    marker = tmp_path / "reboot-node-1"
    runs = tmp_path / "runs"
    fake_slurmd = tmp_path / "slurmd"
    fake_slurmd.write_text(
        "#!/bin/sh\n"
        f'echo "$(date +%s) ${{SLURMD_BOOT_TIME:-none}} $*" >> {runs}\n'
        f"[ -e {runs}.once ] || {{ : > {runs}.once; : > {marker}; }}\n"
    )
    fake_slurmd.chmod(0o755)
    subprocess.run(
        ["sh", "-c", configs.NODE_SUPERVISOR, "sh", str(marker), str(fake_slurmd), "-D"],
        check=True,
        timeout=30,
    )
    first, second = runs.read_text().splitlines()
    assert first.split()[1:] == ["none", "-D"]  # a first start is no reboot
    started, boot, *args = second.split()
    assert args == ["-D", "-b"]
    assert boot.isdigit() and int(boot) < int(started), second
