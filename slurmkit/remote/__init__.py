"""Run one command on many nodes in parallel; one result per node.

    >>> from slurmkit import remote
    >>> outcome = remote.run("node-[1-4]", "uptime", via="auto")
    >>> [r.status for r in outcome.results]
    ['ok', 'ok', 'ok', 'unreachable']

Transports are chosen by name and imported when asked for: ``pdsh`` (pdsh
over OpenSSH), ``ssh`` (paramiko, pure Python) and ``srun`` (a step inside
``--jobid``'s allocation). ``auto`` is srun when a job id is given, else pdsh,
else ssh. When pdsh is asked for (or chosen by ``auto``) but is not
installed, the ssh transport runs instead and a notice says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import import_module
from typing import TYPE_CHECKING

from slurmkit.errors import UsageError

if TYPE_CHECKING:
    from slurmkit.hostlist import HostSet
from slurmkit.remote.base import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_FANOUT,
    DEFAULT_TIMEOUT,
    RemoteOptions,
    Transport,
    TransportMissing,
    check_node_names,
)
from slurmkit.remote.command import Command, remote_line, sudo_problem, to_shell
from slurmkit.remote.result import FAILED, OK, STATUSES, TIMEOUT, UNREACHABLE, NodeResult

TRANSPORTS: dict[str, str] = {
    "pdsh": "slurmkit.remote.pdsh:PdshTransport",
    "ssh": "slurmkit.remote.ssh:SshTransport",
    "srun": "slurmkit.remote.srun:SrunTransport",
}
VIA_CHOICES = ("auto", *TRANSPORTS)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_FANOUT",
    "DEFAULT_TIMEOUT",
    "FAILED",
    "OK",
    "STATUSES",
    "TIMEOUT",
    "TRANSPORTS",
    "UNREACHABLE",
    "VIA_CHOICES",
    "NodeResult",
    "RemoteOptions",
    "RunOutcome",
    "Transport",
    "TransportMissing",
    "run",
    "transport_class",
]


@dataclass(frozen=True)
class RunOutcome:
    """Which transport ran, and every node's result in the order asked."""

    transport: str
    results: list[NodeResult]

    @property
    def all_ok(self) -> bool:
        return all(r.ok for r in self.results)


def transport_class(name: str) -> type[Transport]:
    """Import the transport called ``name`` (``pdsh``, ``ssh``, ``srun``)."""
    target = TRANSPORTS.get(name)
    if target is None:
        raise UsageError(f"unknown transport {name!r}: choose one of {', '.join(TRANSPORTS)}")
    module, _, attr = target.partition(":")
    return getattr(import_module(module), attr)


def run(
    nodes: HostSet | Sequence[str],
    command: Command,
    *,
    via: str = "auto",
    options: RemoteOptions | None = None,
) -> RunOutcome:
    """Run ``command`` on ``nodes`` (a node set or names); never raises for one node's failure.

    The node list was parsed once, at the edge (the CLI): a text here would be parsed again.

    ``command`` is a shell command line (str) or an argv (several words,
    quoted one by one). ``options.env_setup`` and ``options.sudo``/``sudo_user``
    wrap it on every transport alike (:func:`.command.remote_line`); a node where
    sudo refuses gets sudo's own line as its error, and the others go on.
    """
    options = options or RemoteOptions()
    names = list(dict.fromkeys(nodes))
    if not names:
        raise UsageError("no nodes given")
    check_node_names(names)
    line = remote_line(
        to_shell(command),
        sudo=options.sudo,
        sudo_user=options.sudo_user,
        env_setup=options.env_setup,
    )
    name = _choose(via, options)
    try:
        results = transport_class(name)(options).run(names, line)
    except TransportMissing as exc:
        if name != "pdsh":
            raise
        options.notify(f"{exc}: using the ssh transport (paramiko) instead")
        name, results = "ssh", transport_class("ssh")(options).run(names, line)
    if options.elevated:
        results = [_explain_sudo(r) for r in results]
    return RunOutcome(name, results)


def _explain_sudo(result: NodeResult) -> NodeResult:
    """sudo's refusal as the node's error: "exit code 1" alone would hide why."""
    if result.status != FAILED:
        return result
    problem = sudo_problem(result.stderr, result.exit_code)
    return replace(result, error=problem) if problem else result


def _choose(via: str, options: RemoteOptions) -> str:
    if via == "auto":
        return "srun" if options.jobid else "pdsh"
    if via not in TRANSPORTS:
        raise UsageError(f"unknown transport {via!r}: choose one of {', '.join(VIA_CHOICES)}")
    return via
