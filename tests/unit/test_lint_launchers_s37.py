"""Launcher rules judged on scripts from the spent second hold-out (issue 32).

Each case is a small synthetic script of a class found there, not a copy of one file.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.lint.rules.launchers import launcher_in

V = LintContext(SlurmVersion.parse("24.11.5"))
GPU_NODE = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2\n#SBATCH --gpus-per-node=8\n"


def found(text: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", V)]


def rules(text: str) -> set[str]:
    return {rule for _, _, rule in found(text)}


@pytest.mark.parametrize(
    "line",
    [
        "export TORCH_EXTENSIONS_DIR=$PWD/deepspeed",
        'echo "TORCH_EXTENSIONS_DIR=$PWD/deepspeed" >> .deepspeed_env',
        "python train.py --deepspeed configs/deepspeed/zero3.json",
        "module load deepspeed",
        "pip install deepspeed torch",
        'echo "torchrun --nproc_per_node=8 train.py"',
        'cd "$WORK/torchrun"',
    ],
)
def test_a_launcher_named_but_not_run(line: str) -> None:
    assert launcher_in(line) is None


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("srun ./venv/bin/torchrun \\", "torchrun"),
        ("$HOME/.local/bin/deepspeed --num_gpus 8 train.py", "deepspeed"),
        ("module load cuda; torchrun --nproc_per_node 8 t.py", "torchrun"),
        ('LAUNCHER="deepspeed --num_gpus 8"', "deepspeed"),
    ],
)
def test_a_launcher_run(line: str, name: str) -> None:
    assert launcher_in(line) == name


def test_a_deepspeed_directory_is_no_launcher_of_the_job() -> None:
    script = GPU_NODE + (
        "export TORCH_EXTENSIONS_DIR=$PWD/deepspeed\n"
        "srun -n16 -c2 --ntasks-per-node=8 python train.py --deepspeed ds.json\n"
    )
    assert "launcher-cpus-per-task" not in rules(script)
