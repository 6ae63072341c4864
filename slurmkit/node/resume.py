"""``node resume NODES``: return nodes drained or down for any reason, after undrain's check.

Unlike ``undrain`` (which picks nodes by a "Kill task failed" reason), the admin names
the nodes. Unless ``--no-check``, each one is first checked in parallel for leftovers
of Slurm jobs with undrain's own check (:mod:`slurmkit.nodechange.leftovers`: cgroup,
slurmstepd ancestry, ``SLURM_JOB_ID`` in the environment; an unreachable node is
unknown, never clean). Processes of a job squeue still lists on the node (a node
DRAINING under a running job) are that job's, not leftovers. A node with leftovers, or
one that cannot be checked, is skipped with what was found (exit 1); the rest return
with one ``scontrol update state=resume``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from slurmkit import remote
from slurmkit.hostlist import HostSet
from slurmkit.node import change
from slurmkit.node.change import ChangeOptions
from slurmkit.node.outcome import DONE, WOULD, NodeReport, NodeRow
from slurmkit.nodechange import leftovers as chk
from slurmkit.nodechange import settle
from slurmkit.nodechange.auditlog import AuditLog
from slurmkit.nodechange.change import slurm_call
from slurmkit.nodechange.leftovers import DEFAULT_CHECK_TIMEOUT, HOLDING_STATES, jobs_by_node
from slurmkit.remote import RemoteOptions
from slurmkit.remote.command import new_token
from slurmkit.slurm import query
from slurmkit.slurm.records import Node

# Flags under which a resume would fight Slurm's own handling of the node.
_LEFT_TO_SLURM = frozenset(
    {"REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERING_UP", "POWERING_DOWN", "POWER_DOWN"}
)


@dataclass(frozen=True)
class ResumeOptions:
    check: bool = True
    via: str = "auto"
    uid_min: int = chk.DEFAULT_UID_MIN
    remote: RemoteOptions = field(default_factory=lambda: RemoteOptions(DEFAULT_CHECK_TIMEOUT))


def _state_skip(node: Node) -> str:
    if "DRAIN" not in node.flags and not node.is_down:
        return ""
    hands_off = sorted(node.flags & _LEFT_TO_SLURM)
    return f"{'+'.join(hands_off)}: left to Slurm" if hands_off else ""


def plan(nodes: HostSet, resume: ResumeOptions) -> NodeReport:
    found = query.nodes(nodes, exact_reasons=True)
    report = NodeReport("resume", change.rows_for(list(nodes), found))
    known = {n.name: n for n in found}
    candidates: list[NodeRow] = []
    for row in report.rows:
        node = known.get(row.node)
        if row.action or node is None:
            continue
        if "DRAIN" not in node.flags and not node.is_down:
            row.action, row.why, row.after = DONE, "not drained or down: nothing to do", row.before
        elif why := _state_skip(node):
            row.skip(why)
        else:
            row.action = WOULD
            candidates.append(row)
    if candidates and resume.check:
        _check(candidates, resume)
    elif candidates:
        for row in candidates:
            row.found = "not checked (--no-check)"
    return report


def _check(rows: list[NodeRow], resume: ResumeOptions) -> None:
    """undrain's leftover check on every candidate in parallel; rows with leftovers skipped."""
    names = [r.node for r in rows]
    running = jobs_by_node(query.jobs(nodelist=HostSet(names), states=HOLDING_STATES), names)
    token = new_token()
    outcome = remote.run(names, chk.check_script(token), via=resume.via, options=resume.remote)
    by_node = {r.node: r for r in rows}
    for result in outcome.results:
        checked = chk.parse_check(result, token, resume.uid_min)
        row = by_node[result.node]
        jobs = {j.split("_")[0] for j in running.get(row.node, [])} | set(running.get(row.node, []))
        left = [p for p in checked.processes if not (p.job and p.job in jobs)]
        if checked.verdict == chk.UNKNOWN:
            row.found = checked.summary
            row.skip("could not be checked")
        elif left:
            row.processes = [str(p) for p in left]
            row.found = f"{len(left)} leftover(s): " + "; ".join(row.processes)
            row.skip("leftovers found: end them (or undrain --kill), then resume")
        else:
            row.found = "no leftovers" + (
                f" (job {', '.join(sorted(jobs))} still running)" if jobs else ""
            )
            if checked.gpu_note:
                row.found += f"; {checked.gpu_note}"


def moved(row: NodeRow, node: Node) -> str:
    """A node returned since the plan is not resumed again; one drained again (another
    reason, or a newer drain) is left with that drain, which nobody checked."""
    if "DRAIN" not in node.flags and not node.is_down:
        return f"returned meanwhile (now {node.state_text}): not resumed again"
    if (node.reason or "", settle.drained_at(node)) != (row.reason, row.drained_at):
        return f"drained again meanwhile ({node.reason or 'no reason shown'})"
    return _state_skip(node)


def resume(
    nodes: HostSet,
    options: ChangeOptions,
    resume_options: ResumeOptions,
    confirm: Callable[[NodeReport], bool],
) -> NodeReport:
    def act(report: NodeReport, log: AuditLog) -> None:
        change.change(
            "resume",
            report,
            log,
            slurm_call("resume"),
            options,
        )

    return change.run("resume", options, lambda: plan(nodes, resume_options), act, confirm, moved)
