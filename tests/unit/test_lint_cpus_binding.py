"""srun-cpus-per-task's severity at 22.05-23.02 follows how the step binds its tasks.

srun there asks for 1 CPU per task, but a plain srun makes a whole step holding all of
the job's CPUs on the node, and task/affinity keeps each task on that whole mask unless a
bind unit is set. So 1 CPU per task is certain only under --exact or a bind unit (error),
a site's choice otherwise (warning), and never with --cpu-bind=none (no finding).
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.slurm.records import SlurmVersion

V22 = LintContext(SlurmVersion.parse("22.05.8"))
V23 = LintContext(SlurmVersion.parse("23.02.7"))
V24 = LintContext(SlurmVersion.parse("24.11.1"))
RULE = "srun-cpus-per-task"


def found(text: str, context: LintContext = V22) -> list[tuple[int, str]]:
    return [(f.line, f.severity) for f in lint_text(text, "t.slurm", context) if f.rule == RULE]


def job(*body: str) -> str:
    return "#!/bin/bash\n#SBATCH -t 5\n#SBATCH --cpus-per-task=8\n" + "\n".join(body) + "\n"


@pytest.mark.parametrize(
    "step",
    [
        "srun --exact python train.py",
        "srun --exclusive python train.py",
        "srun --cpu-bind=cores python train.py",
        "srun --cpu-bind=verbose,threads python train.py",
        "srun --cpu-bind=map_cpu:0,1 python train.py",
        "srun --hint=nomultithread python train.py",
        "srun --ntasks-per-core=1 python train.py",
        "srun --threads-per-core=1 python train.py",
        "srun --exact --cpu-bind=none python train.py",
    ],
)
def test_a_step_that_binds_each_task_is_an_error(step: str) -> None:
    findings = [f for f in lint_text(job(step), "t.slurm", V22) if f.rule == RULE]
    assert [(f.line, f.severity) for f in findings] == [(4, "error")]
    assert "each task of this step is bound to 1 CPU" in findings[0].message
    assert found(job(step), V23) == [(4, "error")]


@pytest.mark.parametrize(
    "setting",
    ["export SLURM_CPU_BIND=cores", "export SLURM_CPU_BIND=$BIND", "export SLURM_EXACT=1"],
)
def test_binding_exported_before_the_step_is_an_error(setting: str) -> None:
    findings = [f for f in lint_text(job(setting, "srun a"), "t.slurm", V22) if f.rule == RULE]
    assert [(f.line, f.severity) for f in findings] == [(5, "error")]
    assert "bound to 1 CPU" in findings[0].message


def test_a_job_with_ntasks_per_core_binds_its_steps() -> None:
    text = job("srun python train.py").replace("-t 5\n", "-t 5\n#SBATCH --ntasks-per-core=1\n")
    findings = [f for f in lint_text(text, "t.slurm", V22) if f.rule == RULE]
    assert [(f.line, f.severity, "bound to 1 CPU" in f.message) for f in findings] == [
        (5, "error", True)
    ]


@pytest.mark.parametrize("hint", ["nomultithread", "multithread", "compute_bound"])
def test_a_job_with_a_hint_binds_its_steps(hint: str) -> None:
    """sbatch exports --hint as SLURM_HINT and srun reads it: live on the 22.05 sandbox, a
    plain srun in a -c 4 job ran on CPU 0 with each of these hints, on 0-1 without."""
    text = job("srun python train.py").replace("-t 5\n", f"-t 5\n#SBATCH --hint={hint}\n")
    assert found(text) == [(5, "error")]
    assert found(text.replace(f"--hint={hint}", "--comment=x")) == [(5, "warning")]


@pytest.mark.parametrize(
    "step",
    [
        "srun python train.py",
        "srun -n1 python train.py",
        "srun --cpu-bind=verbose a",
        # a socket unit widens each task to the step's CPUs on its socket (_expand_masks)
        "srun --cpu-bind=sockets python train.py",
        "srun --ntasks-per-socket=1 python train.py",
        "srun --cpu-bind=mask_cpu:0xff python train.py",
    ],
)
def test_a_plain_step_depends_on_the_site_so_it_is_a_warning(step: str) -> None:
    findings = [f for f in lint_text(job(step), "t.slurm", V22) if f.rule == RULE]
    assert [(f.line, f.severity) for f in findings] == [(4, "warning")]
    assert "TaskPluginParam autobind" in findings[0].message
    assert "slurmkit cpus check" in findings[0].message
    assert findings[0].fix.startswith("srun --cpus-per-task=$SLURM_CPUS_PER_TASK")


@pytest.mark.parametrize(
    "step",
    [
        "srun --cpu-bind=none python train.py",
        "srun --cpu-bind=verbose,none python train.py",
        "srun --cpu_bind=no python train.py",
        "SLURM_CPU_BIND=none srun python train.py",
    ],
)
def test_cpu_bind_none_keeps_the_whole_mask_so_no_finding(step: str) -> None:
    assert found(job(step)) == []


def test_binding_changes_nothing_from_23_11() -> None:
    assert found(job("srun --exact python train.py"), V24) == []
    assert found(job("srun python train.py"), V24) == []
