"""What running a command on one node left behind, whatever transport ran it.

Every transport returns one :class:`NodeResult` per node asked for, in the
order asked: a node that could not be reached or did not answer in time is a
result like any other, so one bad node never hides the answers of the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

OK = "ok"
FAILED = "failed"
UNREACHABLE = "unreachable"
TIMEOUT = "timeout"
STATUSES = (OK, FAILED, UNREACHABLE, TIMEOUT)


@dataclass(frozen=True)
class NodeResult:
    """One node's answer.

    ``status`` is ``ok`` (exit 0), ``failed`` (the command ran and exited
    non-zero, or its end was lost), ``unreachable`` (it never started: no
    connection, refused host key, failed login) or ``timeout``.
    ``exit_code`` is None when it is not known; ``error`` says why in one line.
    """

    node: str
    status: str
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    duration: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status == OK


def from_exit_code(
    node: str, exit_code: int, stdout: str, stderr: str, duration: float
) -> NodeResult:
    """The result of a command that ran to its end."""
    status = OK if exit_code == 0 else FAILED
    error = "" if exit_code == 0 else f"exit code {exit_code}"
    return NodeResult(node, status, stdout, stderr, exit_code, duration, error)
