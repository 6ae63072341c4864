"""Variables nobody sets as option values, and the shell's own variables (issue 32 item 4)."""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V = LintContext(SlurmVersion.parse("24.11.5"))
HEAD = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2\n#SBATCH -c 8\n#SBATCH --ntasks-per-node=1\n"


def rules(text: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", V)]


@pytest.mark.parametrize(
    "step",
    [
        "srun -N $NODES -c 8 python t.py",
        "srun -c 8 --gpus-per-node=${GPUS} python t.py",
        'srun -c 8 torchrun --nnodes 2 --nproc_per_node="$GPUS" '
        "--rdzv_backend c10d --rdzv_endpoint h:1 t.py",
    ],
)
def test_an_option_value_nobody_sets(step: str) -> None:
    assert (6, "info", "variable-never-set") in rules(HEAD + step + "\n")


@pytest.mark.parametrize(
    ("before", "step"),
    [
        ("NODES=2\n", "srun -N $NODES -c 8 python t.py"),
        ("", "srun -N $SLURM_NNODES -c 8 python t.py"),
        ("", "srun -c 8 python t.py --seed $RANDOM --out $HOME/x"),
        ("", "srun -c 8 python t.py --port ${PORT:-29500}"),
        ("source env.sh\n", "srun -N $NODES -c 8 python t.py"),  # may set anything
        ("for NODES in 1 2; do :; done\n", "srun -N $NODES -c 8 python t.py"),
        ("", "python t.py --lr $LR"),  # neither srun nor a launcher: not judged
        ("", 'srun -c 8 -w "$head" --jobid=$TRAIN --container-image=$IMAGE t'),  # no count
    ],
)
def test_values_set_somewhere_or_by_the_shell(before: str, step: str) -> None:
    assert "variable-never-set" not in {r for _, _, r in rules(HEAD + before + step + "\n")}


def test_a_fragment_without_directives_is_not_judged() -> None:
    assert rules("#!/bin/bash\nsrun -N $NODES -c 8 python t.py\n") == []


def test_a_shell_special_does_not_blind_the_launcher_rules() -> None:
    """$RANDOM as the master port is one value: torchrun's missing --nnodes still shows."""
    step = "srun -c 8 torchrun --nproc_per_node 8 --master_port $RANDOM t.py\n"
    assert (6, "error", "launcher-without-nnodes") in rules(HEAD + step)
