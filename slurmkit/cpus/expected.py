"""What the version rules predict for the --cpus-per-task change, without running a job.

A plain srun does not inherit the job's ``--cpus-per-task`` from 22.05 to 23.02
(:mod:`slurmkit.lint.context` holds the versions, verified on real clusters). The live
test job's report sets its measurement beside this prediction, to flag a cluster that
behaves otherwise than its version says.
"""

from __future__ import annotations

from slurmkit.errors import SlurmkitError
from slurmkit.lint.context import srun_inherits_cpus_per_task
from slurmkit.slurm.records import SlurmVersion


def expected_affected(slurm: str) -> bool | None:
    """Whether Slurm ``slurm`` (a version string) should drop --cpus-per-task; None: unreadable."""
    try:
        return not srun_inherits_cpus_per_task(SlurmVersion.parse(slurm))
    except SlurmkitError:
        return None
