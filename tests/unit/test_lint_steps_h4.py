"""Step rules fixed on the fourth hold-out: each judged by what srun and the step do.

- srun-rank-expanded-early through a variable is judged where the step uses it:
  ``MAIN=$(hostname)`` passed only as the address every task connects to
  (``--init_method tcp://$MAIN:3456``) names the first node, as meant.
- srun-cpus-per-task: ``srun -n 1 ${BIN} --version`` prints a line and exits whatever
  ``$BIN`` is, so the 1 CPU srun gets at 22.05-23.02 loses nothing.
- srun-bad-option: srun's getopt knows the same short letters from 22.05 to 26.05
  (slurm_opt.c) and stops at the first word that is no option; a letter it does not
  know, a count that is no number and an option without its dash end the step.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.slurm.records import SlurmVersion

RANKS, CPUS, OPTION = "srun-rank-expanded-early", "srun-cpus-per-task", "srun-bad-option"
FOUR_NODES = "#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=4\n"
THREADED = "#SBATCH --cpus-per-task=32\nBIN=./vlasiator\n"


def found(rule: str, header: str, body: str, version: str = "24.11.1") -> list[tuple[int, str]]:
    text = "#!/bin/bash\n" + header + body + "\n"
    context = LintContext(SlurmVersion.parse(version))
    return [(f.line, f.severity) for f in lint_text(text, "t.slurm", context) if f.rule == rule]


@pytest.mark.parametrize(
    "step",
    [
        "srun python pretrain.py --init_method tcp://$MAIN_NODE:3456 --world_size 16",
        'srun python train.py --dist-url "tcp://${MAIN_NODE}:3456"',
        "srun torchrun --rdzv_endpoint=$MAIN_NODE:29500 train.py",
    ],
)
def test_an_early_host_used_as_the_peer_address_is_right(step: str) -> None:
    assert found(RANKS, FOUR_NODES, f"export MAIN_NODE=$(hostname)\n{step}") == []


@pytest.mark.parametrize(
    "step",
    [
        "srun python train.py --host $MAIN_NODE",
        "srun python train.py --init_method tcp://$MAIN_NODE:3456 --name $MAIN_NODE",
        'srun bash -c "echo $MAIN_NODE"',
    ],
)
def test_an_early_host_used_per_task_is_still_an_error(step: str) -> None:
    assert found(RANKS, FOUR_NODES, f"export MAIN_NODE=$(hostname)\n{step}") == [(5, "info")]


def test_a_node_rank_variable_under_c10d_is_right_but_not_under_static() -> None:
    step = "NR=$SLURM_NODEID\nsrun torchrun --node_rank $NR --nnodes 4 {} train.py"
    assert found(RANKS, FOUR_NODES, step.format("--rdzv_backend c10d")) == []
    assert found(RANKS, FOUR_NODES, step.format("")) == [(5, "info")]


@pytest.mark.parametrize(
    "step",
    ["srun -n 1 ${BIN} --version", "srun ./vlasiator --help", "srun gmx_mpi -version"],
)
def test_a_version_or_usage_query_needs_one_cpu(step: str) -> None:
    assert found(CPUS, THREADED, step, "22.05.8") == []


@pytest.mark.parametrize(
    "step",
    ["srun -n 1 ${BIN} --run_config a.cfg", "srun ./vlasiator --version --run_config a.cfg"],
)
def test_the_program_run_for_real_still_needs_the_cpus(step: str) -> None:
    assert found(CPUS, THREADED, step, "22.05.8") == [(4, "warning")]


@pytest.mark.parametrize("version", ["22.05.8", "24.11.1"])
@pytest.mark.parametrize(
    "step",
    [
        "srun N 1 -n 1 -c 8 --gres=gpu:1 \\\n  singularity exec img python run.py",
        "srun -n 2 -gpus 3 python train.py",
        "srun -np 4 ./a.out",
        "srun -lN 2 -y ./a.out",
    ],
)
def test_an_option_srun_refuses_is_an_error(step: str, version: str) -> None:
    assert found(OPTION, "#SBATCH -N 2\n", step, version) == [(3, "error")]


@pytest.mark.parametrize(
    "step",
    [
        "srun -N 1 -n 1 -c 8 --gres=gpu:1 python run.py",
        "srun -lK1 -I60 -n4 ./a.out",
        "srun --comment -gpu -n 2 ./a.out",
        "srun -n $NP ./a.out -gpus 3",
        "srun $OPTS -np 4 ./a.out",
        "srun R -f script.R",
        "srun x264 -o out.mp4 in.y4m",
        "srun -- N 1 -n 1",
        "srun ./app N 1 -n 1",
    ],
)
def test_options_srun_reads_or_cannot_be_judged_are_quiet(step: str) -> None:
    assert found(OPTION, "#SBATCH -N 2\n", step) == []
