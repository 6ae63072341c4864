"""How a node command runs: dry run, lock, settle, plan, ask, read again, change.

``node drain``, ``resume`` and ``reboot`` differ only in how they plan (which nodes,
what the leftover check or the config says) and in the Slurm call that acts. The rest
is here, shared: the dry run, the lock, settling what a killed run of any node command
left open in the audit log, the confirm callback, and the change itself, which is the
core's (:mod:`slurmkit.nodechange.change`: intent, one call, read back, outcome); this
module words its result for the node commands' table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from slurmkit import locks
from slurmkit.errors import SlurmError
from slurmkit.hostlist import HostSet
from slurmkit.node.outcome import DONE, FAILED, SKIPPED, UNKNOWN, WOULD, NodeReport, NodeRow
from slurmkit.nodechange import auditlog, settle
from slurmkit.nodechange import change as core
from slurmkit.nodechange.auditlog import AuditLog
from slurmkit.nodechange.change import Notify, Points, Reading
from slurmkit.nodechange.row import SENT
from slurmkit.slurm.records import Node

VERBS = ("drain", "resume", "reboot")


@dataclass(frozen=True)
class ChangeOptions:
    """What every changing node command shares: dry run, audit log, lock, notices."""

    dry_run: bool = False
    log: Path | None = None
    lock: Path | None = None
    lock_wait: float = 10.0
    notify: Notify | None = None
    recheck_within: float | None = None  # None: recheck.window(), from MessageTimeout

    @property
    def reading(self) -> Reading:
        return Reading(self.notify, self.recheck_within)

    def say(self, message: str) -> None:
        self.reading.say(message)


Moved = Callable[[NodeRow, Node], str]  # why a planned row no longer holds, or ""


def run(
    verb: str,
    options: ChangeOptions,
    plan: Callable[[], NodeReport],
    act: Callable[[NodeReport, AuditLog], None],
    confirm: Callable[[NodeReport], bool],
    moved: Moved | None = None,
) -> NodeReport:
    """Plan; on a dry run stop there; else lock, settle old intents, plan, ask, read again, act.

    The plan is made under the lock, but the question (a person may take minutes) and
    resume's leftover check take time, and the node lock does not hold off undrain,
    Slurm or an admin's scontrol. So the planned nodes are read again right before the
    change, and only those still as planned (``moved``) are changed (issue 29, item 2).
    """
    if options.dry_run:
        if options.log is not None:
            auditlog.check(options.log)  # would the real run be able to log?
        report = plan()
        report.dry_run = True
        return report
    path = options.lock or locks.default_lock_path("node")
    with (
        AuditLog.open(options.log) as log,  # first: a bad --log changes nothing
        locks.hold(path, wait=options.lock_wait, what="node"),
    ):
        settled = core.reconcile(log, options.reading)
        report = plan()
        report.reconciled = settled
        if not report.would_change:
            return report
        if not confirm(report):
            report.declined = True
            for row in report.by_action(WOULD):
                row.skip("not confirmed")
            return report
        if moved is not None:
            _still_as_planned(report, moved, options)
        if report.would_change:
            act(report, log)
    return report


def _still_as_planned(report: NodeReport, moved: Moved, options: ChangeOptions) -> None:
    """Read the planned nodes again (one call); skip, and say so, each one that moved.

    A node returned meanwhile by another run is not resumed again; one drained meanwhile
    keeps that drain's reason. When the read fails nothing is changed.
    """
    rows = report.by_action(WOULD)
    names = HostSet([r.node for r in rows])
    try:
        now = {n.name: n for n in core.read_nodes(names)}
    except SlurmError as exc:
        for r in rows:
            r.action, r.why = FAILED, "could not be read again before the change"
        report.error = f"could not read {names} again before the change: {exc}; nothing changed"
        return
    for r in rows:
        node = now.get(r.node)
        why = "no longer known to Slurm" if node is None else moved(r, node)
        if why:
            r.skip(f"changed since the plan: {why}; left alone")
            r.after = node.state_text if node is not None else "unknown"
            options.say(f"{r.node}: changed since the plan ({why}): left alone")


def change(
    verb: str,
    report: NodeReport,
    log: AuditLog,
    call: core.Call,
    options: ChangeOptions,
    **fields: str,
) -> list[NodeRow]:
    """The planned rows changed by the core (one call); each row worded; the rows done."""
    rows = report.by_action(WOULD)
    points = Points(f"node-{verb}.after-intent", f"node-{verb}.after-change")
    applied = core.apply(verb, rows, log, call, options.reading, points, **fields)
    if applied.refused:
        for r in rows:
            r.action, r.why = FAILED, "the log could not take the intent: nothing done"
        report.error = f"{applied.refused}: {applied.names} left as they were"
        return []
    for r in rows:
        r.action, r.why = _worded(r, applied)
    if not applied.read:
        report.error = f"scontrol {verb} of {applied.names}: {applied.error or applied.read_error}"
        if applied.silent:
            report.error += "; whether it was done is unknown: the next run settles it"
    elif applied.error is not None and not applied.silent:
        report.error = f"scontrol {verb} failed: {applied.error}"
    if applied.log_error:
        report.error = f"{applied.log_error} (the change itself was made: see the table)"
    return [r for r in rows if r.action == DONE]


def _worded(r: NodeRow, applied: core.Applied) -> tuple[str, str]:
    """The table's action and why for a row the core changed."""
    if not applied.read:
        if applied.silent:
            return (
                UNKNOWN,
                f"no answer from Slurm, and the state could not be read: {applied.read_error}",
            )
        if r.result == SENT:
            return UNKNOWN, str(applied.read_error)
        return FAILED, str(applied.error)
    if r.result == UNKNOWN:
        return UNKNOWN, f"read back, the state cannot tell: {r.evidence}"
    ok = r.result == DONE
    if applied.silent:
        return (
            DONE if ok else FAILED
        ), f"no answer from Slurm; read back: {'done' if ok else 'not done'}"
    if ok:
        return DONE, ""
    return FAILED, f"scontrol failed: {applied.error}" if applied.error else "Slurm did not take it"


def rows_for(names: Sequence[str], nodes: Sequence[Node]) -> list[NodeRow]:
    """One row per named node, in the order named; a name Slurm does not know is skipped."""
    known = {n.name: n for n in nodes}
    rows = []
    for name in names:
        node = known.get(name)
        if node is None:
            row = NodeRow(name, "unknown")
            row.skip("not known to Slurm")
        else:
            row = NodeRow(name, node.state_text, node.reason or "")
            row.drained_at = settle.drained_at(node)
        rows.append(row)
    return rows


__all__ = ["DONE", "FAILED", "SKIPPED", "UNKNOWN", "WOULD", "ChangeOptions", "change", "run"]
