"""srun-cpus-per-task: a step that only asks a program for its version or usage.

``srun -n 1 ${BIN} --version`` prints a line and exits whatever ``$BIN`` is: its threads
never work, so the 1 CPU srun gets at 22.05-23.02 loses nothing. The same program run
for real still needs the job's CPUs.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.slurm.records import SlurmVersion

V22 = LintContext(SlurmVersion.parse("22.05.8"))
RULE = "srun-cpus-per-task"


def found(step: str) -> list[int]:
    text = "#!/bin/bash\n#SBATCH --cpus-per-task=32\nBIN=./vlasiator\n" + step + "\n"
    return [f.line for f in lint_text(text, "t.slurm", V22) if f.rule == RULE]


@pytest.mark.parametrize(
    "step",
    ["srun -n 1 ${BIN} --version", "srun ./vlasiator --help", "srun gmx_mpi -version"],
)
def test_a_version_or_usage_query_needs_one_cpu(step: str) -> None:
    assert found(step) == []


@pytest.mark.parametrize(
    "step",
    ["srun -n 1 ${BIN} --run_config a.cfg", "srun ./vlasiator --version --run_config a.cfg"],
)
def test_the_program_run_for_real_still_needs_the_cpus(step: str) -> None:
    assert found(step) == [4]
