"""Faulty-node discovery: run checks on every node in one job, report, exclude, drain; history.

    scan(ScanOptions(checks=("python", "disk")), progress) -> ScanReport
    drain.plan(report, dry_run) / drain.execute(outcome, confirm)
    history.history(since("7d"), top=20) -> HistoryReport

The node-side work is the ``faulty-node-check`` template; :mod:`slurmkit.checkjob` (submit
a check template, wait with progress, read its log) is shared with ``cpus check``.
"""

from __future__ import annotations

from slurmkit.faulty.checks import DEFAULT, GPU_CHECKS, KNOWN, parse_checks
from slurmkit.faulty.report import DrainOutcome, NodeScanResult, ScanReport
from slurmkit.faulty.scan import ScanOptions, scan

__all__ = [
    "DEFAULT",
    "GPU_CHECKS",
    "KNOWN",
    "DrainOutcome",
    "NodeScanResult",
    "ScanOptions",
    "ScanReport",
    "parse_checks",
    "scan",
]
