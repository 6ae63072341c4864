"""Round nine of issue 32, srun-cpus-per-task: what the ninth test part showed once read.

task/affinity sets each task's CPU mask to its ``mask_cpu`` entry as written, within the
step's CPUs (affinity.c ``CPU_BIND_MASK``; dist_tasks.c ``_validate_mask`` clears only
CPUs outside the allocation), and a plain 22.05 srun makes a whole step that holds every
CPU of the job on the node. In a job of whole nodes (``--exclusive``) a step bound by
masks of several CPUs each therefore keeps them, whatever srun's 1 CPU per task says;
Lumi's job scripts build that list in a variable over several lines.
"""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V22 = LintContext(SlurmVersion.parse("22.05"))
RULE = "srun-cpus-per-task"
SHARED = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=4\n#SBATCH --cpus-per-task=6\n"
WHOLE = SHARED + "#SBATCH --exclusive\n"
LUMI_MASKS = (
    'CPU_BIND="mask_cpu:7e000000000000,7e00000000000000"\nCPU_BIND="${CPU_BIND},7e0000,7e000000"\n'
)


def _cpus(body: str, header: str = WHOLE) -> list[tuple[int, str]]:
    """(line, severity) of every srun-cpus-per-task finding at 22.05."""
    found = lint_text(header + body, "t.sh", V22)
    return [(f.line, f.severity) for f in found if f.rule == RULE]


def test_mask_lists_built_in_a_variable_keep_their_cpus() -> None:
    """``--cpu-bind=${CPU_BIND}`` with a mask list of 6 CPUs a task in an --exclusive job:
    no task is held to 1 CPU. A variable the script never spells out is still left to the
    site (a warning), and so is a mask list on a shared node, where the masks may name CPUs
    the job lacks."""
    step = "srun --cpu-bind=${CPU_BIND} ./select_gpu python pic.py\n"
    assert _cpus(LUMI_MASKS + step) == []
    assert _cpus(step) == [(6, "warning")]
    assert _cpus(LUMI_MASKS + step, SHARED) == [(7, "warning")]


def test_exported_slurm_cpu_bind_masks_keep_their_cpus() -> None:
    """``export SLURM_CPU_BIND="${CPU_BIND}"`` of such a list is the same binding; an
    exported SLURM_CPU_BIND of another kind still binds each task to 1 CPU (an error)."""
    body = LUMI_MASKS + 'export SLURM_CPU_BIND="${CPU_BIND}"\nsrun ./spdyn p.inp\n'
    assert _cpus(body) == []
    assert _cpus(body, SHARED) == [(8, "warning")]
    cores = 'BIND=cores\nexport SLURM_CPU_BIND="${BIND}"\nsrun ./spdyn p.inp\n'
    assert _cpus(cores) == [(8, "error")]


def test_masks_of_one_cpu_are_still_judged() -> None:
    """Masks of one CPU each bind every task to 1 CPU, as map_cpu does: not excused. A
    literal list of wider masks in an --exclusive job is the same class as the variable."""
    one = 'M="mask_cpu:0x1,0x2,0x4,0x8"\nexport SLURM_CPU_BIND="$M"\nsrun ./app\n'
    assert _cpus(one) == [(8, "error")]
    assert _cpus("srun --cpu-bind=mask_cpu:0x0f,0xf0 ./app\n") == []
    assert _cpus("srun --cpu-bind=mask_cpu:0x0f,0xf0 ./app\n", SHARED) == [(5, "warning")]
