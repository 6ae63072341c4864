"""srun run by its path (/opt/slurm/bin/srun) is srun to every step rule, not only some."""

from __future__ import annotations

import pytest

from tests.lint_headers import V22, of_rule

HEADER = "#!/bin/bash\n#SBATCH -t 5\n#SBATCH -N 2\n"
CASES = {
    "background-never-waited": "{srun} python serve.py &\necho started\n",
    "gpu-program-without-gpus": "#SBATCH --mem-per-gpu=10G\n{srun} python train.py\n",
    "variable-never-set": "{srun} -n $NTASKS python train.py\n",
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_srun_by_path_is_judged_as_srun(rule: str) -> None:
    by_name = of_rule(HEADER + CASES[rule].format(srun="srun"), rule, V22)
    by_path = of_rule(HEADER + CASES[rule].format(srun="/opt/slurm/bin/srun"), rule, V22)
    assert by_name  # the case shows the rule at work
    assert by_path == by_name
