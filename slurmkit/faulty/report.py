"""Per-node results of a scan: pass, FAIL, slow, skipped, unknown, unavailable; --exclude.

A node's result is its worst check: FAIL if any check failed; unknown if a check
printed no result line (the node died or the scan timed out: never taken as a
pass) or its output could not be read (gpu-health on a driver we do not know);
slow if a network check found its bandwidth far below the others' (it works, but a
training on it runs at its speed); skipped if a check could not run there (a GPU
check without a driver); pass only when every check passed. Nodes left out because
they could not run a job are "unavailable". ``--exclude`` names failing, slow and
unknown nodes; only failing ones are drained (a slow node is not broken).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from slurmkit.faulty.checks import NET_CHECKS
from slurmkit.hostlist import expand, fold
from slurmkit.templating.results import CheckLine

PASS = "pass"
FAIL = "FAIL"
SKIPPED = "skipped"
UNKNOWN = "unknown"
UNAVAILABLE = "unavailable"
SLOW = "slow"
_SHORT = {"pass": "pass", "fail": "FAIL", "skipped": "skip", "unknown": "?", "slow": "slow"}


@dataclass
class NodeScanResult:
    node: str
    checks: dict[str, CheckLine | None]
    result: str = UNKNOWN
    note: str = ""
    findings: dict[str, list[dict[str, object]]] = field(default_factory=dict)

    @property
    def failed_checks(self) -> list[str]:
        return [name for name, r in self.checks.items() if r is not None and r.status == "fail"]

    @property
    def slow_checks(self) -> list[str]:
        return [name for name, r in self.checks.items() if r is not None and r.status == SLOW]

    @property
    def detail(self) -> str:
        """Why the node is not a plain pass: failures first, then missing, then skips."""
        if self.note:
            return self.note
        parts = [
            f"{name}: {r.detail}"
            for name, r in self.checks.items()
            if r is not None and r.status == "fail"
        ]
        parts += [
            f"{name}: {r.detail}" for name, r in self.checks.items() if r and r.status == SLOW
        ]
        missing = [name for name, r in self.checks.items() if r is None]
        if missing:
            parts.append(f"no result for {', '.join(missing)}")
        parts += [
            f"{name}: unknown: {r.detail}"
            for name, r in self.checks.items()
            if r is not None and r.status == UNKNOWN
        ]
        parts += [  # a pass with a warning (an application's Xid, a slowdown) or a figure
            f"{name}: {r.detail}"
            for name, r in self.checks.items()
            if r is not None
            and r.status == "pass"
            and (r.detail.startswith("warning:") or name in NET_CHECKS)
        ]
        skipped = [(n, r.detail) for n, r in self.checks.items() if r and r.status == "skipped"]
        reasons = sorted({why for _, why in skipped})
        if skipped:
            names = ", ".join(n for n, _ in skipped)
            parts.append(f"skipped {names}: {'; '.join(reasons)}")
        return "; ".join(parts)

    def status_of(self, check: str) -> str:
        found = self.checks.get(check)
        if self.result == UNAVAILABLE:
            return "-"
        return "?" if found is None else _SHORT[found.status]

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "result": self.result,
            "note": self.note or None,
            "checks": [
                {
                    "check": name,
                    "status": r.status if r else ("not run" if self.note else UNKNOWN),
                    "detail": r.detail if r else None,
                }
                for name, r in self.checks.items()
            ],
            **({"findings": self.findings} if self.findings else {}),
        }


@dataclass
class DrainOutcome:
    """What --drain did (or would do): reason -> nodes, and nodes left alone."""

    dry_run: bool
    groups: dict[str, list[str]] = field(default_factory=dict)
    left_alone: list[tuple[str, str]] = field(default_factory=list)
    done: bool = False
    declined: bool = False
    states: dict[str, str] = field(default_factory=dict)
    before: dict[str, str] = field(default_factory=dict)  # as planned, for the audit log

    @property
    def nodes(self) -> list[str]:
        return [n for names in self.groups.values() for n in names]

    def to_json(self) -> dict[str, object]:
        return {
            "dry_run": self.dry_run,
            "done": self.done,
            "declined": self.declined,
            "groups": [{"reason": r, "nodes": fold(n)} for r, n in self.groups.items()],
            "left_alone": [{"node": n, "why": w} for n, w in self.left_alone],
            "states": self.states,
        }


@dataclass
class ScanReport:
    job_id: str
    job_state: str
    checks: tuple[str, ...]
    nodes: list[NodeScanResult]
    log: str
    timed_out: bool = False
    drain: DrainOutcome | None = None
    allocation: str = ""
    ignored: list[str] = field(default_factory=list)
    recorded: list[dict[str, str]] = field(default_factory=list)  # added to the exclude list
    exclude_list: str = ""  # its path, when the scan recorded into it

    def named(self, result: str) -> list[str]:
        return [n.node for n in self.nodes if n.result == result]

    @property
    def failing(self) -> list[str]:
        return self.named(FAIL)

    def slow_entries(self) -> list[tuple[str, str, str]]:
        """(node, check, detail) per slow check: the exclude list keeps them like failures."""
        return [
            (n.node, c, r.detail)
            for n in self.nodes
            for c in n.slow_checks
            if (r := n.checks[c]) is not None
        ]

    @property
    def exclude(self) -> str:
        """``node-[3,7]``: the failing, slow and unknown nodes, for ``sbatch --exclude``."""
        bad = self.failing + self.named(SLOW) + self.named(UNKNOWN)
        return fold(bad) if bad else ""

    @property
    def exit_code(self) -> int:
        return 0 if all(n.result == PASS for n in self.nodes) else 1

    def headers(self) -> list[str]:
        return ["NODE", "RESULT", *(_column(c) for c in self.checks), "DETAIL"]

    def rows(self) -> list[list[str]]:
        return [
            [n.node, n.result, *(n.status_of(c) for c in self.checks), n.detail] for n in self.nodes
        ]

    def to_json(self) -> dict[str, object]:
        return {
            "job_id": self.job_id,
            "job_state": self.job_state,
            "timed_out": self.timed_out,
            "log": self.log,
            "checks": list(self.checks),
            "nodes": [n.to_json() for n in self.nodes],
            "failing": fold(self.failing) if self.failing else "",
            "unknown": fold(self.named(UNKNOWN)) if self.named(UNKNOWN) else "",
            "slow": fold(self.named(SLOW)) if self.named(SLOW) else "",
            "exclude": self.exclude,
            "drain": self.drain.to_json() if self.drain else None,
            "allocation": self.allocation,
            "ignored": self.ignored,
            "recorded": self.recorded,
            "exclude_list": self.exclude_list or None,
        }


def _column(check: str) -> str:
    return check if len(check) <= 16 else check[:15] + "…"


def node_results(
    checks: Sequence[str],
    expected: Iterable[str],
    results: Iterable[CheckLine],
    unavailable: Iterable[tuple[str, str]] = (),
) -> list[NodeScanResult]:
    """One result per expected node (the job's allocation) and per unavailable node.

    Result lines naming any other node are dropped, never added: the log is text a
    check's output can shape, and ``--drain`` must act only on nodes the job ran on
    (issue 14). :func:`outside` names the dropped ones for a warning.
    """
    names = list(dict.fromkeys(expected))
    by_node: dict[str, dict[str, CheckLine]] = {name: {} for name in names}
    for result in results:
        if result.node in by_node:
            by_node[result.node][result.check] = result
    nodes = []
    for name in names:
        mine = by_node[name]
        node = NodeScanResult(name, {c: mine.get(c) for c in checks})
        node.result = _verdict(node)
        nodes.append(node)
    for name, state in unavailable:
        nodes.append(
            NodeScanResult(
                name, dict.fromkeys(checks), UNAVAILABLE, f"not scanned: {state} (cannot run jobs)"
            )
        )
    order = {name: i for i, name in enumerate(expand(fold([n.node for n in nodes])))}
    return sorted(nodes, key=lambda n: order[n.node])


def outside(results: Iterable[CheckLine], allocation: Iterable[str]) -> list[str]:
    """Nodes that result lines name but the job's allocation does not hold, in first-seen order."""
    inside = set(allocation)
    return list(dict.fromkeys(r.node for r in results if r.node not in inside))


def _verdict(node: NodeScanResult) -> str:
    found = list(node.checks.values())
    if any(r is not None and r.status == "fail" for r in found):
        return FAIL
    if any(r is None or r.status == UNKNOWN for r in found):
        return UNKNOWN
    if any(r.status == SLOW for r in found if r is not None):
        return SLOW
    if any(r.status == "skipped" for r in found if r is not None):
        return SKIPPED
    return PASS
