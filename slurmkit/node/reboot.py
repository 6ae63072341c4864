"""``node reboot NODES``: the seed's ``scontrol reboot ASAP``, checked first and followed after.

Before anything: ``RebootProgram`` must be set (``scontrol show config``); without it
slurmctld accepts the request and the nodes wait in REBOOT_REQUESTED for nothing, so
that is one line and exit 2, nothing issued. Then one ``scontrol reboot [ASAP]
[reason=R] NODES`` for all of them (intent first, :mod:`.change`; at most 3 s later
when a node booted just now, see ``FRESH_BOOT``), and the nodes are
followed, polling with a bound, through REBOOT_REQUESTED and REBOOT_ISSUED until they
are back (no reboot flag, not down, answering, booted after the request), with one
line on stderr per change of state. A node not back within ``--timeout`` is reported,
exit 1. With ``--validate CHECKS`` the nodes that came back are scanned by ``faulty
scan`` and those that fail are drained by it (its own journal and reason).

A DOWN node is skipped: Slurm silently ignores a reboot request for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from slurmkit.errors import EnvironmentProblem, SlurmError, UsageError
from slurmkit.hostlist import HostSet
from slurmkit.node import change
from slurmkit.node.change import ChangeOptions, Notify
from slurmkit.node.drain import check_reason
from slurmkit.node.outcome import DONE, FAILED, WOULD, NodeReport, NodeRow
from slurmkit.nodechange.auditlog import AuditLog
from slurmkit.nodechange.change import slurm_call
from slurmkit.slurm import nodeops, query
from slurmkit.slurm.records import Node

REBOOT_FLAGS = frozenset({"REBOOT_REQUESTED", "REBOOT_ISSUED"})
DEFAULT_TIMEOUT = 600.0
DEFAULT_POLL = 2.0
# slurmd reports its uptime in whole seconds; a boot this close before the request counts.
_BOOT_SLACK = timedelta(seconds=2)
# slurmctld waits for a rebooted node only while its boot time is before the request, and
# takes a node that answers the request as back otherwise: a node that booted in the same
# second, or the next (whole-second uptimes, recomputed at each registration), is left
# IDLE+REBOOT_ISSUED for good and never reboots (node_mgr.c waiting_for_node_boot; seen
# live on 22.05.8 with back-to-back reboots). So a request waits until the newest boot
# is this old: at most 3 s, and only for a node that has just come back.
FRESH_BOOT = timedelta(seconds=3)


@dataclass(frozen=True)
class RebootOptions:
    asap: bool = False
    reason: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    poll: float = DEFAULT_POLL
    validate: tuple[str, ...] = ()
    follow: bool = True

    def __post_init__(self) -> None:
        if not (0 < self.timeout < 1e7) or not (0 < self.poll < 1e7):
            raise UsageError("--timeout and --poll must be positive seconds")
        if self.reason is not None:
            check_reason(self.reason)


NO_PROGRAM = (
    "RebootProgram is not set in slurm.conf (scontrol show config): slurmctld would accept "
    "the reboot and the nodes would wait in REBOOT_REQUESTED for ever; set RebootProgram "
    "(e.g. /sbin/reboot) and run 'scontrol reconfigure'; nothing was issued"
)


def require_program(config: dict[str, str]) -> str:
    """The configured RebootProgram, or the one-line refusal (exit 2)."""
    program = nodeops.reboot_program(config)
    if program is None:
        raise EnvironmentProblem(NO_PROGRAM)
    return program


def plan(nodes: HostSet, options: RebootOptions) -> NodeReport:
    program = require_program(nodeops.show_config())
    found = query.nodes(nodes, exact_reasons=True)
    report = NodeReport("reboot", change.rows_for(list(nodes), found))
    report.notes.append(f"RebootProgram={program}")
    known = {n.name: n for n in found}
    for row in report.rows:
        node = known.get(row.node)
        if row.action or node is None:
            continue
        if node.is_down:
            row.skip("DOWN: Slurm ignores a reboot request for a down node (resume it first)")
        elif node.flags & REBOOT_FLAGS:
            row.action, row.after = DONE, row.before
            row.why = "a reboot is already pending"
        else:
            row.action = WOULD
            if node.state in ("ALLOCATED", "MIXED") or "COMPLETING" in node.flags:
                row.why = (
                    "jobs running: drained, rebooted when they end"
                    if options.asap
                    else "jobs running: reboots once idle (new jobs may still start: --asap)"
                )
    return report


def back(node: Node, issued: datetime, seen_flag: bool) -> bool:
    """Rebooted and in service again: no reboot flag, up, answering, booted after the request."""
    if node.flags & REBOOT_FLAGS or node.is_down or node.is_not_responding:
        return False
    booted = node.boot_time is not None and node.boot_time >= issued - _BOOT_SLACK
    return seen_flag or booted


def follow(
    names: Sequence[str],
    issued: datetime,
    *,
    timeout: float,
    poll: float,
    notify: Notify | None,
    seen: set[str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[dict[str, Node], dict[str, str]]:
    """Poll the nodes (one call per round) until all are back or ``timeout`` passed.

    Returns (nodes back, last state of those not back). Each state change is one
    ``node-N: STATE`` line to ``notify``; a Slurm error costs a round, not the wait.
    ``seen``: nodes already seen with a reboot flag (the read-back right after the call).
    """
    waiting = list(names)
    done: dict[str, Node] = {}
    last: dict[str, str] = {}
    seen = set(seen or ())
    start = clock()
    deadline = start + timeout
    while waiting:
        try:
            nodes = {n.name: n for n in query.nodes(HostSet(waiting))}
        except SlurmError as exc:
            nodes = {}
            if notify:
                notify(f"reboot: cannot read {HostSet(waiting)} now ({exc}); trying again")
        for name in list(waiting):
            node = nodes.get(name)
            if node is None:
                continue
            if node.flags & REBOOT_FLAGS:
                seen.add(name)
            if last.get(name) != node.state_text:
                last[name] = node.state_text
                if notify:
                    notify(f"reboot: {name}: {node.state_text} ({clock() - start:.0f} s)")
            if back(node, issued, name in seen):
                done[name] = node
                waiting.remove(name)
        if not waiting or clock() >= deadline:
            break
        sleep(min(poll, max(0.0, deadline - clock())))
    return done, {n: last.get(n, "unknown") for n in waiting}


def fresh_boot_wait(boot_times: Sequence[datetime], now: datetime) -> float:
    """Seconds to wait before a reboot request so that no node has just booted."""
    newest = max(boot_times, default=None)
    if newest is None:
        return 0.0
    return max(0.0, min((newest + FRESH_BOOT - now).total_seconds(), FRESH_BOOT.total_seconds()))


def moved(row: NodeRow, node: Node) -> str:
    """A node down or with a reboot pending since the plan: a second request does nothing."""
    if node.is_down:
        return f"now {node.state_text}: Slurm ignores a reboot request for a down node"
    if node.flags & REBOOT_FLAGS:
        return f"a reboot was asked meanwhile (now {node.state_text})"
    return ""


def reboot(
    nodes: HostSet,
    options: ChangeOptions,
    reboot_options: RebootOptions,
    confirm: Callable[[NodeReport], bool],
    validate: Callable[[list[str], NodeReport], None] | None = None,
) -> NodeReport:
    fields = {"asap": "yes"} if reboot_options.asap else {}
    if reboot_options.reason:
        fields["reason"] = reboot_options.reason

    boot_times: list[datetime] = []

    def moved_noting_boots(row: NodeRow, node: Node) -> str:
        """:func:`moved`, keeping the boot times of the read right before the request."""
        if node.boot_time is not None:
            boot_times.append(node.boot_time)
        return moved(row, node)

    def act(report: NodeReport, log: AuditLog) -> None:
        wait = fresh_boot_wait(boot_times, datetime.now().astimezone())
        if wait:
            options.say(
                f"reboot: a node booted seconds ago; waiting {wait:.1f} s, or slurmctld "
                "would take it as rebooted already and leave it REBOOT_ISSUED"
            )
            time.sleep(wait)
        issued = datetime.now().astimezone()
        accepted = change.change(
            "reboot",
            report,
            log,
            slurm_call("reboot", asap=reboot_options.asap, reason=reboot_options.reason),
            options,
            **fields,
        )
        if not accepted or not reboot_options.follow:
            return
        _follow(accepted, issued, report, reboot_options, options.notify)
        came_back = [r.node for r in accepted if r.action == DONE]
        if reboot_options.validate and came_back and validate is not None:
            validate(came_back, report)

    return change.run(
        "reboot", options, lambda: plan(nodes, reboot_options), act, confirm, moved_noting_boots
    )


def _follow(
    rows: list[NodeRow],
    issued: datetime,
    report: NodeReport,
    options: RebootOptions,
    notify: Notify | None,
) -> None:
    flagged = {r.node for r in rows if "REBOOT_" in r.after}
    done, missing = follow(
        [r.node for r in rows],
        issued,
        timeout=options.timeout,
        poll=options.poll,
        notify=notify,
        seen=flagged,
    )
    for row in rows:
        if row.node in done:
            row.action, row.after = DONE, done[row.node].state_text
            row.why = "rebooted, back in service"
            if "DRAIN" in done[row.node].flags:
                row.why = "rebooted; still drained (its reason is kept)"
        else:
            row.action, row.after = FAILED, missing.get(row.node, "unknown")
            row.why = f"not back within --timeout {options.timeout:g} s"
    if missing:
        report.notes.append(
            f"{HostSet(list(missing))} not back within {options.timeout:g} s: "
            "check the node's console and slurmd log"
        )
