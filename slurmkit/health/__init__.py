"""``slurmkit health``: quick node-local checks for Slurm's ``HealthCheckProgram``.

    config.load(path) -> HealthConfig     the strict, trust-checked health.toml
    run(config, mode=) -> HealthReport    the checks, then at most one drain or resume

Slurm runs it on every node every ``HealthCheckInterval``; a failing check drains
the node with the reason ``slurmkit health: <check>: <detail>``, and a node drained
that way comes back by itself once every check passes again (an Xid drain waits for
a person). No job is needed and nothing is printed on success.
"""

from __future__ import annotations

from slurmkit.health.config import DEFAULT_PATH, HealthConfig, HealthConfigError, load
from slurmkit.health.node import REASON_PREFIX
from slurmkit.health.run import HealthReport, run

__all__ = [
    "DEFAULT_PATH",
    "REASON_PREFIX",
    "HealthConfig",
    "HealthConfigError",
    "HealthReport",
    "load",
    "run",
]
