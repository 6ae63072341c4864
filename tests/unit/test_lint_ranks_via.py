"""srun-rank-expanded-early through a variable: judged where the step uses the variable.

``MAIN=$(hostname)`` expanded early names the first node; a step that passes it only as
the address every task connects to (``--init_method tcp://$MAIN:3456``) means exactly
that node, so the early value is right. Used as a per-task value it is still wrong.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.slurm.records import SlurmVersion

V24 = LintContext(SlurmVersion.parse("24.11.1"))
RULE = "srun-rank-expanded-early"


def found(body: str) -> list[int]:
    text = "#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=4\n" + body + "\n"
    return [f.line for f in lint_text(text, "t.slurm", V24) if f.rule == RULE]


@pytest.mark.parametrize(
    "step",
    [
        "srun python pretrain.py --init_method tcp://$MAIN_NODE:3456 --world_size 16",
        'srun python train.py --dist-url "tcp://${MAIN_NODE}:3456"',
        "srun torchrun --rdzv_endpoint=$MAIN_NODE:29500 train.py",
    ],
)
def test_an_early_host_used_as_the_peer_address_is_right(step: str) -> None:
    assert found(f"export MAIN_NODE=$(hostname)\n{step}") == []


@pytest.mark.parametrize(
    "step",
    [
        "srun python train.py --host $MAIN_NODE",
        "srun python train.py --init_method tcp://$MAIN_NODE:3456 --name $MAIN_NODE",
        'srun bash -c "echo $MAIN_NODE"',
    ],
)
def test_an_early_host_used_per_task_is_still_an_error(step: str) -> None:
    assert found(f"export MAIN_NODE=$(hostname)\n{step}") == [5]


def test_a_node_rank_variable_under_c10d_is_right_but_not_under_static() -> None:
    step = "srun torchrun --node_rank $NR --nnodes 4 {} train.py"
    assert found("NR=$SLURM_NODEID\n" + step.format("--rdzv_backend c10d")) == []
    assert found("NR=$SLURM_NODEID\n" + step.format("")) == [5]
