"""The one way slurmkit changes a node's state in Slurm: intent, one call, read back, outcome.

``node drain|resume|reboot`` and ``undrain`` plan in their own ways; the change itself is
here, once (issue 22's discipline, issue 30: it was written twice):

1. every node's ``will-<verb>`` record, with one token, is written and fsynced to the
   audit log (:mod:`.auditlog`); a log that cannot take it means nothing is done;
2. a faultpoint (``points.intent``), then one Slurm call for all the nodes (the callers
   take one reason per run, so one ``scontrol update`` per (state, reason));
3. a faultpoint (``points.update``), so tests can kill the run right there;
4. the nodes are read back (read again, bounded, when the call got no answer: "no
   answer" is not "not done"), each judged by :mod:`.settle`, and each node's outcome
   is written: ``<verb>``, ``<verb>-failed``, or ``<verb>-unknown`` / ``<verb>-sent``,
   which keep the intent open.

Whatever a killed run left open is settled by the next run of *any* node command
(:func:`reconcile`), before it plans: the judges date each intent by its own stamp.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from slurmkit import faultpoint, journal
from slurmkit.errors import SlurmError
from slurmkit.hostlist import HostSet
from slurmkit.nodechange import auditlog, settle
from slurmkit.nodechange.auditlog import AuditLog, LogProblem
from slurmkit.nodechange.row import DONE, FAILED, SENT, UNKNOWN, Row
from slurmkit.slurm import nodeops, query, recheck
from slurmkit.slurm.records import Node

Notify = Callable[[str], None]
VERBS = ("drain", "resume", "reboot", "undrain")


@dataclass(frozen=True)
class Points:
    """The faultpoints around the call: after the intent is on disk, after the call."""

    intent: str
    update: str


@dataclass(frozen=True)
class Reading:
    """How a change reads the nodes back: progress notices, and the bound on a re-read."""

    notify: Notify | None = None
    within: float | None = None  # None: recheck.window(), from MessageTimeout

    def say(self, message: str) -> None:
        if self.notify is not None:
            self.notify(message)


@dataclass
class Applied:
    """What one change learned: the call's error, the read-back's, and whether Slurm was silent.

    ``log_error``: the outcome records could not be written (the change itself was made).
    ``refused``: the intent could not be written, so nothing was done.
    """

    names: HostSet
    error: SlurmError | None = None
    read_error: SlurmError | None = None
    silent: bool = False
    read: bool = False
    refused: str = ""
    log_error: str = ""
    nodes: dict[str, Node] = field(default_factory=dict)  # as read back


Call = Callable[[HostSet], None]
_STATES = {"drain": "drain", "resume": "resume", "undrain": "undrain"}


def slurm_call(verb: str, *, reason: str | None = None, asap: bool = False) -> Call:
    """The one Slurm call of each verb, for all the nodes at once: ``scontrol update
    nodename=<set> state=<verb> [reason=R]``, or ``scontrol reboot [ASAP] [reason=R] <set>``.
    Only :func:`apply` runs it: no other code changes a node's state."""
    if verb == "reboot":
        return lambda names: nodeops.reboot(names, asap=asap, reason=reason)
    state = _STATES[verb]
    return lambda names: query.update_node_state(names, state, reason)


def apply(
    verb: str,
    rows: Sequence[Row],
    log: AuditLog,
    call: Call,
    reading: Reading,
    points: Points,
    **fields: str,
) -> Applied:
    """Intent, one ``call(nodes)``, read-back, outcome, for ``rows``; each row's ``result`` set."""
    names = HostSet([r.node for r in rows])
    applied = Applied(names)
    token = journal.new_token()
    asked_at = now()
    try:
        log.write(_intent(r, verb, token, fields) for r in rows)
    except LogProblem as exc:
        applied.refused = str(exc)
        return applied
    faultpoint.reached(points.intent)
    try:
        call(names)
    except SlurmError as exc:
        applied.error = exc
    faultpoint.reached(points.update)
    found = _read_back(applied, reading)
    for r in rows:
        _judge(r, verb, found, applied, asked_at, fields)
    try:
        log.write(_outcome(r, verb, token, applied.silent) for r in rows)
    except LogProblem as exc:
        applied.log_error = str(exc)
    return applied


def _intent(r: Row, verb: str, token: str, fields: Mapping[str, str]) -> journal.Entry:
    extra = {"drained_at": r.drained_at} if r.drained_at else {}
    if r.found not in ("", "-"):
        extra["found"] = r.found
    return auditlog.entry(r.node, f"will-{verb}", token=token, before=r.before, **fields, **extra)


_WORD = {DONE: "", FAILED: "-failed", UNKNOWN: "-unknown", SENT: "-sent"}


def _outcome(r: Row, verb: str, token: str, silent: bool) -> journal.Entry:
    extra = {"evidence": r.evidence} if r.evidence else {}
    if silent:
        extra["checked"] = "after-no-answer"
    return auditlog.entry(
        r.node, verb + _WORD[r.result], token=token, before=r.before, after=r.after, **extra
    )


def _judge(
    r: Row,
    verb: str,
    found: dict[str, Node] | None,
    applied: Applied,
    asked_at: datetime,
    fields: Mapping[str, str],
) -> None:
    if found is None:
        r.after = "unknown"
        if applied.silent:
            r.result = UNKNOWN
        else:
            r.result = FAILED if applied.error else SENT
        return
    node = found.get(r.node)
    r.after = node.state_text if node else "not known to Slurm"
    asked = settle.Asked(
        asked_at, {**fields, **({"drained_at": r.drained_at} if r.drained_at else {})}
    )
    verdict = settle.judge(f"will-{verb}", node, asked)
    r.evidence = verdict.why
    if verdict.result == settle.UNKNOWN and (applied.error is None or applied.silent):
        r.result = UNKNOWN  # the intent stays open for the next run
    else:
        r.result = DONE if verdict.result == settle.DONE else FAILED


def _read_back(applied: Applied, reading: Reading) -> dict[str, Node] | None:
    names = applied.names
    applied.silent = applied.error is not None and recheck.no_answer(applied.error)
    found: list[Node] | None
    if applied.silent:
        found, applied.read_error = recheck.read_again(
            lambda: query.nodes(names, exact_reasons=True),
            what=f"the state of {names}",
            notify=reading.notify,
            within=reading.within,
        )
    else:
        try:
            found = query.nodes(names, exact_reasons=True)
        except SlurmError as exc:
            found, applied.read_error = None, exc
    applied.read = found is not None
    applied.nodes = {n.name: n for n in found or ()}
    return None if found is None else applied.nodes


def reconcile(log: AuditLog, reading: Reading) -> list[str]:
    """Settle every intent a killed run left open in the log, whichever command wrote it.

    The nodes are read (one call); each ``will-<verb>`` is judged by evidence against its
    own stamp (:mod:`.settle`) and gets an outcome marked ``reconciled=yes``: ``<verb>``,
    ``<verb>-failed`` or, when the state cannot tell, ``<verb>-undetermined``. An
    interrupted ``will-kill`` becomes ``kill-interrupted`` (whether the signals went out is
    unknown; undrain checks the node afresh). Without an answer from Slurm the others stay
    open. One line on stderr says what was settled; the settled texts are returned.
    """
    if log.path is None:
        return []
    intents = auditlog.open_intents(log.path)
    kills = [i for i in intents if i.action == "will-kill"]
    judged = [i for i in intents if i.action.removeprefix("will-") in VERBS]
    if not kills and not judged:
        return []
    entries, settled = _kills_interrupted(kills)
    names = sorted({n for i in judged for n in i.nodes})
    unsettled = ""
    if names:
        try:
            now_ = {n.name: n for n in query.nodes(HostSet(names), exact_reasons=True)}
        except SlurmError as exc:
            unsettled = f"{HostSet(names)}: an earlier change is still unknown ({exc})"
        else:
            for intent in judged:
                for name in intent.nodes:
                    entry, text = _settle(intent, name, now_.get(name))
                    entries.append(entry)
                    settled.append(text)
    log.write(entries)  # before anything else: a log that fails here changes nothing
    said = "; ".join(settled)
    if said:
        reading.say(f"--log {log.path}: settled what an earlier run left open: {said}")
    if unsettled:
        reading.say(f"--log {log.path}: {unsettled}")
    return settled


def _kills_interrupted(kills: list[auditlog.Intent]) -> tuple[list[journal.Entry], list[str]]:
    entries, settled = [], []
    for intent in kills:
        for node in intent.nodes:
            entries.append(
                auditlog.entry(node, "kill-interrupted", token=intent.token, reconciled="yes")
            )
            settled.append(f"{node} kill interrupted (checked again now)")
    return entries, settled


def _settle(intent: auditlog.Intent, name: str, node: Node | None) -> tuple[journal.Entry, str]:
    verb = intent.action.removeprefix("will-")
    verdict = settle.judge(intent.action, node, settle.Asked.of(intent.time, intent.fields))
    after = node.state_text if node else "not known to Slurm"
    entry = auditlog.entry(
        name,
        verb + _SETTLED[verdict.result],
        token=intent.token,
        before=intent.fields.get("before", ""),
        after=after,
        evidence=verdict.why,
        reconciled="yes",
    )
    return entry, f"{name} {verb} {verdict.result}: {verdict.why} (now {after})"


# The outcome word a settled intent gets after its verb; "-undetermined" closes the intent.
_SETTLED = {settle.DONE: "", settle.NOT_DONE: "-failed", settle.UNKNOWN: "-undetermined"}


def now() -> datetime:
    """The intent's stamp as the log writes it: whole seconds, local offset."""
    return datetime.now().astimezone().replace(microsecond=0)


def note(log: AuditLog, rows: Sequence[Row]) -> str:
    """A ``skip`` note per row left alone, with why; the error text, or "" (nothing changed)."""
    try:
        log.write(
            auditlog.entry(r.node, "skip", before=r.before, why=r.why, found=r.found) for r in rows
        )
    except LogProblem as exc:
        return f"{exc} (the actions themselves were taken; see the table)"
    return ""


def read_nodes(nodes: HostSet) -> list[Node]:
    """The nodes as Slurm has them now, with exact reasons (one call)."""
    return query.nodes(nodes, exact_reasons=True)
