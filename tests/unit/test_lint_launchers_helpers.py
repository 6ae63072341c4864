"""More launchers, and the helper scripts a step runs (issue 32 item 5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_path, lint_text

V = LintContext(SlurmVersion.parse("24.11.5"))
ONE_NODE = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH --gres=gpu:8\n"
TWO_NODES = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\n"


def found(text: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "t.slurm", V)]


@pytest.mark.parametrize(
    "command",
    [
        "vllm serve meta-llama/Llama-3-8B --tensor-parallel-size 8",
        "python -m vllm.entrypoints.openai.api_server --model m",
        "python3 -m sglang.launch_server --model-path m --tp 8",
        "llamafactory-cli train examples/llama3_lora_sft.yaml",
        "tune run --nproc_per_node 8 full_finetune_distributed --config c.yaml",
        "ray start --head --block",
    ],
)
def test_new_launchers_on_one_cpu(command: str) -> None:
    assert (4, "info", "launcher-cpus-per-task") in found(ONE_NODE + command + "\n")
    assert found(ONE_NODE + "#SBATCH -c 16\n" + command + "\n") == []


@pytest.mark.parametrize(
    "command", ["pip install vllm", "echo tune run", "python ray_start.py", "my-cli trained"]
)
def test_words_that_are_no_launcher(command: str) -> None:
    assert found(ONE_NODE + command + "\n") == []


def test_trainers_and_ray_run_once_per_node_servers_are_not_judged() -> None:
    head = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -c 8 --gpus=4\n#SBATCH --ntasks-per-node=4\n"
    assert found(head + "srun llamafactory-cli train c.yaml\n") == [
        (5, "error", "launcher-tasks-per-node")
    ]
    assert found(head + "srun ray start --block\n") == [(5, "error", "launcher-tasks-per-node")]
    # one server per GPU, each on its own port: a script may mean it
    assert found(head + "srun vllm serve m --port $((8000 + SLURM_LOCALID))\n") == []


def test_a_trainer_in_the_batch_step_of_two_nodes_but_not_a_server() -> None:
    cpus = TWO_NODES + "#SBATCH -c 8 --gpus-per-node=4\n"
    assert found(cpus + "tune run --nnodes 2 full_finetune_distributed\n") == [
        (6, "info", "launcher-outside-srun")
    ]
    # the head of a Ray cluster srun started: vLLM reaches the other nodes through Ray
    head = 'h=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)\n'
    ray = head + 'srun -N1 -n1 -c 8 -w "$h" ray start --head --block &\nsleep 10\n'
    assert found(cpus + ray + "vllm serve m --pipeline-parallel-size 2\n") == []


# ------------------------------------------------------------------ helper scripts


def repo(tmp_path: Path, files: dict[str, str]) -> Path:
    top = tmp_path / "repo"
    (top / ".git").mkdir(parents=True)
    for name, text in files.items():
        path = top / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return top


JOB = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -c 8\n#SBATCH --ntasks-per-node=4\n"


def rules_of(path: Path) -> list[tuple[int, str, str]]:
    return [(f.line, f.severity, f.rule) for f in lint_path(path, V)]


def test_a_launcher_in_a_helper_script_is_the_steps(tmp_path: Path) -> None:
    top = repo(
        tmp_path,
        {
            "slurm/job.sh": JOB + "srun bash train.sh\n",
            "slurm/train.sh": "#!/bin/bash\ntorchrun --nproc_per_node=8 train.py\n",
        },
    )
    findings = lint_path(top / "slurm" / "job.sh", V)
    assert [(f.line, f.rule) for f in findings] == [(5, "launcher-tasks-per-node")]
    assert "torchrun (in train.sh) starts its own worker" in findings[0].message
    # the same text with no file behind it reads no helper
    assert found(JOB + "srun bash train.sh\n") == []


def test_helpers_from_the_top_of_the_tree_and_two_deep_not_three(tmp_path: Path) -> None:
    files = {
        "slurm/job.sh": JOB + "srun bash scripts/a.sh\n",
        "scripts/a.sh": "set -e\nbash scripts/b.sh\n",
        "scripts/b.sh": "accelerate launch train.py\n",
    }
    top = repo(tmp_path, files)
    assert rules_of(top / "slurm" / "job.sh") == [(5, "error", "launcher-tasks-per-node")]
    files["scripts/b.sh"] = "bash ./c.sh\n"  # resolved from b.sh's own directory
    files["scripts/c.sh"] = "accelerate launch train.py\n"
    top = repo(tmp_path / "deeper", files)
    assert rules_of(top / "slurm" / "job.sh") == []


def test_helpers_outside_the_repository_are_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.sh"
    outside.write_text("torchrun t.py\n")
    top = repo(tmp_path, {"job.sh": JOB + "srun bash ../elsewhere.sh\nsrun bash link.sh\n"})
    os.symlink(outside, top / "link.sh")
    assert rules_of(top / "job.sh") == []


def test_an_unreadable_helper_is_one_info_line(tmp_path: Path) -> None:
    top = repo(tmp_path, {"job.sh": JOB + "srun bash loop.sh\nsrun bash loop.sh\nbash d.sh\n"})
    os.symlink("loop2.sh", top / "loop.sh")
    os.symlink("loop.sh", top / "loop2.sh")
    (top / "d.sh").mkdir()
    assert rules_of(top / "job.sh") == [
        (5, "info", "helper-unreadable"),
        (7, "info", "helper-unreadable"),
    ]
    message = lint_path(top / "job.sh", V)[0].message
    assert "loop.sh was not read (a symbolic link loop)" in message


def test_helpers_that_call_each_other_end(tmp_path: Path) -> None:
    top = repo(
        tmp_path,
        {"job.sh": JOB + "srun bash a.sh\n", "a.sh": "bash b.sh\n", "b.sh": "bash a.sh\n"},
    )
    assert rules_of(top / "job.sh") == []


def test_a_command_string_is_no_helper(tmp_path: Path) -> None:
    top = repo(tmp_path, {"job.sh": JOB + "srun bash -lc x.sh\n", "x.sh": "torchrun t.py\n"})
    assert rules_of(top / "job.sh") == []


def test_a_fifo_or_a_huge_helper_is_skipped_without_hanging(tmp_path: Path) -> None:
    top = repo(tmp_path, {"job.sh": JOB + "srun bash fifo.sh\nsrun bash big.sh\n"})
    os.mkfifo(top / "fifo.sh")
    (top / "big.sh").write_text("#" * (300 * 1024) + "\ntorchrun t.py\n")
    assert rules_of(top / "job.sh") == [
        (5, "info", "helper-unreadable"),
        (6, "info", "helper-unreadable"),
    ]
