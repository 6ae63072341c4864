"""~/.ssh/config for the paramiko transport: Include resolution and per-host settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit.errors import UsageError
from slurmkit.remote import ssh_config


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    return tmp_path


def _lookup(path: Path, alias: str) -> ssh_config.HostSettings:
    return ssh_config.settings_for(ssh_config.load(path), alias)


def test_include_with_absolute_path_is_followed(home: Path, tmp_path: Path) -> None:
    """The sandbox's shape: an Include at the top of ~/.ssh/config."""
    nodes = tmp_path / "sandbox" / "ssh_config"
    nodes.parent.mkdir()
    nodes.write_text(
        "Host node-1\n  HostName 127.0.1.1\n"
        "Host node-1 node-2\n  Port 17822\n  User root\n"
        f"  UserKnownHostsFile {tmp_path}/kh\n  IdentityFile ~/.ssh/id_test\n  IdentitiesOnly yes\n"
    )
    config = home / ".ssh" / "config"
    config.write_text(f"# marker\nInclude {nodes}\nHost *\n  User fallback\n")
    host = _lookup(config, "node-1")
    assert (host.hostname, host.port, host.user) == ("127.0.1.1", 17822, "root")
    assert host.identity_files == (str(home / ".ssh" / "id_test"),)
    assert host.identities_only
    assert host.known_hosts_files[0] == f"{tmp_path}/kh"
    other = _lookup(config, "login1")
    assert (other.hostname, other.port, other.user) == ("login1", 22, "fallback")


def test_relative_globbed_and_nested_includes(home: Path) -> None:
    ssh = home / ".ssh"
    (ssh / "conf.d").mkdir()
    (ssh / "conf.d" / "10-a.conf").write_text("Host a\n  Port 2201\nInclude nested/*.conf\n")
    (ssh / "conf.d" / "20-b.conf").write_text("Host b\n  Port 2202\n")
    (ssh / "nested").mkdir()
    (ssh / "nested" / "c.conf").write_text("Host c\n  Port 2203\n")
    (ssh / "config").write_text("Include conf.d/*.conf missing/*.conf\n")
    assert [_lookup(ssh / "config", h).port for h in "abc"] == [2201, 2202, 2203]


def test_lines_after_an_include_keep_their_block(home: Path) -> None:
    """An included file opening its own Host blocks must not capture what follows."""
    ssh = home / ".ssh"
    (ssh / "inc").write_text("Host other\n  Port 2200\n")
    (ssh / "config").write_text("Host target\n  Include inc\n  Port 2299\n")
    assert _lookup(ssh / "config", "target").port == 2299
    assert _lookup(ssh / "config", "other").port == 2200
    text = ssh_config.expand_includes(ssh / "config")
    assert text.splitlines()[-2] == "Host target"


def test_global_lines_after_include_stay_global(home: Path) -> None:
    ssh = home / ".ssh"
    (ssh / "inc").write_text("Host x\n  Port 2200\n")
    (ssh / "config").write_text("Include inc\nUser everyone\n")
    assert _lookup(ssh / "config", "y").user == "everyone"


def test_include_loop_is_an_error(home: Path) -> None:
    ssh = home / ".ssh"
    (ssh / "config").write_text("Include config\n")
    with pytest.raises(UsageError, match="nested deeper"):
        ssh_config.load(ssh / "config")


def test_missing_user_config_is_empty_but_a_named_one_must_exist(home: Path) -> None:
    assert _lookup(home / ".ssh" / "config", "n1").port == 22
    with pytest.raises(UsageError, match="does not exist"):
        ssh_config.load(home / "nope")


def test_host_key_names_follow_openssh(home: Path) -> None:
    ssh = home / ".ssh"
    (ssh / "config").write_text(
        "Host a\n  HostName 10.0.0.1\n  Port 2222\nHost b\n  HostName 10.0.0.2\n"
        "Host c\n  HostKeyAlias cluster-key\n  UserKnownHostsFile none\n"
    )
    assert _lookup(ssh / "config", "a").host_key_names == ["[a]:2222", "[10.0.0.1]:2222"]
    assert _lookup(ssh / "config", "b").host_key_names == ["b", "10.0.0.2"]
    c = _lookup(ssh / "config", "c")
    assert c.host_key_names == ["cluster-key"]
    assert c.known_hosts_files == ssh_config.DEFAULT_GLOBAL_KNOWN_HOSTS


def test_default_known_hosts_and_proxies(home: Path) -> None:
    ssh = home / ".ssh"
    (ssh / "config").write_text("Host j\n  ProxyJump bastion\nHost n\n  ProxyCommand none\n")
    j = _lookup(ssh / "config", "j")
    assert j.proxy == "bastion"
    assert j.known_hosts_files[0] == str(home / ".ssh" / "known_hosts")
    assert _lookup(ssh / "config", "n").proxy is None


def test_bad_port_is_a_usage_error(home: Path) -> None:
    (home / ".ssh" / "config").write_text("Host x\n  Port twenty\n")
    with pytest.raises(UsageError, match="Port"):
        _lookup(home / ".ssh" / "config", "x")
