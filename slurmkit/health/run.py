"""One ``slurmkit health`` run: the checks, then at most one drain or resume of this node.

The order matters: the checks run first and never depend on Slurm, so ``--no-drain``
(what ``undrain`` runs on a node before returning it) needs no controller at all.
Only a drain-mode run advances the Xid "since" time, and only when its Slurm part
succeeded: a drain that failed because the controller did not answer is tried again
on the next run, with the same events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from slurmkit.errors import SlurmError
from slurmkit.gpu.findings import FAIL, SKIPPED, UNKNOWN
from slurmkit.health import checks, state
from slurmkit.health import node as nd
from slurmkit.health.config import HealthConfig
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
) -> HealthReport:
    """Run every check; in ``drain`` mode drain or resume this node as :func:`node.decide` says.

    ``dry-run`` reads the node and says what it would do; ``no-drain`` asks Slurm nothing.
    A failing or hanging controller is ``report.error``, never an exception.
    """
    name = nd.node_name(env)
    directory = state_dir or config.state_dir or state.default_dir()
    started = datetime.now(timezone.utc)
    since, state_error = _since(config, directory, name)
    ctx = checks.Context(node=name, xid_since=since)
    results = []
    for check in config.checks:
        if check.kind == "xid" and state_error:
            results.append(checks.Result(check.label, check.kind, UNKNOWN, state_error))
        else:
            results.append(checks.run_check(check, ctx))
    report = HealthReport(name, results, mode)
    if mode == "no-drain":
        return report
    sticky = {c.label for c in config.checks if c.kind == "xid"}
    try:
        current = nd.read(name, config.scontrol_timeout)
        report.node_state = current.state_text
        decision = nd.decide(current, results, sticky)
        report.action, report.reason, report.why = decision.action, decision.reason, decision.why
        if mode == "drain" and decision.action == nd.DRAIN:
            nd.drain(name, decision.reason, config.scontrol_timeout)
        elif mode == "drain" and decision.action == nd.RESUME:
            nd.resume(name, config.scontrol_timeout)
    except SlurmError as exc:
        report.error = str(exc)
        return report
    if mode == "drain" and any(c.kind == "xid" for c in config.checks) and not state_error:
        _advance(report, directory, name, started, results)
    return report


def _since(config: HealthConfig, directory: Path, name: str) -> tuple[datetime | None, str]:
    if not any(c.kind == "xid" for c in config.checks):
        return None, ""
    try:
        return state.read_since(directory, name), ""
    except UntrustedPath as exc:
        return None, f"cannot use the last-run time: {exc}"


def _advance(
    report: HealthReport,
    directory: Path,
    name: str,
    started: datetime,
    results: list[checks.Result],
) -> None:
    """Record this run's start as the next "since", unless every xid check was skipped."""
    if all(r.status == SKIPPED for r in results if r.kind == "xid"):
        return
    try:
        state.write_since(directory, name, started)
    except (OSError, UntrustedPath) as exc:
        report.notes.append(f"could not record the last-run time: {exc}")
