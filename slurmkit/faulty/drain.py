"""Drain the nodes a scan found failing: reason ``slurmkit: <check> failed``, batched.

One ``scontrol update nodename=<folded> state=drain reason=...`` per distinct
reason (nodes that failed the same checks share one call), then one read-back.
Nodes already drained or down keep their state and the reason an admin gave them:
they are left alone and listed. Unknown nodes (no result) are never drained.
"""

from __future__ import annotations

from collections.abc import Callable

from slurmkit.faulty.report import DrainOutcome, ScanReport
from slurmkit.hostlist import fold
from slurmkit.slurm import query

REASON_LIMIT = 200
Confirm = Callable[[DrainOutcome], bool]


def reason_for(checks: list[str]) -> str:
    reason = f"slurmkit: {','.join(checks)} failed"
    return reason if len(reason) <= REASON_LIMIT else reason[: REASON_LIMIT - 1] + "…"


def plan(report: ScanReport, dry_run: bool) -> DrainOutcome:
    """Group failing nodes by reason; leave drained/down nodes alone (one node query)."""
    outcome = DrainOutcome(dry_run=dry_run)
    failing = {n.node: n for n in report.nodes if n.failed_checks}
    if not failing:
        return outcome
    for node in query.nodes(fold(list(failing))):
        if "DRAIN" in node.flags or node.is_down:
            why = f"already {node.state_text}" + (f": {node.reason}" if node.reason else "")
            outcome.left_alone.append((node.name, why))
            continue
        reason = reason_for(failing[node.name].failed_checks)
        outcome.groups.setdefault(reason, []).append(node.name)
    return outcome


def execute(outcome: DrainOutcome, confirm: Confirm) -> DrainOutcome:
    """Drain the planned nodes unless dry run or declined; read their states back."""
    if outcome.dry_run or not outcome.groups:
        return outcome
    if not confirm(outcome):
        outcome.declined = True
        return outcome
    for reason, nodes in outcome.groups.items():
        query.update_node_state(fold(nodes), "drain", reason)
    outcome.done = True
    outcome.states = {n.name: n.state_text for n in query.nodes(fold(outcome.nodes))}
    return outcome
