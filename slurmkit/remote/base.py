"""What every transport is given and must provide.

Transports are chosen by name (``pdsh``, ``ssh``, ``srun``) and imported only
when asked for, so ``slurmkit run --via pdsh`` never loads paramiko.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from slurmkit import stderr
from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.remote.result import NodeResult

DEFAULT_TIMEOUT = 60.0
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_FANOUT = 32

# What may reach pdsh's -w or ssh as a host: pdsh reads "^file", "-host" and
# "/regex/" in -w, and ssh reads a leading "-" as an option.
_NODE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
# What sudo -u takes: a POSIX-ish user name, or #UID. A leading "-" would be an option.
_USER_NAME = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_.-]*\$?|#[0-9]+)")


@dataclass(frozen=True)
class RemoteOptions:
    """Limits and choices shared by all transports.

    ``timeout`` bounds the command on each node, ``connect_timeout`` the
    connection; ``notify`` receives one-line notices meant for stderr
    (fallbacks, --insecure warnings).

    ``sudo`` runs the command through ``sudo -n`` on each node (as root, or as
    ``sudo_user``, which implies ``sudo``), for clusters whose ssh user is not
    root; ``env_setup`` is sourced (a path) or run (a command line) in the
    same shell before the command, as that user. See
    :func:`slurmkit.remote.command.remote_line`.
    """

    timeout: float = DEFAULT_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    fanout: int = DEFAULT_FANOUT
    insecure: bool = False
    ssh_config: Path | None = None
    jobid: str | None = None
    sudo: bool = False
    sudo_user: str | None = None
    env_setup: str | None = None
    notify: Callable[[str], None] = field(default=stderr.say, compare=False)

    def __post_init__(self) -> None:
        # Written so that NaN fails too (every comparison with NaN is false); inf has no
        # meaning as a limit and crashed round() in the transports.
        if not (0 < self.timeout < math.inf and 0 < self.connect_timeout < math.inf):
            raise UsageError("--timeout and --connect-timeout must be positive, finite seconds")
        if self.fanout < 1:
            raise UsageError(f"--fanout must be at least 1, got {self.fanout}")
        if self.sudo_user is not None and not _USER_NAME.fullmatch(self.sudo_user):
            raise UsageError(f"--sudo-user: not a user name: {self.sudo_user!r}")
        if self.env_setup is not None and (not self.env_setup.strip() or "\0" in self.env_setup):
            raise UsageError("--env-setup: give a file to source or a command line")

    @property
    def elevated(self) -> bool:
        """Whether commands go through sudo (``--sudo`` or ``--sudo-user``)."""
        return self.sudo or self.sudo_user is not None


class TransportMissing(EnvironmentProblem):
    """The program a transport needs (pdsh, srun) is not installed here."""


class Transport(Protocol):
    name: ClassVar[str]

    def __init__(self, options: RemoteOptions) -> None: ...

    def run(self, nodes: Sequence[str], command: str) -> list[NodeResult]:
        """Run the shell command line ``command`` on every node; one result per node, in order."""
        ...


def check_node_names(nodes: Sequence[str]) -> None:
    """Refuse names that pdsh or ssh would read as something else than a host."""
    bad = [n for n in nodes if not _NODE_NAME.fullmatch(n)]
    if bad:
        raise UsageError(f"not a node name: {bad[0]!r}")
