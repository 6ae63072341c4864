"""Read the machine-readable lines the check templates print, so nobody re-parses logs by hand.

Check templates (faulty-node-check, gpu-memory-test, nccl-barrier-test, dcgmi-diag)
print, once per node and check::

    SLURMKIT_CHECK node=<node> check=<name> status=<pass|fail|skipped> detail=<text to end of line>

``node``, ``check`` and ``status`` hold no spaces: in ``check`` the characters ``%``,
space and tab are written ``%25``, ``%20``, ``%09`` (a ``cmd:`` check carries its
command). The cpus-per-task test prints one ``SLURMKIT_CPUS`` line per mode and task
and a final ``SLURMKIT_CPUS_VERDICT`` line, all ``key=value`` pairs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

_CHECK = re.compile(
    r"^SLURMKIT_CHECK node=(?P<node>\S+) check=(?P<check>\S+) "
    r"status=(?P<status>pass|fail|skipped) detail=(?P<detail>.*)$"
)
STATUSES = ("pass", "fail", "skipped")


@dataclass(frozen=True)
class CheckLine:
    """One ``SLURMKIT_CHECK`` line: one check's status on one node."""

    node: str
    check: str
    status: str
    detail: str


def parse_check_lines(text: str) -> list[CheckLine]:
    """Every ``SLURMKIT_CHECK`` line in ``text`` (other lines, e.g. a task prefix, are ignored)."""
    results = []
    for line in text.split("\n"):  # not splitlines(): a \r or \x85 in a detail is no new line
        start = line.find("SLURMKIT_CHECK ")
        if start < 0:
            continue
        match = _CHECK.match(line[start:].rstrip())
        if match:
            results.append(
                CheckLine(
                    node=match["node"],
                    check=unquote(match["check"]),
                    status=match["status"],
                    detail=match["detail"].strip(),
                )
            )
    return results


def _pairs(rest: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in rest.split() if "=" in item)


def parse_cpus_lines(text: str) -> list[dict[str, str]]:
    """``SLURMKIT_CPUS`` lines as dicts (mode, node, task, affinity, step_cpus, ...)."""
    return [
        _pairs(line.split("SLURMKIT_CPUS ", 1)[1])
        for line in text.splitlines()
        if "SLURMKIT_CPUS " in line
    ]


def parse_cpus_verdict(text: str) -> dict[str, str] | None:
    """The ``SLURMKIT_CPUS_VERDICT`` line as a dict, or None when the job did not get that far."""
    for line in text.splitlines():
        if "SLURMKIT_CPUS_VERDICT " in line:
            return _pairs(line.split("SLURMKIT_CPUS_VERDICT ", 1)[1])
    return None
