"""Undrain's gate for ``slurmkit health``'s own drains: back only once its checks pass.

A node drained with a ``slurmkit health: ...`` reason was drained for a fault on the
node itself (a full disk, a missing GPU, a failing command), not for a job's leftovers:
"no leftovers" says nothing about it. So before such a node is returned, undrain runs
``slurmkit health --no-drain --json`` on it, through the same remote layer and options
as the leftover check, and keeps the node out (a finding, exit 1) unless every check
passes there now. A node that cannot run the check is kept out too: unknown is never
a pass.

The node runs the interpreter undrain runs under (``sys.executable``: a shared install
or the same image puts slurmkit at the same path everywhere) with the health config
``$SLURMKIT_HEALTH_CONFIG`` of undrain's environment, else the default
``/etc/slurmkit/health.toml`` (on the node; it must pass the node's trust check there).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from slurmkit import remote
from slurmkit.printable import printable
from slurmkit.remote import RemoteOptions
from slurmkit.remote.result import NodeResult
from slurmkit.undrain.report import WOULD_KILL, WOULD_RETURN, NodeOutcome

REASON_PREFIX = "slurmkit health:"
CONFIG_ENV = "SLURMKIT_HEALTH_CONFIG"
DEFAULT_CONFIG = "/etc/slurmkit/health.toml"


def health_argv(config: str | None = None) -> list[str]:
    """What runs on the node: this interpreter's slurmkit, checks only, JSON out."""
    path = config or os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG
    return [sys.executable, "-m", "slurmkit", "health", "--no-drain", "--json", "--config", path]


def gate(outcomes: Sequence[NodeOutcome], via: str, options: RemoteOptions) -> None:
    """Skip every health-drained node about to be returned whose checks do not all pass."""
    todo = [
        o
        for o in outcomes
        if o.action in (WOULD_RETURN, WOULD_KILL) and o.reason.startswith(REASON_PREFIX)
    ]
    if not todo:
        return
    done = remote.run([o.node for o in todo], health_argv(), via=via, options=options)
    for outcome, result in zip(todo, done.results, strict=True):
        failing = verdict(result)
        if failing:
            outcome.skip(failing)


def verdict(result: NodeResult) -> str:
    """ "" when slurmkit health passed on the node, else why the node stays out."""
    report = _report(result.stdout)
    if report is None:
        said = _last(result.stderr) or result.error or "no JSON report"
        return printable(f"slurmkit health could not be run on the node ({result.status}): {said}")
    if report.get("passed") is True and result.ok:
        return ""
    bad = [
        c
        for c in report.get("checks", [])
        if isinstance(c, dict) and c.get("status") in ("fail", "unknown")
    ]
    if not bad:
        return f"slurmkit health did not pass on the node ({result.error or result.status})"
    shown = "; ".join(f"{c.get('check')}: {c.get('status')}: {c.get('detail')}" for c in bad[:2])
    return printable(f"slurmkit health still fails: {shown}")


def _report(stdout: str) -> dict[str, object] | None:
    start = stdout.find("{")
    if start < 0:
        return None
    try:
        data = json.loads(stdout[start:])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _last(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:160] if lines else ""
