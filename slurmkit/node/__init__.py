"""Node lifecycle for admins: drain, resume, reboot and show, safely and in batches.

The library behind ``slurmkit node``: planners on the node-change core
(:mod:`slurmkit.nodechange`), which makes every change: one Slurm call for all nodes (per
reason), an intent record in the audit log before it and the outcome after, faultpoints
around it, a read-back. Resume runs the leftover check undrain runs
(:mod:`slurmkit.nodechange.leftovers`), reboot checks ``RebootProgram`` first and follows
the nodes back, ``--validate`` reuses ``faulty scan``. Nothing here imports click, nor the
undrain feature package (an import contract: node and undrain meet only in the core).
"""

from __future__ import annotations

from slurmkit.node.change import ChangeOptions
from slurmkit.node.outcome import TABLE_HEADERS, NodeReport, NodeRow
from slurmkit.node.reboot import RebootOptions
from slurmkit.node.resume import ResumeOptions
from slurmkit.node.show import NodeView

# The commands are the functions of the same name in each module (drain.drain, ...);
# they are not re-exported here, where they would hide their modules.

__all__ = [
    "TABLE_HEADERS",
    "ChangeOptions",
    "NodeReport",
    "NodeRow",
    "NodeView",
    "RebootOptions",
    "ResumeOptions",
]
