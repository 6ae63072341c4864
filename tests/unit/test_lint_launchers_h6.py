"""Launcher rules judged on scripts from the spent sixth hold-out (issue 32).

Each case is a small synthetic script of a class found there, not a copy of one file.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V = LintContext(SlurmVersion.parse("24.11.5"))
RULE = "gpus-per-node-mismatch"


def gpu_findings(request: str) -> list[int]:
    text = (
        "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --nodes=2\n"
        f"#SBATCH {request}\n"
        "export GPUS_PER_NODE=4\n"
        "srun torchrun --nproc_per_node=$GPUS_PER_NODE train.py\n"
    )
    return [f.line for f in lint_text(text, "t.slurm", V) if f.rule == RULE]


@pytest.mark.parametrize(
    "request_",
    [
        "--gres=gpu:...  ## put the number of gpus",
        "--gres=gpu:...",
        "--gpus-per-node=<N>",
        "--gres=gpu:<ngpus>",
    ],
)
def test_a_template_blank_for_the_gpu_count_is_no_mismatch(request_: str) -> None:
    assert gpu_findings(request_) == []


@pytest.mark.parametrize("request_", ["--gres=gpu:2", "--gpus-per-node=a100:8"])
def test_a_written_count_is_still_compared(request_: str) -> None:
    assert gpu_findings(request_) == [5]
