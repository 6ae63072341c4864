"""The Slurm layer's command runner, for code outside the layer whose call is not a query.

``_exec`` is private so that Slurm is run one way, with one failure classifier. A few
callers outside the layer run a command :mod:`slurmkit.slurm.query` has no function for
(the sandbox's ``sacctmgr`` and ``scontrol ping``, ``srun`` as a launcher, the health
check's node update with its own short timeout) or report how many Slurm calls a command
made (``undrain``). They import these names from here; importing ``_exec`` from outside
``slurmkit.slurm`` fails the private-modules import contract (tests/unit/test_architecture.py).
"""

from __future__ import annotations

from slurmkit.slurm import _exec
from slurmkit.slurm._exec import DEFAULT_TIMEOUT, first_message, run_slurm

__all__ = ["DEFAULT_TIMEOUT", "calls_made", "first_message", "run_slurm"]


def calls_made() -> int:
    """How many Slurm commands this process has run so far (pyslurm loads included).

    Read before and after a command to report its own calls: the proof, in a report
    and in tests, that it makes one call per query and never one per node.
    """
    return len(_exec.call_log)
