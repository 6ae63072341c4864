"""Return nodes drained by "Kill task failed" to service, safely.

The library behind ``slurmkit undrain``: :func:`undrain` runs the flow in
:mod:`.flow` (select by reason, check nodes in parallel for leftovers of
jobs, optionally end them, return the clean ones with one batched
``scontrol update``, read back), under the shared lock (:mod:`slurmkit.locks`;
root's lives in /run/slurmkit).
"""

from __future__ import annotations

from slurmkit.undrain.flow import Plan, UndrainOptions, execute, make_plan, undrain
from slurmkit.undrain.report import TABLE_HEADERS, NodeOutcome, UndrainReport
from slurmkit.undrain.select import DEFAULT_REASON

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
