"""Drain the nodes a scan found failing: reason ``slurmkit: <check> failed``, batched.

One ``scontrol update nodename=<folded> state=drain reason=...`` per distinct
reason (nodes that failed the same checks share one call), then one read-back.
Nodes already drained or down keep their state and the reason an admin gave them:
they are left alone and listed. Unknown nodes (no result) are never drained.

Intent first (issue 22): the drain is written, with a token, to a journal beside the
default exclude list (``$XDG_STATE_HOME/slurmkit/faulty-drain.journal``, see
:func:`journal_path`) and fsynced before any update; the outcome follows the
read-back. An update that gets no answer is "unknown, checked again": the nodes are
read again (bounded) and the states found are the answer. A run killed in between,
or one that never got an answer, is settled by the next ``faulty scan --drain``
(:func:`reconcile`), in one line on stderr.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from slurmkit import faultpoint, stderr
from slurmkit.errors import ControllerUnreachable, SlurmError
from slurmkit.faulty.report import DrainOutcome, ScanReport
from slurmkit.hostlist import HostSet, expand, fold
from slurmkit.journal import Journal
from slurmkit.slurm import query, recheck

REASON_LIMIT = 200
JOURNAL_NAME = "faulty-drain.journal"
DRAIN = "drain"
Confirm = Callable[[DrainOutcome], bool]
Notify = Callable[[str], None]


def reason_for(checks: list[str]) -> str:
    reason = f"slurmkit: {','.join(checks)} failed"
    return reason if len(reason) <= REASON_LIMIT else reason[: REASON_LIMIT - 1] + "…"


def journal_path() -> Path:
    """Beside the default exclude list: the state a scan already keeps for its user."""
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
    return outcome


def _open_journal() -> Journal:
    from slurmkit.trust import private_dir

    path = journal_path()
    private_dir(path.parent, what="state directory")
    return Journal(path)


def reconcile(journal: Journal, notify: Notify = stderr.say) -> list[str]:
    """Settle drains an earlier run left open: read the nodes, record and say what is true.

    A node now drained counts as drained (by that run or anyone); without an answer
    from Slurm the intent stays open.
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


def execute(
    outcome: DrainOutcome,
    confirm: Confirm,
    *,
    journal: Journal | None = None,
    notify: Notify = stderr.say,
) -> DrainOutcome:
    """Drain the planned nodes unless dry run or declined; read their states back.

    What an earlier run left open is settled first, even when this run has nothing to
    drain: the node a killed run drained is planned as "already drained" now, and
    settling only when there is something new to drain left that intent open for good.
    """
    if outcome.dry_run:
        return outcome
    journal = journal if journal is not None else _open_journal()
    reconcile(journal, notify)
    if not outcome.groups:
        return outcome
    if not confirm(outcome):
        outcome.declined = True
        return outcome
    journal.check_writable()  # no record, no drain
    groups = {reason: fold(nodes) for reason, nodes in outcome.groups.items()}
    token = journal.intent(DRAIN, nodes=fold(outcome.nodes), groups=groups)
    silent: SlurmError | None = None
    for reason, nodes in outcome.groups.items():
        try:
            query.update_node_state(HostSet(nodes), "drain", reason)
        except SlurmError as exc:
            if not recheck.no_answer(exc):
                journal.outcome(token, DRAIN, "failed", error=str(exc))
                raise
            silent = exc
    faultpoint.reached("faulty-drain.after-update")
    outcome.done = True
    hosts = HostSet(outcome.nodes)
    names = str(hosts)
    if silent is None:
        found = query.nodes(hosts)
    else:
        answer, error = recheck.read_again(
            lambda: query.nodes(hosts), what=f"the state of {names}", notify=notify
        )
        if answer is None:
            outcome.states = {n: "unknown" for n in outcome.nodes}
            raise ControllerUnreachable(
                f"scontrol update (drain {names}) got no answer and Slurm still does not answer "
                f"({error}): whether they were drained is unknown; the next `faulty scan "
                f"--drain` settles it ({journal.path})"
            )
        found = answer
    outcome.states = {n.name: n.state_text for n in found}
    journal.outcome(token, DRAIN, "done", states=outcome.states)
    return outcome
