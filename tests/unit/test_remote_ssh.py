"""The paramiko transport without a cluster: host-key policy, refused ports, proxies."""

from __future__ import annotations

import socket
from pathlib import Path

import paramiko
import pytest

from slurmkit.remote import ssh_config
from slurmkit.remote.base import RemoteOptions
from slurmkit.remote.ssh import SshTransport, _known_hosts_policy

KEY = paramiko.RSAKey.generate(1024)
OTHER = paramiko.RSAKey.generate(1024)


def _host(alias: str = "node-1", port: int = 17822, **kw) -> ssh_config.HostSettings:
    base = dict(
        alias=alias,
        hostname="127.0.1.1",
        port=port,
        user="root",
        identity_files=(),
        identities_only=False,
        known_hosts_files=("/kh",),
        host_key_alias=None,
        connect_timeout=None,
        proxy=None,
    )
    base.update(kw)
    return ssh_config.HostSettings(**base)  # type: ignore[arg-type]


def _known(name: str, key: paramiko.PKey) -> paramiko.HostKeys:
    keys = paramiko.HostKeys()
    keys.add(name, key.get_name(), key)
    return keys


def test_key_known_under_the_alias_is_accepted() -> None:
    """paramiko asks under the address; OpenSSH's known_hosts may only list the alias."""
    policy = _known_hosts_policy(_known("[node-1]:17822", KEY), _host())
    policy.missing_host_key(paramiko.SSHClient(), "[127.0.1.1]:17822", KEY)  # no exception


def test_changed_key_under_the_alias_is_refused() -> None:
    policy = _known_hosts_policy(_known("[node-1]:17822", KEY), _host())
    with pytest.raises(paramiko.BadHostKeyException):
        policy.missing_host_key(paramiko.SSHClient(), "[127.0.1.1]:17822", OTHER)


def test_unknown_key_is_refused_with_advice() -> None:
    policy = _known_hosts_policy(paramiko.HostKeys(), _host())
    with pytest.raises(paramiko.SSHException, match=r"not in known_hosts.*--insecure"):
        policy.missing_host_key(paramiko.SSHClient(), "[127.0.1.1]:17822", KEY)


def test_host_key_alias_is_the_only_name_tried() -> None:
    policy = _known_hosts_policy(_known("node-1", KEY), _host(host_key_alias="shared", port=22))
    with pytest.raises(paramiko.SSHException):
        policy.missing_host_key(paramiko.SSHClient(), "127.0.1.1", KEY)
    policy = _known_hosts_policy(_known("shared", KEY), _host(host_key_alias="shared", port=22))
    policy.missing_host_key(paramiko.SSHClient(), "127.0.1.1", KEY)


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "config"
    path.write_text(body)
    return path


def test_closed_port_is_unreachable_per_node(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "Host n*\n  HostName 127.0.0.1\n  Port 1\n")
    results = SshTransport(RemoteOptions(ssh_config=cfg, fanout=2)).run(["n1", "n2", "n3"], "true")
    assert [r.node for r in results] == ["n1", "n2", "n3"]
    assert {r.status for r in results} == {"unreachable"}
    assert "connect to 127.0.0.1 port 1" in results[0].error


def test_proxy_hosts_are_refused_with_advice(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "Host n1\n  ProxyJump bastion\n")
    (result,) = SshTransport(RemoteOptions(ssh_config=cfg)).run(["n1"], "true")
    assert result.status == "unreachable" and "--via pdsh" in result.error


def test_insecure_warns(tmp_path: Path) -> None:
    notices: list[str] = []
    cfg = _config(tmp_path, "Host n1\n  HostName 127.0.0.1\n  Port 1\n")
    SshTransport(RemoteOptions(ssh_config=cfg, insecure=True, notify=notices.append)).run(
        ["n1"], "true"
    )
    assert notices and "not checked" in notices[0]


def test_a_silent_listener_is_unreachable_within_timeout_without_a_traceback(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A port that takes connections and never sends a banner, like a hung sshd."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        cfg = _config(tmp_path, f"Host n1\n  HostName 127.0.0.1\n  Port {port}\n")
        options = RemoteOptions(ssh_config=cfg, timeout=1, connect_timeout=30)
        (result,) = SshTransport(options).run(["n1"], "true")
    assert result.status == "unreachable"
    assert "no ssh handshake came in time" in result.error
    assert result.duration < 30  # bounded by --timeout, not by the 30 s connect limit
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception" not in err
