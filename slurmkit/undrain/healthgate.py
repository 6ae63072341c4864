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
Root runs that interpreter on the node, so the script follows slurmkit's exec rule
(:mod:`slurmkit.safeexec`, as ``pyspy`` does): it resolves the interpreter once, checks
the resolved file, its name's folder and every folder above them, and the ``slurmkit``
package directory it finds, and runs exactly the resolved file, isolated (``-I``: no
PYTHONPATH, no user site, no current dir). It used to check the path with ``stat -L``
and then run the unresolved name: a link flipped in between ran a user's program as
root (issue 28). Anything refused keeps the node out, with the reason.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

from slurmkit import remote, safeexec
from slurmkit.printable import printable
from slurmkit.remote import RemoteOptions
from slurmkit.remote.result import NodeResult
from slurmkit.undrain.report import WOULD_KILL, WOULD_RETURN, NodeOutcome

REASON_PREFIX = "slurmkit health:"
CONFIG_ENV = "SLURMKIT_HEALTH_CONFIG"
DEFAULT_CONFIG = "/etc/slurmkit/health.toml"


# The node's part after the rule's shell functions. Paths arrive as positional
# parameters ($1 interpreter, $2 config), never spliced into the script's text. Exit 3
# and one "slurmkit-refused:" line when something root would run is not root's alone.
_SCRIPT = r"""
sk_resolve python "$1" || { echo "$sk_why" >&2; exit 3; }
config=$2
code='import importlib.util as u'
code="$code; print(u.find_spec('slurmkit').submodule_search_locations[0])"
if ! pkg=$(sk_exec -I -c "$code") || [ -z "$pkg" ]; then
  echo "slurmkit-refused: python $1: it cannot find the slurmkit package" >&2; exit 3
fi
real=$(readlink -f -- "$pkg") || real=
if [ -z "$real" ] || ! sk_check_path "$real" 1; then
  echo "slurmkit-refused: slurmkit package $pkg: ${sk_why:-it cannot be resolved}" >&2; exit 3
fi
sk_exec -I -m slurmkit health --no-drain --json --config "$config"
"""


def health_argv(config: str | None = None, python: str | None = None) -> list[str]:
    """What runs on the node: the trust check, then this interpreter's ``slurmkit health
    --no-drain --json``. One argv; the transports quote it word by word. bash, not sh:
    ``exec -a`` keeps a venv's interpreter name while the resolved file runs."""
    path = config or os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG
    script = safeexec.shell_library() + _SCRIPT
    return ["bash", "-c", script, "bash", python or sys.executable, path]


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
    checks = report.get("checks")
    bad = [
        c
        for c in (checks if isinstance(checks, list) else [])
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
