"""``node reboot --validate CHECKS``: ``faulty scan`` the rebooted nodes, drain what fails.

Reuses the scan and its drain as they are (:mod:`slurmkit.faulty`): one check job on
exactly the nodes that came back, failing nodes drained with the scan's own reason,
through the node-change core into the audit log. The reboot's confirmation covers this
drain: the plan said so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from slurmkit.faulty import drain as drainer
from slurmkit.faulty.scan import DEFAULT_DIR, DEFAULT_TIMEOUT, ScanOptions, scan
from slurmkit.hostlist import HostSet, fold
from slurmkit.node.outcome import FAILED, NodeReport


def validator(
    checks: tuple[str, ...],
    notify: Callable[[str], None],
    work_dir: Path = DEFAULT_DIR,
    timeout: float = DEFAULT_TIMEOUT,
) -> Callable[[list[str], NodeReport], None]:
    def validate(nodes: list[str], report: NodeReport) -> None:
        notify(f"validating {fold(nodes)} with faulty scan --checks {','.join(checks)}")
        options = ScanOptions(
            checks=checks, nodelist=HostSet(nodes), work_dir=work_dir, timeout=timeout
        )
        scanned = scan(options, notify)
        outcome = drainer.execute(drainer.plan(scanned, dry_run=False), lambda _o: True)
        failing = sorted({n.node for n in scanned.nodes if n.failed_checks})
        report.validation = {
            "checks": list(checks),
            "job": scanned.job_id,
            "failing": failing,
            "drained": outcome.nodes,
            "exclude": scanned.exclude,
        }
        for row in report.rows:
            if row.node in failing:
                row.action = FAILED
                row.why = f"rebooted, but failed {','.join(checks)}: drained by faulty scan"

    return validate
