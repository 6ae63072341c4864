"""The one way a node command changes Slurm: intent in --log, one call, outcome after.

``node drain``, ``resume`` and ``reboot`` differ only in how they plan (which nodes,
what the leftover check or the config says) and in the Slurm call that acts. The rest
is here, shared: the dry run, the lock, settling what a killed run left open in the
same ``--log``, the confirm callback, and the change itself (issue 22's discipline):

1. every node's ``will-<verb>`` line, with one token, is written and fsynced to
   ``--log`` (undrain's :mod:`slurmkit.undrain.actionlog`: same format, same checks);
   a log that cannot take it means nothing is done;
2. one Slurm call for all nodes (one per reason: these commands take one reason);
3. a faultpoint ``node-<verb>.after-change``, so tests can kill the run right there;
4. the nodes are read back (read again, bounded, when the call got no answer: "no
   answer" is not "not done") and each node's outcome line is written.

An outcome that cannot be known (no answer, and no read-back either) writes no
outcome line: the intent stays open and the next run with the same ``--log`` settles it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from slurmkit import faultpoint, journal, locks
from slurmkit.errors import SlurmError
from slurmkit.hostlist import fold
from slurmkit.node.outcome import DONE, FAILED, SKIPPED, UNKNOWN, WOULD, NodeReport, NodeRow
from slurmkit.slurm import query, recheck
from slurmkit.slurm.records import Node
from slurmkit.undrain import actionlog, settle
from slurmkit.undrain.actionlog import ActionLog, LogProblem

Notify = Callable[[str], None]
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

    def say(self, message: str) -> None:
        if self.notify is not None:
            self.notify(message)


Moved = Callable[[NodeRow, Node], str]  # why a planned row no longer holds, or ""


def run(
    verb: str,
    options: ChangeOptions,
    plan: Callable[[], NodeReport],
    act: Callable[[NodeReport, ActionLog], None],
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
            actionlog.check(options.log)  # would the real run be able to log?
        report = plan()
        report.dry_run = True
        return report
    path = options.lock or locks.default_lock_path("node")
    with (
        ActionLog.open(options.log) as log,  # first: a bad --log changes nothing
        locks.hold(path, wait=options.lock_wait, what="node"),
    ):
        settled = reconcile(log, options)
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
    names = fold([r.node for r in rows])
    try:
        now = {n.name: n for n in query.nodes(names, exact_reasons=True)}
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


def verdict(
    verb: str, node: Node | None, asked_at: datetime, row: NodeRow, fields: Mapping[str, str]
) -> settle.Verdict:
    """Did the change take, going by the node read back? The settle table's judge.

    A reboot read back IDLE is not proof (it is also how a node looks whose request never
    left): only a reboot flag or a boot at or after the intent is.
    """
    asked = settle.Asked(asked_at, {**fields, **_dated(row)})
    return settle.judge(f"will-{verb}", node, asked)


def change(
    verb: str,
    report: NodeReport,
    log: ActionLog,
    call: Callable[[str], None],
    options: ChangeOptions,
    **fields: str,
) -> list[NodeRow]:
    """Intent, one ``call(folded names)``, faultpoint, read-back, outcome; the rows changed."""
    rows = report.by_action(WOULD)
    names = fold([r.node for r in rows])
    token = journal.new_token()
    asked_at = _now()
    try:
        log.write(
            actionlog.entry(
                r.node, f"will-{verb}", before=r.before, token=token, **fields, **_dated(r)
            )
            for r in rows
        )
    except LogProblem as exc:
        for r in rows:
            r.action, r.why = FAILED, "the log could not take the intent: nothing done"
        report.error = f"{exc}: {names} left as they were"
        return []
    error: SlurmError | None = None
    try:
        call(names)
    except SlurmError as exc:
        error = exc
    faultpoint.reached(f"node-{verb}.after-change")
    found, read_error, silent = _read_back(names, error, options)
    lines: list[str] = []
    if found is None:
        for r in rows:
            r.after = "unknown"
            if silent:
                r.action = UNKNOWN
                r.why = f"no answer from Slurm, and the state could not be read: {read_error}"
            else:
                r.action, r.why = (FAILED, str(error)) if error else (UNKNOWN, str(read_error))
                if error:
                    lines.append(_outcome(r, verb, token, ok=False))
        report.error = f"scontrol {verb} of {names}: {error or read_error}" + (
            "; whether it was done is unknown: the next run with this --log settles it"
            if silent
            else ""
        )
    else:
        now = {n.name: n for n in found}
        for r in rows:
            node = now.get(r.node)
            r.after = node.state_text if node else "not known to Slurm"
            judged = verdict(verb, node, asked_at, r, fields)
            if judged.result == settle.UNKNOWN and (error is None or silent):
                r.action = UNKNOWN  # no outcome line: the intent stays open for the next run
                r.why = f"read back, the state cannot tell: {judged.why}"
                continue
            ok = judged.result == settle.DONE
            r.action = DONE if ok else FAILED
            if silent:
                r.why = f"no answer from Slurm; read back: {'done' if ok else 'not done'}"
            elif not ok:
                r.why = f"scontrol failed: {error}" if error else "Slurm did not take it"
            lines.append(
                _outcome(
                    r, verb, token, ok=ok, **({"checked": "after-no-answer"} if silent else {})
                )
            )
        if error is not None and not silent:
            report.error = f"scontrol {verb} failed: {error}"
    try:
        log.write(lines)
    except LogProblem as exc:
        report.error = f"{exc} (the change itself was made: see the table)"
    return [r for r in rows if r.action == DONE]


def _outcome(row: NodeRow, verb: str, token: str, *, ok: bool, **fields: str) -> str:
    return actionlog.entry(
        row.node,
        verb if ok else f"{verb}-failed",
        token=token,
        before=row.before,
        after=row.after,
        **fields,
    )


def _read_back(
    names: str, error: SlurmError | None, options: ChangeOptions
) -> tuple[list[Node] | None, SlurmError | None, bool]:
    silent = error is not None and recheck.no_answer(error)
    if silent:
        found, read_error = recheck.read_again(
            lambda: query.nodes(names, exact_reasons=True),
            what=f"the state of {names}",
            notify=options.notify,
            within=options.recheck_within,
        )
        return found, read_error, True
    try:
        return query.nodes(names, exact_reasons=True), None, False
    except SlurmError as exc:
        return None, exc, False


def reconcile(log: ActionLog, options: ChangeOptions) -> list[str]:
    """Settle ``will-drain|resume|reboot`` lines a killed run left open in ``--log``.

    The nodes are read (one call); each intent is judged by evidence against its own
    stamp (:mod:`slurmkit.undrain.settle`: a reboot by its flag or a later BootTime, a
    resume by the drain's date), and gets an outcome line marked ``reconciled=yes``:
    ``<verb>``, ``<verb>-failed`` or, when the state cannot tell, ``<verb>-undetermined``.
    Without an answer from Slurm they stay open. One line on stderr says what was settled.
    """
    if log.path is None:
        return []
    intents = [
        i for i in actionlog.open_intents(log.path) if i.action.removeprefix("will-") in VERBS
    ]
    names = sorted({n for i in intents for n in i.nodes})
    if not names:
        return []
    try:
        now = {n.name: n for n in query.nodes(fold(names), exact_reasons=True)}
    except SlurmError as exc:
        options.say(f"--log {log.path}: {fold(names)}: an earlier change is still unknown ({exc})")
        return []
    lines, settled = [], []
    for intent in intents:
        verb = intent.action.removeprefix("will-")
        asked = settle.Asked.of(intent.time, intent.fields)
        for name in intent.nodes:
            node = now.get(name)
            verdict = settle.judge(intent.action, node, asked)
            after = node.state_text if node else "not known to Slurm"
            lines.append(
                actionlog.entry(
                    name,
                    verb + _SETTLED[verdict.result],
                    token=intent.token,
                    before=intent.fields.get("before", ""),
                    after=after,
                    evidence=verdict.why,
                    reconciled="yes",
                )
            )
            settled.append(f"{name} {verb} {verdict.result}: {verdict.why} (now {after})")
    log.write(lines)  # before anything else: a log that fails here changes nothing
    options.say(f"--log {log.path}: settled what an earlier run left open: {'; '.join(settled)}")
    return settled


# The outcome word a settled intent gets after its verb; "-undetermined" closes the intent.
_SETTLED = {settle.DONE: "", settle.NOT_DONE: "-failed", settle.UNKNOWN: "-undetermined"}


def _now() -> datetime:
    """The intent's stamp as the log writes it: whole seconds, local offset."""
    return datetime.now().astimezone().replace(microsecond=0)


def _dated(row: NodeRow) -> dict[str, str]:
    """``drained_at=``: the date of the drain a resume clears, the settle judge's anchor."""
    return {"drained_at": row.drained_at} if row.drained_at else {}


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
