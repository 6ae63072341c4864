"""Is this cluster's srun affected by the --cpus-per-task change? Measure it with a real job.

    check(CpusOptions(partition="gpu"), progress) -> CpusReport

:mod:`.job` submits the live test job and waits for it, :mod:`.report` reads its log
into modes and a verdict, :mod:`.expected` says what the version rules predict
without a job (the report sets the two side by side).
"""

from __future__ import annotations

from slurmkit.cpus.expected import expected_affected
from slurmkit.cpus.job import DEFAULT_TIMEOUT, TEMPLATE, CpusOptions, check, template_values
from slurmkit.cpus.report import CpusReport, Mode, modes, summarize

__all__ = [
    "DEFAULT_TIMEOUT",
    "TEMPLATE",
    "CpusOptions",
    "CpusReport",
    "Mode",
    "check",
    "expected_affected",
    "modes",
    "summarize",
    "template_values",
]
