"""One ``slurmkit health`` run: the checks, then at most one drain or resume of this node.

The order matters: the checks run first and never depend on Slurm, so ``--no-drain``
(what ``undrain`` runs on a node before returning it) needs no controller at all.
Only a drain-mode run writes the node's state file (:mod:`slurmkit.health.state`),
and only when its Slurm part succeeded: a drain that failed because the controller
did not answer is tried again on the next run, with the same kernel records. The
state keeps the kernel log position and the node's Xid drain: recorded when the node
is drained for an Xid, dropped once a person returned it (the node is no longer
drained with a slurmkit health reason).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from slurmkit.errors import SlurmError, SlurmkitError
from slurmkit.gpu.findings import FAIL, PASS, UNKNOWN
from slurmkit.health import checks, kernlog, state
from slurmkit.health import node as nd
from slurmkit.health.config import HealthConfig
from slurmkit.slurm.records import Node
from slurmkit.trust import UntrustedPath


@dataclass
class HealthReport:
    node: str
    results: list[checks.Result]
    mode: str  # "drain", "dry-run" or "no-drain"
    action: str = nd.NONE
    reason: str = ""
    why: str = ""
    node_state: str = ""
    error: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[checks.Result]:
        return [r for r in self.results if r.status == FAIL]

    @property
    def passed(self) -> bool:
        """No check failed and none is unknown (skipped ones are neither)."""
        return not any(r.status in (FAIL, UNKNOWN) for r in self.results)

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "mode": self.mode,
            "passed": self.passed,
            "checks": [r.to_json() for r in self.results],
            "action": self.action,
            "reason": self.reason,
            "why": self.why,
            "node_state": self.node_state,
            "error": self.error,
            "notes": list(self.notes),
        }


def run(
    config: HealthConfig,
    *,
    mode: str = "drain",
    env: Mapping[str, str] | None = None,
    state_dir: Path | None = None,
    ctx: checks.Context | None = None,
) -> HealthReport:
    """Run every check; in ``drain`` mode drain or resume this node as :func:`node.decide` says.

    ``dry-run`` reads the node and says what it would do; ``no-drain`` asks Slurm nothing.
    A failing or hanging controller is ``report.error``, never an exception. ``ctx``:
    a context with the seams set (tests); its node and position are this run's.
    """
    name = nd.node_name(env)
    directory = state_dir or config.state_dir or state.default_dir()
    before, state_error = _state(directory, name)
    ctx = ctx or checks.Context(node=name)
    ctx.node, ctx.xid_after = name, before.position
    results = []
    for check in config.checks:
        if check.kind == "xid" and state_error:
            results.append(checks.Result(check.label, check.kind, UNKNOWN, state_error))
        else:
            results.append(checks.run_check(check, ctx))
    report = HealthReport(name, results, mode, notes=list(ctx.notes))
    if mode == "no-drain":
        return report
    sticky = {c.label for c in config.checks if c.kind == "xid"}
    held = before.xid_drain is not None
    try:
        current = nd.read(name, config.scontrol_timeout)
        report.node_state = current.state_text
        decision = nd.decide(current, results, sticky, held=held)
        report.action, report.reason, report.why = decision.action, decision.reason, decision.why
        if mode == "drain" and decision.action == nd.DRAIN:
            nd.drain(name, decision.reason, config.scontrol_timeout)
        elif mode == "drain" and decision.action == nd.RESUME:
            nd.resume(name, config.scontrol_timeout)
    except SlurmError as exc:
        report.error = str(exc)
        return report
    if mode == "drain" and not state_error:
        after = state.NodeState(
            _position(before, ctx, results, decision),
            _xid_drain(before, current, decision, sticky),
        )
        if after != before:
            _save(report, directory, name, after)
    return report


def _state(directory: Path, name: str) -> tuple[state.NodeState, str]:
    try:
        return state.read(directory, name), ""
    except UntrustedPath as exc:
        return state.NodeState(), f"cannot use the node's health state: {exc}"


def _position(
    before: state.NodeState,
    ctx: checks.Context,
    results: list[checks.Result],
    decision: nd.Decision,
) -> kernlog.Position | None:
    """The last record read, unless no xid check read the log (skipped, unknown, none), or
    an Xid failed on a node someone else drained: the next run after they return it
    reads that Xid again and drains the node for it."""
    read = [r for r in results if r.kind == "xid" and r.status in (FAIL, PASS)]
    if not read or ctx.xid_position is None:
        return before.position
    if decision.action == nd.ADMIN and any(r.status == FAIL for r in read):
        return before.position
    return ctx.xid_position


def _xid_drain(
    before: state.NodeState, node: Node, decision: nd.Decision, sticky: set[str]
) -> state.XidDrain | None:
    """The Xid drain this node is in after this run, or None once a person returned it."""
    if decision.action == nd.DRAIN:
        label = nd.reason_label(decision.reason)
        return state.XidDrain(label, decision.reason) if label in sticky else None
    if not nd.is_ours(node):
        return None  # not drained by slurmkit health: a person returned it, or took it over
    if before.xid_drain is not None:
        return before.xid_drain
    label = nd.reason_label(node.reason)
    return state.XidDrain(label, node.reason or "") if label in sticky else None


def _save(report: HealthReport, directory: Path, name: str, after: state.NodeState) -> None:
    try:
        state.write(directory, name, after)
    except (OSError, SlurmkitError, UntrustedPath) as exc:
        report.notes.append(f"could not record the node's health state: {exc}")
