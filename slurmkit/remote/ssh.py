"""The ssh transport: paramiko in a bounded thread pool, no external program.

Connections follow ``~/.ssh/config`` (with ``Include``, see
:mod:`.ssh_config`): host name, port, user, identity files, known_hosts
files. Host keys are checked against those known_hosts files under the name
OpenSSH would use (alias or ``HostKeyAlias``) or the address; unknown or
changed keys refuse the node unless ``--insecure``, which accepts any key in
memory only (known_hosts files are never written). ``StrictHostKeyChecking``
from the config is not honoured: turning checks off takes ``--insecure``.
ProxyCommand/ProxyJump hosts are refused (paramiko would start the proxy
outside slurmkit's process seam): use ``--via pdsh`` for those.
"""

from __future__ import annotations

import logging
import select
import socket
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, ClassVar

from slurmkit.remote import command as cmd
from slurmkit.remote import ssh_config
from slurmkit.remote.base import RemoteOptions
from slurmkit.remote.result import TIMEOUT, UNREACHABLE, NodeResult, from_exit_code

if TYPE_CHECKING:
    import paramiko

_NO_HANDSHAKE = frozenset({"Error reading SSH protocol banner", "No existing session"})
_CHUNK = 65536
_POLL = 0.05


class SshTransport:
    name: ClassVar[str] = "ssh"

    def __init__(self, options: RemoteOptions) -> None:
        self.options = options

    def run(self, nodes: Sequence[str], command: str) -> list[NodeResult]:
        _silence_paramiko()
        config = ssh_config.load(self.options.ssh_config)
        if self.options.insecure:
            self.options.notify(
                "--insecure: ssh host keys are not checked (unknown keys accepted in memory)"
            )
        remote = cmd.sh_c(command)
        workers = max(1, min(self.options.fanout, len(nodes)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="slurmkit-ssh") as pool:
            futures = [
                pool.submit(self._one, ssh_config.settings_for(config, node), remote)
                for node in nodes
            ]
            return [f.result() for f in futures]

    def _one(self, host: ssh_config.HostSettings, remote: str) -> NodeResult:
        started = time.monotonic()
        if host.proxy:
            return _unreachable(
                host,
                started,
                f"ProxyCommand/ProxyJump ({host.proxy}) is not "
                "supported by the ssh transport; use --via pdsh",
            )
        try:
            client = self._connect(host)
        except Exception as exc:  # whatever stops the connection is this node's result only
            return _unreachable(host, started, _describe(exc, host))
        try:
            return _execute(client, host.alias, remote, self.options.timeout, started)
        except Exception as exc:  # the session broke before the command could report
            return NodeResult(
                host.alias,
                UNREACHABLE,
                "",
                "",
                None,
                time.monotonic() - started,
                f"session failed: {_describe(exc, host)}",
            )
        finally:
            client.close()

    def _connect(self, host: ssh_config.HostSettings) -> paramiko.SSHClient:
        import paramiko

        client = paramiko.SSHClient()
        if self.options.insecure:
            # No known_hosts at all: a changed key must not fail either, as with pdsh's
            # UserKnownHostsFile=/dev/null; AutoAddPolicy only adds to memory.
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        else:
            known = paramiko.HostKeys()
            for path in host.known_hosts_files:
                try:
                    client.load_system_host_keys(path)  # "system": paramiko never writes these
                    known.load(path)
                except (FileNotFoundError, IsADirectoryError, PermissionError):
                    continue
            client.set_missing_host_key_policy(_known_hosts_policy(known, host))
        # --timeout bounds the whole answer, as pdsh's -u does: a node that accepts the TCP
        # connection but never sends its banner (hung sshd) must not take longer.
        timeout = min(
            host.connect_timeout or self.options.connect_timeout,
            self.options.connect_timeout,
            self.options.timeout,
        )
        try:
            client.connect(
                host.hostname,
                port=host.port,
                username=host.user,
                # paramiko takes a list of key files too (its docs, and its code: it loops
                # over a list); types-paramiko types the parameter as a single str
                key_filename=list(host.identity_files) or None,  # type: ignore[arg-type]
                timeout=timeout,
                banner_timeout=timeout,
                auth_timeout=timeout,
                allow_agent=not host.identities_only,
                look_for_keys=not (host.identities_only and host.identity_files),
            )
        except BaseException:
            client.close()
            raise
        return client


def _silence_paramiko() -> None:
    """Keep paramiko's transport-thread tracebacks off stderr; each node's error is reported.

    With no handler configured, Python's last-resort handler prints paramiko's ERROR
    records, tracebacks included, for every node that fails to connect.
    """
    logger = logging.getLogger("paramiko")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _known_hosts_policy(
    known: paramiko.HostKeys, host: ssh_config.HostSettings
) -> paramiko.MissingHostKeyPolicy:
    import paramiko

    class KnownHostsPolicy(paramiko.MissingHostKeyPolicy):
        """paramiko looked the key up under the address; OpenSSH also tries the alias."""

        def missing_host_key(self, client, hostname, key):
            for name in host.host_key_names:
                entry = known.lookup(name)
                if entry is None or key.get_name() not in entry:
                    continue
                if entry[key.get_name()] == key:
                    return
                raise paramiko.BadHostKeyException(name, key, entry[key.get_name()])
            raise paramiko.SSHException(
                f"host key of {hostname} ({key.get_name()}) is not in known_hosts "
                f"({', '.join(host.known_hosts_files)}); add it (ssh-keyscan) or pass --insecure"
            )

    return KnownHostsPolicy()


def _execute(
    client: paramiko.SSHClient, node: str, remote: str, timeout: float, started: float
) -> NodeResult:
    transport = client.get_transport()
    assert transport is not None
    channel = transport.open_session(timeout=timeout)
    channel.exec_command(remote)
    channel.shutdown_write()  # the command reads EOF, never our terminal
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + timeout
    while True:
        _drain(channel, out, err)
        if channel.exit_status_ready() and channel.eof_received:
            _drain(channel, out, err)
            break
        if time.monotonic() > deadline:
            channel.close()
            return NodeResult(
                node,
                TIMEOUT,
                _text(out),
                _text(err),
                None,
                time.monotonic() - started,
                f"no answer within {timeout:g} s",
            )
        select.select([channel], [], [], _POLL)
    code = channel.recv_exit_status()
    return from_exit_code(node, code, _text(out), _text(err), time.monotonic() - started)


def _drain(channel: paramiko.Channel, out: bytearray, err: bytearray) -> None:
    while channel.recv_ready():
        out += channel.recv(_CHUNK)
    while channel.recv_stderr_ready():
        err += channel.recv_stderr(_CHUNK)


def _text(data: bytearray) -> str:
    return data.decode(errors="replace")


def _unreachable(host: ssh_config.HostSettings, started: float, error: str) -> NodeResult:
    return NodeResult(host.alias, UNREACHABLE, "", "", None, time.monotonic() - started, error)


def _describe(exc: BaseException, host: ssh_config.HostSettings) -> str:
    """One line a person can act on, naming the address actually tried."""
    import paramiko

    where = f"{host.hostname} port {host.port}"
    if isinstance(exc, paramiko.BadHostKeyException):
        return f"host key of {where} CHANGED (does not match known_hosts): refusing"
    if isinstance(exc, paramiko.AuthenticationException):
        return f"login as {host.user} to {where} failed: {exc}"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return f"connect to {where} timed out"
    if isinstance(exc, paramiko.SSHException) and str(exc) in _NO_HANDSHAKE:
        # paramiko's words when negotiation runs out of time: the banner never came, or
        # connect() gave up first and its next step found no session.
        return f"{where} took the connection but no ssh handshake came in time (hung sshd or node?)"
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        reason = next(iter(exc.errors.values()), exc)
        return f"connect to {where}: {getattr(reason, 'strerror', None) or reason}"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve {host.hostname}: {exc.strerror}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"connect to {where}: {exc.strerror}"
    return f"{where}: {exc or type(exc).__name__}"
