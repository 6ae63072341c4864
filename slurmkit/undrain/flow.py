"""Undrain, step by step: select, check, (kill, check again), return in one call, read back.

Slurm is asked at most five times per run, however many nodes: the node
records (``scontrol show node``), the jobs on the candidates (one ``squeue
-w``), the candidates' records again right before the update (a node drained
again meanwhile for another reason is left alone), one batched ``scontrol
update nodename=<folded> state=undrain`` and one read-back. Remote checks run
in parallel through :mod:`slurmkit.remote`.

Intent, act, outcome (issue 22): every kill and every update is announced in
``--log`` (with a token) before it happens and settled after it. An update that
gets no answer is "unknown, checked again": the nodes are read again, bounded
(:mod:`slurmkit.slurm.recheck`), and the checked answer is what the log and the
table say. Intents a killed run left open are settled by the next run with the same
``--log`` before it does anything else (:func:`reconcile`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from slurmkit import faultpoint, journal, locks, remote
from slurmkit.errors import SlurmError, UsageError
from slurmkit.hostlist import fold, targets
from slurmkit.remote import RemoteOptions
from slurmkit.remote.command import new_token
from slurmkit.slurm import commands, query, recheck
from slurmkit.slurm.records import Node
from slurmkit.undrain import actionlog, healthgate, settle
from slurmkit.undrain import check as chk
from slurmkit.undrain import select as sel
from slurmkit.undrain.actionlog import ActionLog, Intent, LogProblem
from slurmkit.undrain.report import (
    NOT_RETURNED,
    RETURNED,
    SKIPPED,
    UNCONFIRMED,
    UNKNOWN_OUTCOME,
    WOULD_KILL,
    WOULD_RETURN,
    NodeOutcome,
    UndrainReport,
)

DEFAULT_GRACE = 30
# Jobs that hold a node. Not squeue's default (it omits SUSPENDED and similar) and not
# "all": the job that caused "Kill task failed" stays listed as finished for MinJobAge.
HOLDING_STATES = (
    "RUNNING",
    "SUSPENDED",
    "COMPLETING",
    "CONFIGURING",
    "STOPPED",
    "SIGNALING",
    "STAGE_OUT",
    "RESIZING",
)
DEFAULT_CHECK_TIMEOUT = 30.0
VIA_CHOICES = ("auto", "pdsh", "ssh")


@dataclass(frozen=True)
class UndrainOptions:
    reason: str = sel.DEFAULT_REASON
    nodes: str | None = None
    kill: bool = False
    grace: int = DEFAULT_GRACE
    uid_min: int = chk.DEFAULT_UID_MIN
    dry_run: bool = False
    via: str = "auto"
    remote: RemoteOptions = field(default_factory=lambda: RemoteOptions(DEFAULT_CHECK_TIMEOUT))
    log: Path | None = None
    lock: Path | None = None
    lock_wait: float = 10.0
    notify: Callable[[str], None] | None = None  # one-line progress and notices (stderr)
    recheck_within: float | None = None  # None: recheck.window(), from MessageTimeout

    def __post_init__(self) -> None:
        if self.grace < 0:
            raise UsageError("--grace must not be negative")
        if self.uid_min < 1:
            raise UsageError("--uid-min must be at least 1 (root is always a system user)")
        if self.via not in VIA_CHOICES:
            raise UsageError(f"--via must be one of {', '.join(VIA_CHOICES)}")
        sel.compile_reason(self.reason)  # bad input fails before anything is asked or locked
        _limit(self)


@dataclass
class Plan:
    """Selection and first check; what will be returned and what must be killed first."""

    outcomes: list[NodeOutcome]
    transport: str | None = None

    def by_action(self, *actions: str) -> list[NodeOutcome]:
        return [o for o in self.outcomes if o.action in actions]

    @property
    def actionable(self) -> bool:
        return bool(self.by_action(WOULD_RETURN, WOULD_KILL))


Confirm = Callable[[Plan], bool]


def undrain(options: UndrainOptions, confirm: Confirm) -> UndrainReport:
    """Run the whole flow; ``confirm`` sees the plan and may say no (nothing is then changed)."""
    start = commands.calls_made()
    if options.dry_run:
        if options.log is not None:
            actionlog.check(options.log)  # a dry run shows whether the real run could log
        report = _as_report(make_plan(options), dry_run=True)
    else:
        path = options.lock or locks.default_lock_path("undrain")
        with (
            actionlog.ActionLog.open(options.log) as log,  # first: a bad --log changes nothing
            locks.hold(path, wait=options.lock_wait, what="undrain", notify=options.notify),
        ):
            settled = reconcile(log, options)
            plan = make_plan(options)
            if plan.actionable and confirm(plan):
                report = execute(plan, options, log)
            else:
                report = _declined(plan, log)
            report.reconciled = settled
    report.slurm_calls = commands.calls_made() - start
    return report


def reconcile(log: ActionLog, options: UndrainOptions) -> list[str]:
    """Settle what a killed run left open in ``--log``: read the nodes, append the outcome.

    A ``will-undrain`` with no outcome is judged by evidence (:mod:`.settle`): ``undrain``
    (not drained, or drained again after the intent), ``undrain-failed`` (the drain it
    saw is still there) or ``undrain-undetermined`` (the state cannot tell), each marked
    ``reconciled=yes`` with its ``evidence=``; a ``will-kill`` becomes ``kill-interrupted`` (whether
    the signals went out is unknown; this run checks the node afresh). When Slurm
    does not answer, the intents stay open for the next run. One line on stderr
    says what was settled. Returns the settled texts (for ``--json``).
    """
    if log.path is None:
        return []
    # The log may be shared with the node commands (the default actions.log): they
    # settle their own will-drain/resume/reboot lines.
    mine = {"will-kill", "will-undrain"}
    intents = [i for i in actionlog.open_intents(log.path) if i.action in mine]
    if not intents:
        return []
    lines: list[str] = []
    settled: list[str] = []
    for intent in (i for i in intents if i.action == "will-kill"):
        for node in intent.nodes:
            lines.append(
                actionlog.entry(node, "kill-interrupted", token=intent.token, reconciled="yes")
            )
            settled.append(f"{node} kill interrupted (checked again now)")
    undrains = [i for i in intents if i.action == "will-undrain"]
    names = sorted({n for i in undrains for n in i.nodes})
    unsettled = ""
    now: dict[str, Node] | None = None
    if names:
        try:
            now = {n.name: n for n in query.nodes(fold(names), exact_reasons=True)}
        except SlurmError as exc:
            unsettled = f"; {fold(names)} not settled ({exc}): they stay open"
    if now is not None:  # the nodes could be read: settle each open undrain
        for intent in undrains:
            for node in intent.nodes:
                line, text = _settle(intent, node, now.get(node))
                lines.append(line)
                settled.append(text)
    log.write(lines)  # before anything else is done: a log that fails here changes nothing
    if options.notify is not None:
        done = "; ".join(settled) or "nothing"
        options.notify(
            f"--log {log.path}: settled what an earlier run left open: {done}{unsettled}"
        )
    return settled


def _settle(intent: Intent, node: str, now: Node | None) -> tuple[str, str]:
    """The outcome line and the stderr text for one node of an open ``will-undrain``.

    Judged by evidence (:mod:`.settle`), not by the state alone: a node drained again
    after the intent was returned by the killed run; one Slurm cannot place is unknown.
    """
    verdict = settle.judge("will-undrain", now, settle.Asked.of(intent.time, intent.fields))
    after = now.state_text if now is not None else "not known to Slurm"
    line = actionlog.entry(
        node,
        _SETTLED[verdict.result],
        token=intent.token,
        before=intent.fields.get("before", ""),
        after=after,
        evidence=verdict.why,
        reconciled="yes",
    )
    return line, f"{node} {_said(verdict)} (now {after})"


# What a settled will-undrain becomes in the log; "undetermined" closes the intent (the
# state could not tell), where "undrain-unknown" (no answer at all) keeps it open.
_SETTLED = {
    settle.DONE: "undrain",
    settle.NOT_DONE: "undrain-failed",
    settle.UNKNOWN: "undrain-undetermined",
}


def _said(verdict: settle.Verdict) -> str:
    if verdict.result == settle.DONE:
        return verdict.why if verdict.why.startswith("returned") else "returned"
    if verdict.result == settle.NOT_DONE:
        return "still drained"
    return f"unknown: {verdict.why}"


def make_plan(options: UndrainOptions) -> Plan:
    pattern = sel.compile_reason(options.reason)
    limit = _limit(options)
    selected = sel.select(query.nodes(limit, exact_reasons=True), pattern)
    eligible = [s.name for s in selected if s.skip is None]
    if eligible:
        jobs = query.jobs(nodelist=fold(eligible), states=HOLDING_STATES)
        selected = sel.apply_jobs(selected, jobs)
    outcomes = {s.name: NodeOutcome.of(s.node) for s in selected}
    for s in selected:
        if s.skip:
            outcomes[s.name].skip(s.skip)
    plan = Plan(list(outcomes.values()))
    to_check = [s.name for s in selected if s.skip is None]
    if to_check:
        plan.transport, results = _check(to_check, options)
        for result in results:
            _judge(outcomes[result.node], result, options.kill)
        # a node slurmkit health drained comes back only once its checks pass on it
        healthgate.gate(plan.outcomes, options.via, options.remote)
    return plan


def _limit(options: UndrainOptions) -> str | None:
    """``--nodes`` folded by our parser (its errors, not scontrol's); None means every node.

    An empty ``--nodes ""`` is refused by :func:`targets`: it must never mean "every node".
    """
    return None if options.nodes is None else str(targets(options.nodes, what="--nodes"))


def _check(nodes: Sequence[str], options: UndrainOptions) -> tuple[str, list[chk.CheckResult]]:
    token = new_token()
    outcome = remote.run(nodes, chk.check_script(token), via=options.via, options=options.remote)
    return outcome.transport, [chk.parse_check(r, token, options.uid_min) for r in outcome.results]


def _judge(outcome: NodeOutcome, result: chk.CheckResult, kill: bool, killed: bool = False) -> None:
    outcome.check = result
    outcome.found = result.summary
    outcome.processes = list(result.processes)
    if result.verdict == chk.CLEAN:
        outcome.action, outcome.why = WOULD_RETURN, ""
    elif result.verdict == chk.UNKNOWN:
        outcome.skip("could not be checked")
    elif kill:
        outcome.action, outcome.why = WOULD_KILL, ""
    elif killed:
        outcome.skip(_survivors(result.processes))
    else:
        outcome.skip("leftovers found (use --kill to end them)")


def _survivors(processes: Sequence[chk.Process]) -> str:
    """Why --kill was not enough; state D is the classic cause of "Kill task failed"."""
    stuck = sum(p.unkillable for p in processes)
    if not stuck:
        return "leftovers survived SIGKILL"
    return (
        f"leftovers survived SIGKILL: {stuck} in state D (blocked in the kernel, usually on "
        "I/O such as a hung network filesystem); they end when the I/O does, else reboot the node"
    )


def execute(plan: Plan, options: UndrainOptions, log: ActionLog | None = None) -> UndrainReport:
    """Kill (when asked), return the clean nodes with one scontrol call, read their state back.

    Every action is announced in ``log`` (written through) before it is taken; a
    failed announcement raises and the action is not taken. A failed outcome line
    (the action already happened) becomes the report's error instead.
    """
    if log is None:
        with ActionLog.open(options.log) as opened:
            return execute(plan, options, opened)
    late: list[str] = []
    to_kill = plan.by_action(WOULD_KILL)
    if to_kill:
        _kill_and_recheck(to_kill, options, log, late)
    report = _as_report(plan)
    to_return = [o for o in plan.outcomes if o.action == WOULD_RETURN]
    if to_return:
        to_return, report.error = _unchanged(to_return)
    if to_return:
        report.error = _return(to_return, log, late, options)
    _record(log, [_skip_entry(o) for o in plan.outcomes if o.action == SKIPPED], late)
    if late:
        report.error = "; ".join([*([report.error] if report.error else []), late[0]])
    return report


def _record(log: ActionLog, lines: list[str], late: list[str]) -> None:
    """Write outcome lines; a failure is kept for the report (the action is done already)."""
    try:
        log.write(lines)
    except LogProblem as exc:
        late.append(f"{exc} (the actions themselves were taken; see the table)")


def _skip_entry(o: NodeOutcome) -> str:
    return actionlog.entry(o.node, "skip", before=o.old_state, why=o.why, found=o.found)


def _kill_and_recheck(
    targets: list[NodeOutcome], options: UndrainOptions, log: ActionLog, late: list[str]
) -> None:
    hosts = Counter(o.check.host for o in targets if o.check)
    killable = []
    for o in targets:
        spared = len(o.processes) - len(chk.signallable(o.processes))
        if not (o.check and o.check.host and hosts[o.check.host] == 1):
            o.skip("leftovers: cannot target them (host name missing or shared with another node)")
        elif spared:
            o.skip(
                f"leftovers: {spared} not signalled (a system user's process named only by "
                "SLURM_JOB_ID in its environment, or no start time): check by hand"
            )
        else:
            killable.append(o)
    if not killable:
        return
    token = new_token()
    script = chk.kill_script(
        token, {o.check.host: o.processes for o in killable if o.check}, options.grace
    )
    kill_options = _with_timeout(options.remote, options.remote.timeout + options.grace + 5)
    intent = journal.new_token()
    try:
        log.write(
            actionlog.entry(
                o.node,
                "will-kill",
                before=o.old_state,
                pids=" ".join(str(p.pid) for p in chk.signallable(o.processes)),
                token=intent,
            )
            for o in killable
        )
    except LogProblem as exc:
        for o in killable:
            o.skip(f"not killed: {exc}")
        late.append(f"{exc} (nothing was killed)")
        return
    results = remote.run([o.node for o in killable], script, via=options.via, options=kill_options)
    faultpoint.reached("undrain.after-kill")
    done = []
    for o, result in zip(killable, results.results, strict=True):
        o.killed, error = chk.parse_kill(result, token)
        done.append(
            actionlog.entry(
                o.node,
                "kill",
                before=o.old_state,
                signals=" ".join(o.killed) or "none",
                error=error,
                token=intent,
            )
        )
    _record(log, done, late)
    _, rechecked = _check([o.node for o in killable], options)
    for o, checked in zip(killable, rechecked, strict=True):
        _judge(o, checked, kill=False, killed=True)
        if o.killed:
            o.found = f"killed {', '.join(o.killed)}; now: {checked.summary}"


def _with_timeout(options: RemoteOptions, timeout: float) -> RemoteOptions:
    from dataclasses import replace

    return replace(options, timeout=timeout)


def _unchanged(outcomes: list[NodeOutcome]) -> tuple[list[NodeOutcome], str]:
    """The nodes still as the check saw them, read again in one call right before the update.

    The check (and a kill's grace) takes seconds; meanwhile an admin may drain a node
    again for another reason, or return it. Such a node is left alone with the reason
    why, never returned on the strength of the old reason. Returns (unchanged nodes,
    error text): when the re-read fails, nothing is returned.
    """
    try:
        now = {n.name: n for n in query.nodes(fold([o.node for o in outcomes]), exact_reasons=True)}
    except SlurmError as exc:
        for o in outcomes:
            o.action, o.why = NOT_RETURNED, f"could not read the node again: {exc}"
        return [], f"could not read the nodes again before the update: {exc}; nothing returned"
    same = []
    for o in outcomes:
        changed = _change(o, now.get(o.node))
        if changed:
            o.skip(f"{changed}: left alone")
        else:
            same.append(o)
    return same, ""


def _change(o: NodeOutcome, now: Node | None) -> str:
    """How the node differs from what was checked, or ""."""
    if now is None:
        return "no longer known to Slurm"
    if "DRAIN" not in now.flags:
        return f"no longer drained (now {now.state_text})"
    before = o.record
    if before is not None and (now.reason, now.reason_user, now.reason_time) != (
        before.reason,
        before.reason_user,
        before.reason_time,
    ):
        return f"reason changed since the check (now: {now.reason!r})"
    moved = sel.state_skip(now)
    return f"state changed since the check ({moved})" if moved else ""


def _return(
    outcomes: list[NodeOutcome], log: ActionLog, late: list[str], options: UndrainOptions
) -> str:
    """One ``scontrol update ... state=undrain``, one read-back; the error text or ""."""
    names = fold([o.node for o in outcomes])
    token = journal.new_token()
    try:
        log.write(
            actionlog.entry(
                o.node,
                "will-undrain",
                before=o.old_state,
                found=o.found,
                token=token,
                **_drain_date(o),
            )
            for o in outcomes
        )
    except LogProblem as exc:
        for o in outcomes:
            o.action, o.why = NOT_RETURNED, "the log could not take the intent: nothing done"
        return f"{exc}: {names} not returned"
    done: list[str] = []
    try:
        return _update_and_read_back(outcomes, names, done, token, options)
    finally:
        _record(log, done, late)


def _drain_date(o: NodeOutcome) -> dict[str, str]:
    """``drained_at=``: the date of the drain this undrain clears, the settle judge's anchor."""
    seen = settle.drained_at(o.record) if o.record is not None else ""
    return {"drained_at": seen} if seen else {}


def _update_and_read_back(
    outcomes: list[NodeOutcome],
    names: str,
    log: list[str],
    token: str = "",
    options: UndrainOptions | None = None,
) -> str:
    update_error: SlurmError | None = None
    try:
        query.update_node_state(names, "undrain")
    except SlurmError as exc:
        update_error = exc
    faultpoint.reached("undrain.after-update")
    silent = update_error is not None and recheck.no_answer(update_error)
    if silent:
        # "No answer" is not "not done": slurmctld may carry the update out when it wakes.
        found, read_error = recheck.read_again(
            lambda: query.nodes(names, exact_reasons=True),
            what=f"the state of {names}",
            notify=options.notify if options else None,
            within=options.recheck_within if options else None,
        )
    else:
        try:
            found, read_error = query.nodes(names, exact_reasons=True), None
        except SlurmError as exc:
            found, read_error = None, exc
    if found is None:
        assert read_error is not None
        return _unknown_after(outcomes, update_error, read_error, log, token, silent)
    after = {n.name: n for n in found}
    for o in outcomes:
        node = after.get(o.node)
        o.new_state = node.state_text if node else "unknown"
        if node is not None and "DRAIN" not in node.flags:
            o.action, o.why = RETURNED, _resume_note(node)
            if silent:
                o.why = "scontrol update got no answer; read back: returned"
        else:
            o.action = NOT_RETURNED
            o.why = f"scontrol update failed: {update_error}" if update_error else "still drained"
            if silent:
                o.why = f"scontrol update got no answer ({update_error}); read back: still drained"
        log.append(
            actionlog.entry(
                o.node,
                "undrain" if o.returned else "undrain-failed",
                before=o.old_state,
                after=o.new_state,
                found=o.found,
                token=token,
                **({"checked": "after-no-answer"} if silent else {}),
            )
        )
    if update_error is None or silent:
        return ""  # a silence read back is answered: the table says what is true
    returned = [o.node for o in outcomes if o.returned]
    missed = [o.node for o in outcomes if not o.returned]
    return (
        f"scontrol update failed: {update_error}; returned: {fold(returned) or 'none'}; "
        f"not returned: {fold(missed) or 'none'}"
    )


def _resume_note(node: Node) -> str:
    """slurmctld marks a node it just resumed NOT_RESPONDING until slurmd answers its ping."""
    if node.is_not_responding:
        return "NOT_RESPONDING until slurmd answers slurmctld's ping (seconds)"
    return ""


def _unknown_after(
    outcomes: list[NodeOutcome],
    update_error: SlurmError | None,
    read_error: SlurmError,
    log: list[str],
    token: str = "",
    silent: bool = False,
) -> str:
    names = fold([o.node for o in outcomes])
    for o in outcomes:
        o.new_state = "unknown"
        if silent:
            o.action = UNKNOWN_OUTCOME
            o.why = f"scontrol update got no answer and the state could not be read: {read_error}"
            action = "undrain-unknown"
        elif update_error is not None:
            o.action, o.why = NOT_RETURNED, f"scontrol update failed: {update_error}"
            action = "undrain-failed"
        else:
            o.action, o.why = UNCONFIRMED, f"read-back failed: {read_error}"
            action = "undrain-sent"
        log.append(
            actionlog.entry(
                o.node, action, before=o.old_state, after="unknown", found=o.found, token=token
            )
        )
    if silent:
        return (
            f"scontrol update of {names} got no answer and slurmctld still does not answer "
            f"({read_error}): whether they were returned is unknown; 'slurmkit nodes drained' "
            "shows it, and the next undrain with the same --log records it"
        )
    if update_error is not None:
        return (
            f"scontrol update failed: {update_error}; returned: none; not returned: {names} "
            f"(state read-back failed too: {read_error})"
        )
    return (
        f"undrain of {names} was accepted by slurmctld but their state could not be read "
        f"back: {read_error}; check with 'slurmkit nodes drained'"
    )


def _as_report(plan: Plan, *, dry_run: bool = False, aborted: bool = False) -> UndrainReport:
    return UndrainReport(plan.outcomes, dry_run=dry_run, aborted=aborted, transport=plan.transport)


def _declined(plan: Plan, log: ActionLog) -> UndrainReport:
    """Nothing to do, or the user said no: every node stays as it is, and the log says so."""
    aborted = plan.actionable
    for o in plan.by_action(WOULD_RETURN, WOULD_KILL):
        o.skip("not confirmed")
    report = _as_report(plan, aborted=aborted)
    late: list[str] = []
    _record(log, [_skip_entry(o) for o in plan.outcomes], late)
    report.error = late[0] if late else ""
    return report
