"""This node in Slurm: its name, its state, and the one drain or resume a health run may do.

Every Slurm call goes through the slurm layer (:mod:`slurmkit.slurm`) with the config's
``scontrol_timeout``: one ``scontrol show node <me>`` per run, plus at most one
``scontrol update``. A controller that fails or hangs is a :class:`SlurmError` the
caller reports on stderr; it never changes what the checks found.

The rules (as LBNL NHC applies them to its own drains):

* a failure drains the node with ``slurmkit health: <check>: <detail>``, unless the
  node is drained already: by slurmkit health for the same check (left as it is: the
  reason and its time stay those of the first failure), or by anyone else (an admin's
  drain is never overwritten);
* when every check passes (``skipped`` allowed, ``unknown`` not), a node drained by
  slurmkit health is returned with ``state=undrain`` (a DOWN node stays DOWN), except
  after an ``xid`` failure: an Xid is an event, not a state that a later run can see
  gone, so that node waits for a person (``slurmkit undrain --reason 'slurmkit health'``).
* an Xid drain is kept whatever else fails or passes: another failing check neither
  replaces its reason (which would make the node resumable once that check passes)
  nor resumes it. It is known by its reason and by the node's state file
  (``held``), so a reason another check wrote cannot end it either.

Why this drain stays outside the node-change core (:mod:`slurmkit.nodechange`, issue 30),
the one exception: it runs on the node itself, under slurmd, as Slurm's
HealthCheckProgram, whose contract is that the program drains its own node; and it runs
every ``HealthCheckInterval`` with a tight time budget (slurmd waits for it). The core
would add per run a read-back, a lock and an fsynced audit log on every node's local
disk, which no ``node`` command or ``log show`` on the admin host reads. Its record is
the reason itself (``slurmkit health: <check>: ...``, with Slurm's reason time) and the
node's state file (``held``); the next health run is its reconcile.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from slurmkit.gpu.findings import FAIL, UNKNOWN
from slurmkit.health.checks import Result
from slurmkit.printable import printable
from slurmkit.slurm import commands, query
from slurmkit.slurm.parse_records import parse_scontrol_nodes
from slurmkit.slurm.records import Node

REASON_PREFIX = "slurmkit health:"
MAX_REASON = 200

NONE = "none"  # healthy and not drained by us: nothing to do
DRAIN = "drain"
RESUME = "resume"
KEEP = "keep"  # drained by us for this very check already
ADMIN = "admin-drain"  # drained by someone else: left alone
WAIT = "wait"  # drained by us, but an unknown check or an Xid drain keeps it out
XID_RELEASE = "slurmkit undrain --reason 'slurmkit health'"


def node_name(env: Mapping[str, str] | None = None) -> str:
    """``SLURMD_NODENAME`` (slurmd sets it for HealthCheckProgram, Prolog, Epilog), else the
    short host name."""
    env = os.environ if env is None else env
    return env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def reason_for(failures: Sequence[Result], sticky: Set[str] = frozenset()) -> str:
    """``slurmkit health: <check>: <detail>``, printable and at most :data:`MAX_REASON` chars.

    The first failure in config order names the reason, except that a sticky (xid)
    failure goes first, so its drain is the one that waits for a person.
    """
    ordered = sorted(failures, key=lambda r: r.label not in sticky)
    first = ordered[0]
    more = f" (+{len(ordered) - 1} more: {', '.join(r.label for r in ordered[1:])})"
    text = f"{REASON_PREFIX} {first.label}: {first.detail}"
    text = printable(" ".join(text.split()))
    extra = more if len(ordered) > 1 else ""
    if len(text) + len(extra) > MAX_REASON:
        text = text[: MAX_REASON - len(extra) - 3].rstrip() + "..."
    return text + extra


def reason_label(reason: str | None) -> str | None:
    """The check a slurmkit health reason names, or None for anyone else's reason."""
    if not reason or not reason.startswith(REASON_PREFIX):
        return None
    return reason[len(REASON_PREFIX) :].split(":", 1)[0].strip()


@dataclass(frozen=True)
class Decision:
    action: str
    reason: str = ""  # the new reason for DRAIN; the node's for the others
    why: str = ""


def decide(node: Node, results: Sequence[Result], sticky: Set[str], held: bool = False) -> Decision:
    """What this run does to ``node``, from its state and the checks' results.

    ``sticky``: the labels of the xid checks; ``held``: the state file says this node
    is in an Xid drain.
    """
    failures = [r for r in results if r.status == FAIL]
    drained = "DRAIN" in node.flags
    ours = reason_label(node.reason) if drained else None
    if ours is not None and (ours in sticky or held):
        return _held(node, failures)
    if failures:
        reason = reason_for(failures, sticky)
        if drained and ours is None:
            return Decision(ADMIN, node.reason or "", "drained by someone else: left alone")
        if ours is not None and ours == reason_label(reason):
            return Decision(KEEP, node.reason or "", "drained already for this check")
        return Decision(DRAIN, reason)
    if ours is None:
        return Decision(NONE)
    unknown = [r.label for r in results if r.status == UNKNOWN]
    if unknown:
        return Decision(WAIT, node.reason or "", f"not resumed: {', '.join(unknown)} unknown")
    return Decision(RESUME, node.reason or "")


def _held(node: Node, failures: Sequence[Result]) -> Decision:
    """An Xid drain: its reason stays, and only a person returns the node."""
    why = f"an Xid drain waits for a person ({XID_RELEASE})"
    if failures:
        also = ", ".join(r.label for r in failures)
        return Decision(KEEP, node.reason or "", f"{why}; failing now: {also}")
    return Decision(WAIT, node.reason or "", f"not resumed: {why}")


def is_ours(node: Node) -> bool:
    """Drained with a slurmkit health reason (anyone else's drain, or none: a person acted)."""
    return "DRAIN" in node.flags and reason_label(node.reason) is not None


def read(name: str, timeout: float) -> Node:
    """This node's record (multi-line form: the reason read whole)."""
    done = commands.run_slurm(query.nodes_argv([name], oneliner=False), timeout=timeout)
    found = [n for n in parse_scontrol_nodes(done.stdout) if n.name == name]
    if not found:
        from slurmkit.errors import NotFound

        raise NotFound(f"scontrol does not know node {name}", list(done.argv))
    return found[0]


def drain(name: str, reason: str, timeout: float) -> None:
    commands.run_slurm(query.update_node_state_argv([name], "drain", reason), timeout=timeout)


def resume(name: str, timeout: float) -> None:
    commands.run_slurm(query.update_node_state_argv([name], "undrain"), timeout=timeout)
