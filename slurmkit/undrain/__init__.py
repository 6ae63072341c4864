"""Return nodes drained by "Kill task failed" to service, safely.

The library behind ``slurmkit undrain``: :func:`undrain` runs the flow in
:mod:`.flow` (select by reason, check nodes in parallel for leftovers of
jobs, optionally end them, then return the clean ones through the node-change
core, :mod:`slurmkit.nodechange`: one batched ``scontrol update``, read back, the
one audit log), under the shared lock (:mod:`slurmkit.locks`; root's lives in
/run/slurmkit).

The names below load on first use (PEP 562): ``nodes drained`` needs only
:mod:`.select`'s reason regex, and importing the whole flow (journal, locks,
remote, health gate) cost it 17 ms of its ~150.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurmkit import _lazy

if TYPE_CHECKING:
    from slurmkit.undrain.flow import Plan, UndrainOptions, execute, make_plan, undrain
    from slurmkit.undrain.report import TABLE_HEADERS, NodeOutcome, UndrainReport
    from slurmkit.undrain.select import DEFAULT_REASON

_HOMES = {
    "Plan": "flow",
    "UndrainOptions": "flow",
    "execute": "flow",
    "make_plan": "flow",
    "undrain": "flow",
    "TABLE_HEADERS": "report",
    "NodeOutcome": "report",
    "UndrainReport": "report",
    "DEFAULT_REASON": "select",
}

__all__ = [
    "DEFAULT_REASON",
    "TABLE_HEADERS",
    "NodeOutcome",
    "Plan",
    "UndrainOptions",
    "UndrainReport",
    "execute",
    "make_plan",
    "undrain",
]


__getattr__ = _lazy.attributes(__name__, _HOMES)
