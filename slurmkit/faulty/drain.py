"""Drain the nodes a scan found failing: reason ``slurmkit: <check> failed``, batched.

Nodes already drained or down keep their state and the reason an admin gave them:
they are left alone and listed. Unknown nodes (no result) are never drained.

The drain itself is the node-change core's (:mod:`slurmkit.nodechange.change`, issue
30), as for ``node drain``: per distinct reason (nodes that failed the same checks
share it) a ``will-drain`` intent for each node is fsynced to the one audit log
(``$XDG_STATE_HOME/slurmkit/actions.log``, the one ``node`` commands and ``log show``
use), then one ``scontrol update nodename=<folded> state=drain reason=...``, a
read-back and an outcome per node. An update that gets no answer is "unknown, checked
again": the nodes are read again (bounded). A run killed in between, or one that never
got an answer, is settled by the next run of any node command or ``faulty scan
--drain`` (:func:`slurmkit.nodechange.change.reconcile`), in one line on stderr.
Intents an older slurmkit left open in ``faulty-drain.journal`` are still settled
(:func:`reconcile`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from slurmkit import stderr
from slurmkit.errors import ControllerUnreachable, SlurmError, UsageError
from slurmkit.faulty.report import DrainOutcome, ScanReport
from slurmkit.hostlist import HostSet, expand, fold
from slurmkit.journal import Journal
from slurmkit.nodechange import auditlog
from slurmkit.nodechange import change as core
from slurmkit.nodechange.auditlog import AuditLog
from slurmkit.nodechange.row import Row
from slurmkit.slurm import query

REASON_LIMIT = 200
JOURNAL_NAME = "faulty-drain.journal"
DRAIN = "drain"
POINTS = core.Points("faulty-drain.after-intent", "faulty-drain.after-update")
Confirm = Callable[[DrainOutcome], bool]
Notify = Callable[[str], None]


def reason_for(checks: list[str]) -> str:
    reason = f"slurmkit: {','.join(checks)} failed"
    return reason if len(reason) <= REASON_LIMIT else reason[: REASON_LIMIT - 1] + "…"


def journal_path() -> Path:
    """Where slurmkit before issue 30 journaled a scan's drains (beside the exclude list)."""
    from slurmkit.faulty import excluded

    return excluded.default_path().with_name(JOURNAL_NAME)


def plan(report: ScanReport, dry_run: bool) -> DrainOutcome:
    """Group failing nodes by reason; leave drained/down nodes alone (one node query)."""
    outcome = DrainOutcome(dry_run=dry_run)
    failing = {n.node: n for n in report.nodes if n.failed_checks}
    if not failing:
        return outcome
    for node in query.nodes(HostSet(failing)):
        if "DRAIN" in node.flags or node.is_down:
            why = f"already {node.state_text}" + (f": {node.reason}" if node.reason else "")
            outcome.left_alone.append((node.name, why))
            continue
        reason = reason_for(failing[node.name].failed_checks)
        outcome.groups.setdefault(reason, []).append(node.name)
        outcome.before[node.name] = node.state_text
    return outcome


def reconcile(journal: Journal, notify: Notify = stderr.say) -> list[str]:
    """Settle drains an older slurmkit left open in its own journal: read the nodes, record.

    A node now drained counts as drained (by that run or anyone); without an answer
    from Slurm the intent stays open. New drains are the core's, settled by it.
    """
    texts: list[str] = []
    for entry in (e for e in journal.open_intents() if e.action == DRAIN):
        names = str(entry.details.get("nodes", ""))
        if not names:
            continue
        try:
            found = {n.name: n for n in query.nodes(HostSet(names))}
        except SlurmError as exc:
            texts.append(f"{names}: the earlier drain is still unknown ({exc})")
            continue
        drained = [n for n in expand(names) if n in found and "DRAIN" in found[n].flags]
        missed = [n for n in expand(names) if n not in drained]
        parts = [f"{fold(drained)} drained"] if drained else []
        parts += [f"{fold(missed)} not drained"] if missed else []
        result = "done" if not missed else ("not-applied" if not drained else "partial")
        journal.outcome(
            entry.token,
            DRAIN,
            result,
            states={n: found[n].state_text for n in found},
            reconciled=True,
        )
        texts.append(", ".join(parts))
    if texts:
        notify(f"{journal.path}: settled what an earlier drain left open: {'; '.join(texts)}")
    return texts


def _settle_old_journal(notify: Notify) -> None:
    path = journal_path()
    if path.is_file():
        reconcile(Journal(path), notify)


def execute(
    outcome: DrainOutcome,
    confirm: Confirm,
    *,
    log: Path | None = None,
    notify: Notify = stderr.say,
) -> DrainOutcome:
    """Drain the planned nodes unless dry run or declined; read their states back.

    What an earlier run of any node command left open is settled first, even when this
    run has nothing to drain: the node a killed run drained is planned as "already
    drained" now, and settling only when there is something new to drain left that
    intent open for good. ``log``: the audit log (default: the user's own). The node
    commands' lock is not taken: ``node reboot --validate`` calls this while it holds it.
    """
    if outcome.dry_run:
        return outcome
    path = auditlog.chosen(log, keep=True, dry_run=False)
    with AuditLog.open(path) as audit:  # no record, no drain
        _settle_old_journal(notify)
        core.reconcile(audit, core.Reading(notify))
        if not outcome.groups:
            return outcome
        if not confirm(outcome):
            outcome.declined = True
            return outcome
        for reason, nodes in outcome.groups.items():
            _drain(outcome, reason, nodes, audit, notify)
    return outcome


def _drain(
    outcome: DrainOutcome, reason: str, nodes: list[str], audit: AuditLog, notify: Notify
) -> None:
    """One group through the core: intent, one update, read back, outcome; a failure raised."""
    rows = [Row(n, outcome.before.get(n, ""), reason=reason) for n in nodes]
    call = core.slurm_call(DRAIN, reason=reason)
    applied = core.apply(DRAIN, rows, audit, call, core.Reading(notify), POINTS, reason=reason)
    if applied.refused:
        raise UsageError(f"{applied.refused}: {applied.names} left as they were")
    if applied.error is not None and not applied.silent:
        raise applied.error  # its outcome (drain-failed) is in the log
    outcome.done = True
    outcome.states.update({n: node.state_text for n, node in applied.nodes.items()})
    if not applied.read:
        outcome.states.update({r.node: "unknown" for r in rows})
        raise ControllerUnreachable(
            f"scontrol update (drain {applied.names}) got no answer and Slurm still does not "
            f"answer ({applied.read_error}): whether they were drained is unknown; the next "
            f"node command or `faulty scan --drain` settles it ({audit.path})"
        )
    if applied.log_error:
        raise UsageError(f"{applied.log_error} (the drain itself was made)")
