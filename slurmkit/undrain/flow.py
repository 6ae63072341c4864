"""Undrain, step by step: select, check, (kill, check again), return in one call, read back.

Slurm is asked at most five times per run, however many nodes: the node
records (``scontrol show node``), the jobs on the candidates (one ``squeue
-w``), the candidates' records again right before the update (a node drained
again meanwhile for another reason is left alone), one batched ``scontrol
update nodename=<folded> state=undrain`` and one read-back. Remote checks run
in parallel through :mod:`slurmkit.remote`.

Undrain is a planner (select by reason, the leftover check, the kill) on top of the
node-change core (:mod:`slurmkit.nodechange.change`), which alone changes the nodes:
intent in the audit log, one update, read back, outcome; and whatever a killed run of
any node command left open is settled by the core before this run plans. The kill is
announced in the same log (``will-kill``, then ``kill``) before any signal is sent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from slurmkit import faultpoint, journal, locks, remote
from slurmkit.errors import SlurmError, UsageError
from slurmkit.hostlist import HostSet
from slurmkit.nodechange import auditlog
from slurmkit.nodechange import change as core
from slurmkit.nodechange import leftovers as chk
from slurmkit.nodechange.auditlog import AuditLog, LogProblem
from slurmkit.nodechange.change import Points, Reading
from slurmkit.nodechange.leftovers import DEFAULT_CHECK_TIMEOUT, HOLDING_STATES, VIA_CHOICES
from slurmkit.nodechange.row import DONE, FAILED, SENT
from slurmkit.remote import RemoteOptions
from slurmkit.remote.command import new_token
from slurmkit.slurm import commands, query
from slurmkit.slurm.records import Node
from slurmkit.undrain import healthgate
from slurmkit.undrain import select as sel
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
# Shared with node resume (the leftover check's): re-exported for undrain's callers.
__all__ = ["DEFAULT_CHECK_TIMEOUT", "HOLDING_STATES", "VIA_CHOICES", "UndrainOptions", "undrain"]


@dataclass(frozen=True)
class UndrainOptions:
    reason: str = sel.DEFAULT_REASON
    nodes: HostSet | None = None  # None: every node (an empty set never gets here)
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
        if self.nodes is not None and not self.nodes:
            raise UsageError("--nodes names no node (an empty list is refused)")

    @property
    def reading(self) -> Reading:
        return Reading(self.notify, self.recheck_within)


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
            auditlog.check(options.log)  # a dry run shows whether the real run could log
        report = _as_report(make_plan(options), dry_run=True)
    else:
        path = options.lock or locks.default_lock_path("undrain")
        with (
            AuditLog.open(options.log) as log,  # first: a bad --log changes nothing
            locks.hold(path, wait=options.lock_wait, what="undrain", notify=options.notify),
        ):
            settled = core.reconcile(log, options.reading)
            plan = make_plan(options)
            if plan.actionable and confirm(plan):
                report = execute(plan, options, log)
            else:
                report = _declined(plan, log)
            report.reconciled = settled
    report.slurm_calls = commands.calls_made() - start
    return report


def make_plan(options: UndrainOptions) -> Plan:
    pattern = sel.compile_reason(options.reason)
    selected = sel.select(query.nodes(options.nodes, exact_reasons=True), pattern)
    eligible = [s.name for s in selected if s.skip is None]
    if eligible:
        jobs = query.jobs(nodelist=HostSet(eligible), states=HOLDING_STATES)
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


def execute(plan: Plan, options: UndrainOptions, log: AuditLog | None = None) -> UndrainReport:
    """Kill (when asked), return the clean nodes with one scontrol call, read their state back.

    Every action is announced in ``log`` (written through) before it is taken; a
    failed announcement raises and the action is not taken. A failed outcome line
    (the action already happened) becomes the report's error instead.
    """
    if log is None:
        with AuditLog.open(options.log) as opened:
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
    noted = core.note(log, [o for o in plan.outcomes if o.action == SKIPPED])
    late += [noted] if noted else []
    if late:
        report.error = "; ".join([*([report.error] if report.error else []), late[0]])
    return report


def _record(log: AuditLog, entries: list[journal.Entry], late: list[str]) -> None:
    """Write outcome records; a failure is kept for the report (the action is done already)."""
    try:
        log.write(entries)
    except LogProblem as exc:
        late.append(f"{exc} (the actions themselves were taken; see the table)")


def _kill_and_recheck(
    targets: list[NodeOutcome], options: UndrainOptions, log: AuditLog, late: list[str]
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
            auditlog.entry(
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
            auditlog.entry(
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
        now = {n.name: n for n in core.read_nodes(HostSet([o.node for o in outcomes]))}
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
    outcomes: list[NodeOutcome], log: AuditLog, late: list[str], options: UndrainOptions
) -> str:
    """The clean nodes returned by the change core (one ``scontrol update ... state=undrain``,
    one read-back); the error text or ""."""
    applied = core.apply(
        "undrain",
        outcomes,
        log,
        core.slurm_call("undrain"),
        options.reading,
        Points("undrain.after-intent", "undrain.after-update"),
    )
    names = applied.names
    if applied.refused:
        for o in outcomes:
            o.action, o.why = NOT_RETURNED, "the log could not take the intent: nothing done"
        return f"{applied.refused}: {names} not returned"
    if applied.log_error:
        late.append(f"{applied.log_error} (the actions themselves were taken; see the table)")
    if not applied.read:
        return _unknown_after(outcomes, applied)
    for o in outcomes:
        o.action, o.why = _worded(o, applied)
    error = applied.error
    if error is None or applied.silent:
        return ""  # a silence read back is answered: the table says what is true
    returned = [o.node for o in outcomes if o.returned]
    missed = [o.node for o in outcomes if not o.returned]
    return (
        f"scontrol update failed: {error}; returned: {HostSet(returned) or 'none'}; "
        f"not returned: {HostSet(missed) or 'none'}"
    )


def _worded(o: NodeOutcome, applied: core.Applied) -> tuple[str, str]:
    """The table's action and why for a node the core read back."""
    error = applied.error
    if o.result == DONE:
        if applied.silent:
            return RETURNED, "scontrol update got no answer; read back: returned"
        node = applied.nodes.get(o.node)
        return RETURNED, _resume_note(node) if node is not None else ""
    if o.result == FAILED:
        if applied.silent:
            return (
                NOT_RETURNED,
                f"scontrol update got no answer ({error}); read back: still drained",
            )
        return NOT_RETURNED, f"scontrol update failed: {error}" if error else "still drained"
    return UNKNOWN_OUTCOME, f"read back, the state cannot tell: {o.evidence}"


def _resume_note(node: Node) -> str:
    """slurmctld marks a node it just resumed NOT_RESPONDING until slurmd answers its ping."""
    if node.is_not_responding:
        return "NOT_RESPONDING until slurmd answers slurmctld's ping (seconds)"
    return ""


def _unknown_after(outcomes: list[NodeOutcome], applied: core.Applied) -> str:
    """The nodes could not be read back: what the table and the error say."""
    names, error, read_error = applied.names, applied.error, applied.read_error
    for o in outcomes:
        if applied.silent:
            o.action = UNKNOWN_OUTCOME
            o.why = f"scontrol update got no answer and the state could not be read: {read_error}"
        elif o.result == SENT:
            o.action, o.why = UNCONFIRMED, f"read-back failed: {read_error}"
        else:
            o.action, o.why = NOT_RETURNED, f"scontrol update failed: {error}"
    if applied.silent:
        return (
            f"scontrol update of {names} got no answer and slurmctld still does not answer "
            f"({read_error}): whether they were returned is unknown; 'slurmkit nodes drained' "
            "shows it, and the next undrain or node command with the same --log records it"
        )
    if error is not None:
        return (
            f"scontrol update failed: {error}; returned: none; not returned: {names} "
            f"(state read-back failed too: {read_error})"
        )
    return (
        f"undrain of {names} was accepted by slurmctld but their state could not be read "
        f"back: {read_error}; check with 'slurmkit nodes drained'"
    )


def _as_report(plan: Plan, *, dry_run: bool = False, aborted: bool = False) -> UndrainReport:
    return UndrainReport(plan.outcomes, dry_run=dry_run, aborted=aborted, transport=plan.transport)


def _declined(plan: Plan, log: AuditLog) -> UndrainReport:
    """Nothing to do, or the user said no: every node stays as it is, and the log says so."""
    aborted = plan.actionable
    for o in plan.by_action(WOULD_RETURN, WOULD_KILL):
        o.skip("not confirmed")
    report = _as_report(plan, aborted=aborted)
    report.error = core.note(log, plan.outcomes)
    return report
