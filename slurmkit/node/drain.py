"""``node drain NODES --reason R``: take nodes out of service, in one ``scontrol update``.

Slurm refuses a drain without a reason (and the seed's bare ``state=drain`` shows why
one is needed: nobody knows later why the node is out), so ``--reason`` is required
and must hold more than blanks. A node already drained is left as it is, its reason
kept (an admin's reason is never overwritten); a node with jobs becomes DRAINING and
is drained when they end, which the table says.
"""

from __future__ import annotations

from collections.abc import Callable

from slurmkit.errors import UsageError
from slurmkit.hostlist import HostSet
from slurmkit.node import change
from slurmkit.node.change import ChangeOptions
from slurmkit.node.outcome import DONE, WOULD, NodeReport, NodeRow
from slurmkit.nodechange.auditlog import AuditLog
from slurmkit.nodechange.change import slurm_call
from slurmkit.printable import printable
from slurmkit.slurm import query
from slurmkit.slurm.records import Node

REASON_LIMIT = 256


def check_reason(reason: str | None, what: str = "--reason") -> str:
    """A reason Slurm will show as given: non-blank, one line, of sane length."""
    if reason is None or not reason.strip():
        raise UsageError(f"{what} is required and must not be blank: Slurm needs to say why")
    if "\n" in reason or "\r" in reason or not reason.isprintable():
        raise UsageError(f"{what} {printable(reason)!r}: one line of printable text")
    if len(reason) > REASON_LIMIT:
        raise UsageError(f"{what} is {len(reason)} characters long; at most {REASON_LIMIT}")
    return reason.strip()


def plan(nodes: HostSet, reason: str) -> NodeReport:
    """Read the nodes once; those not yet drained would be drained."""
    report = NodeReport(
        "drain", change.rows_for(list(nodes), query.nodes(nodes, exact_reasons=True))
    )
    for row in report.rows:
        if row.action:
            continue
        if "DRAIN" in row.before.split("+"):
            row.action, row.why = DONE, "already drained: its reason is kept"
            row.after = row.before
        else:
            busy = row.before.split("+")[0] in ("ALLOCATED", "MIXED")
            row.action = WOULD
            row.why = "jobs running: DRAINING until they end" if busy else ""
    return report


def moved(row: NodeRow, node: Node) -> str:
    """A node drained since the plan keeps that drain's reason: it is not drained over."""
    if "DRAIN" in node.flags:
        return f"drained meanwhile ({node.reason or 'no reason shown'}): its reason is kept"
    return ""


def drain(
    nodes: HostSet, reason: str, options: ChangeOptions, confirm: Callable[[NodeReport], bool]
) -> NodeReport:
    reason = check_reason(reason)

    def act(report: NodeReport, log: AuditLog) -> None:
        change.change(
            "drain",
            report,
            log,
            slurm_call("drain", reason=reason),
            options,
            reason=reason,
        )

    return change.run("drain", options, lambda: plan(nodes, reason), act, confirm, moved)
