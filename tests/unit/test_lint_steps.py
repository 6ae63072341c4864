"""Steps against the job and the script's end (issue 32 item 4): lifecycle and resources."""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V = LintContext(SlurmVersion.parse("24.11.5"))
HEAD = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2\n#SBATCH -c 8\n#SBATCH --gpus-per-node=4\n"


def rules(text: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", V)]


@pytest.mark.parametrize(
    "body",
    [
        'srun vllm serve m &\necho "started"\n',
        "vllm serve m --port 8000 &\n",
        "for h in a b; do\n  srun -w $h -N1 python worker.py &\ndone\nrm -f lock\n",
    ],
)
def test_a_background_step_nobody_waits_for(body: str) -> None:
    line = 7 if body.startswith("for") else 6
    assert (line, "error", "background-never-waited") in rules(HEAD + body)


@pytest.mark.parametrize(
    "body",
    [
        "srun vllm serve m &\nwait\n",
        "srun vllm serve m &\nsleep 60\npython client.py\n",
        "srun vllm serve m &\nPID=$!\npython bench.py\nkill $PID\n",
        "srun python a.py &\nsrun python b.py\n",
        "nvidia-smi dmon > gpu.log &\nsrun python train.py\n",  # no step: not judged
        "srun python a.py\necho done\n",
        'x=$(srun hostname &)\necho "$x"\n',
    ],
)
def test_background_steps_that_are_waited_for_or_outlived(body: str) -> None:
    assert "background-never-waited" not in {r for _, _, r in rules(HEAD + body)}


def test_a_step_asking_for_more_than_the_job() -> None:
    assert rules(HEAD + "srun -N 4 python t.py\n") == [(6, "error", "step-exceeds-job")]
    assert rules(HEAD + "srun --gpus-per-node=8 python t.py\n") == [
        (6, "error", "step-exceeds-job")
    ]
    assert rules(HEAD + "srun --gres=gpu:a100:8 python t.py\n") == [
        (6, "error", "step-exceeds-job")
    ]
    for fits in ("srun -N 2 python t.py", "srun -N1 --gres=gpu:4 t", "srun -N $SLURM_NNODES t"):
        assert rules(HEAD + fits + "\n") == [], fits
    # a range of nodes: the step may have its nodes
    ranged = HEAD.replace("-N 2", "-N 2-4")
    assert rules(ranged + "srun -N 4 python t.py\n") == []


CPU_JOB = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -p gpu\n#SBATCH -c 8\n"


@pytest.mark.parametrize(
    "body",
    [
        "vllm serve meta-llama/Llama-3-8B\n",
        "python -m sglang.launch_server --model-path m\n",
        "srun torchrun --nproc-per-node=gpu train.py\n",
    ],
)
def test_gpu_programs_in_a_job_that_asks_for_no_gpu(body: str) -> None:
    assert rules(CPU_JOB + body) == [(5, "info", "gpu-program-without-gpus")]


@pytest.mark.parametrize(
    ("header", "body"),
    [
        ("#SBATCH --gres=gpu:2\n", "vllm serve m\n"),
        ("#SBATCH --gpus=1\n", "srun torchrun --nproc_per_node gpu t.py\n"),
        ("#SBATCH --gpus-per-task=1\n", "srun vllm serve m\n"),
        ("", "srun nvidia-smi\n"),  # a log of the GPUs: its failure loses nothing
        ("", "python train.py --device cpu\n"),
    ],
)
def test_gpu_programs_with_gpus_or_none_at_all(header: str, body: str) -> None:
    assert "gpu-program-without-gpus" not in {r for _, _, r in rules(CPU_JOB + header + body)}


def test_a_script_without_directives_is_not_judged_for_gpus() -> None:
    assert "gpu-program-without-gpus" not in {r for _, _, r in rules("#!/bin/bash\nvllm serve m\n")}


ONE = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -c 8\n"


@pytest.mark.parametrize(
    "tail",
    ['echo "done"\n', "rm -rf /tmp/x\nexit 0\n", "END=$(date +%s)\necho $((END))\n"],
)
def test_a_trailing_echo_or_exit_0_hides_the_steps_status(tail: str) -> None:
    found = [f for f in rules(ONE + "srun -c 8 python train.py\n" + tail) if f[2] != "missing-time"]
    assert [(s, r) for _, s, r in found] == [("info", "exit-status-hidden")]
    assert found[0][0] >= 5


@pytest.mark.parametrize(
    ("head", "tail"),
    [
        ("set -euo pipefail\n", 'echo "done"\n'),
        ("set -x -e\n", 'echo "done"\n'),
        ("set -o pipefail -o errexit\n", 'echo "done"\n'),
        ("", "rc=$?\necho done\nexit $rc\n"),
        ("", "srun -c 8 python eval.py\n"),
        ("", ""),
        ("", "python upload.py\n"),  # more work after the step: its status is the job's
        ("", "exit 3\n"),
        ("", "|| echo failed\n"),  # on the step's line: the author's handling
    ],
)
def test_the_steps_status_kept(head: str, tail: str) -> None:
    joined = " " if tail.startswith("||") else "\n"
    text = ONE + head + "srun -c 8 python train.py" + joined + tail
    assert "exit-status-hidden" not in {r for _, _, r in rules(text)}


@pytest.mark.parametrize(
    ("step", "outside"),
    [
        ("srun cd /scratch/run && python train.py", True),
        ("srun --overlap source env.sh; python train.py", True),
        ("srun -N 2 conda activate env && python t.py", True),
        ("srun module load cuda", False),
    ],
)
def test_srun_of_a_builtin(step: str, outside: bool) -> None:
    (finding,) = [f for f in lint_text(ONE + step + "\n", "t", V) if f.rule == "srun-builtin"]
    assert (finding.line, finding.severity) == (4, "error")
    assert ("runs in the batch step" in finding.message) == outside


@pytest.mark.parametrize(
    "step",
    [
        "srun -c 8 python train.py",
        "srun -c 8 bash -c 'cd /scratch && source env.sh && python t.py'",
        "cd /scratch && srun -c 8 python t.py",
        "srun -c 8 conda run -n env python t.py",
    ],
)
def test_srun_of_a_program(step: str) -> None:
    assert "srun-builtin" not in {r for _, _, r in rules(ONE + step + "\n")}


RAY_JOB = (
    "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n"
    "#SBATCH -c 8 --gpus-per-node=4\n"
    'srun -N1 -n1 -w "$HEAD_NODE" ray start --head --block &\n'
    'srun -N1 -n1 -x "$HEAD_NODE" ray start --address "$HEAD_NODE:6379" --block &\n'
    "sleep 30\n"
)


def test_a_ray_driver_on_every_node() -> None:
    (finding,) = [
        f for f in lint_text(RAY_JOB + "srun python main.py\n", "t", V) if f.severity != "info"
    ]
    assert (finding.line, finding.severity, finding.rule) == (9, "error", "driver-every-node")


@pytest.mark.parametrize(
    "driver",
    [
        'srun --nodes=1 --ntasks=1 -w "$HEAD_NODE" python main.py',
        "srun -n 1 python3 -m verl.trainer.main_ppo",
        "python main.py",
        "srun bash -c 'nvidia-smi'",
    ],
)
def test_a_ray_driver_run_once(driver: str) -> None:
    assert "driver-every-node" not in {r for _, _, r in rules(RAY_JOB + driver + "\n")}


def test_python_on_every_node_without_ray_is_not_a_driver() -> None:
    text = RAY_JOB.replace("ray start", "redis-server") + "srun python main.py\n"
    assert "driver-every-node" not in {r for _, _, r in rules(text)}
