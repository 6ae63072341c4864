"""``slurmkit hostfile`` and ``slurmkit launch-env`` end to end, in-process, Slurm faked at argv."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures_path import read

from slurmkit import _proc
from tests.fakes import FakeSlurm

RUNNING_GPU = read("22.05", "03_jobs", "scontrol_show_job_d_running_gpu_2node.txt")  # job 3

GRES2 = {
    "SLURM_JOB_ID": "87",
    "SLURM_JOB_NODELIST": "node-[1-2]",
    "SLURM_NNODES": "2",
    "SLURM_GPUS_ON_NODE": "2",
    "SLURM_TASKS_PER_NODE": "1(x2)",
    "SLURM_NODEID": "0",
    "SLURMD_NODENAME": "node-1",
}


@pytest.fixture
def slurm(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlurm]:
    """A clean environment (no job, no NNODES), quiet mode, and the shared fake Slurm."""
    for name in list(os.environ):
        if name.startswith(("SLURM_", "SLURMD_")) or name in ("NNODES", "SLURMKIT_VERBOSE"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(_proc, "_verbose", False)
    yield fake_slurm


@pytest.fixture
def in_job(slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch) -> FakeSlurm:
    for key, value in GRES2.items():
        monkeypatch.setenv(key, value)
    return slurm


def _show_job(job_id: str) -> tuple[str, ...]:
    return ("scontrol", "--details", "show", "job", job_id)


# ---------------------------------------------------------------- hostfile


def test_no_job_is_one_usage_line(run_cli, slurm: FakeSlurm) -> None:
    result = run_cli("hostfile", exit_code=2)
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "run inside a job" in result.stderr and "--jobid ID or --nodelist LIST" in result.stderr
    assert slurm.calls == []


def test_inside_job_default_is_deepspeed(run_cli, in_job: FakeSlurm) -> None:
    assert run_cli("hostfile").stdout == "node-1 slots=2\nnode-2 slots=2\n"
    assert in_job.calls == []


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("openmpi", "node-1 slots=2\nnode-2 slots=2\n"),
        ("mpich", "node-1:2\nnode-2:2\n"),
        ("plain", "node-1\nnode-2\n"),
    ],
)
def test_formats(run_cli, in_job: FakeSlurm, fmt: str, text: str) -> None:
    assert run_cli("hostfile", "--format", fmt).stdout == text


def test_json_format(run_cli, in_job: FakeSlurm) -> None:
    out = run_cli("hostfile", "--format", "json").stdout
    assert json.loads(out) == [{"host": "node-1", "slots": 2}, {"host": "node-2", "slots": 2}]


def test_verbose_names_the_source_on_stderr(run_cli, in_job: FakeSlurm) -> None:
    result = run_cli("-v", "hostfile", "--format", "plain")
    assert result.stdout == "node-1\nnode-2\n"
    assert "slurmkit: slots from SLURM_GPUS_ON_NODE=2 (GPUs on each node)" in result.stderr


def test_quiet_by_default(run_cli, in_job: FakeSlurm) -> None:
    assert run_cli("hostfile").stderr == ""


def test_output_file(run_cli, in_job: FakeSlurm, tmp_path: Path) -> None:
    target = tmp_path / "hostfile"
    target.write_text("stale\n")
    result = run_cli("hostfile", "--slots", "8", "--format", "mpich", "-o", str(target))
    assert result.stdout == ""
    assert target.read_text() == "node-1:8\nnode-2:8\n"
    assert [p.name for p in tmp_path.iterdir()] == ["hostfile"]


def test_output_to_missing_directory(run_cli, in_job: FakeSlurm, tmp_path: Path) -> None:
    result = run_cli("hostfile", "-o", str(tmp_path / "no" / "hostfile"), exit_code=2)
    assert "does not exist" in result.stderr


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_bad_slots_are_usage_errors(run_cli, in_job: FakeSlurm, value: str) -> None:
    result = run_cli("hostfile", "--slots", value, exit_code=2)
    assert "Invalid value for '--slots'" in result.stderr
    assert result.stdout == ""


def test_nodelist(run_cli, slurm: FakeSlurm) -> None:
    out = run_cli("hostfile", "--nodelist", "node-[42,49-51]", "--slots", "4").stdout
    assert out == "node-42 slots=4\nnode-49 slots=4\nnode-50 slots=4\nnode-51 slots=4\n"
    assert run_cli("hostfile", "--nodelist", "a,b", "--format", "mpich").stdout == "a:1\nb:1\n"
    result = run_cli("hostfile", "--nodelist", "a", "--slots", "gpus", exit_code=2)
    assert "needs a job" in result.stderr
    assert "position" in run_cli("hostfile", "--nodelist", "n[3-", exit_code=2).stderr
    assert slurm.calls == []


def test_jobid_from_outside(run_cli, slurm: FakeSlurm) -> None:
    slurm.on(_show_job("3"), RUNNING_GPU)
    assert run_cli("hostfile", "--jobid", "3").stdout == "node-1 slots=4\nnode-2 slots=4\n"
    assert slurm.calls == [_show_job("3")]


def test_jobid_and_nodelist_conflict(run_cli, slurm: FakeSlurm) -> None:
    assert "not both" in run_cli("hostfile", "--jobid", "3", "--nodelist", "a", exit_code=2).stderr


def test_unknown_job(run_cli, slurm: FakeSlurm) -> None:
    slurm.on(_show_job("999"), rc=1, stderr="slurm_load_jobs error: Invalid job id specified\n")
    result = run_cli("hostfile", "--jobid", "999", exit_code=2)
    assert result.stderr.startswith("slurmkit: unknown job 999")
    assert "Traceback" not in result.stderr


def test_slurm_missing_and_controller_down(run_cli, slurm: FakeSlurm) -> None:
    slurm.missing("scontrol")
    assert "not found on PATH" in run_cli("hostfile", "--jobid", "3", exit_code=2).stderr
    slurm.on(
        _show_job("3"),
        rc=1,
        stderr="slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n",
    )
    assert "cannot reach slurmctld" in run_cli("hostfile", "--jobid", "3", exit_code=2).stderr


# ---------------------------------------------------------------- launch-env


def test_launch_env_in_batch_script(run_cli, in_job: FakeSlurm) -> None:
    assert run_cli("launch-env").stdout == (
        "export MASTER_ADDR=node-1\n"
        "export MASTER_PORT=6000\n"
        "export NNODES=2\n"
        "export GPUS_PER_NODE=2\n"
        "export WORLD_SIZE=4\n"
    )


def test_launch_env_in_step_with_torchrun(
    run_cli, in_job: FakeSlurm, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {"SLURM_STEP_ID": "0", "SLURM_STEP_NODELIST": "node-[1-2]",
                       "SLURM_NODEID": "1", "SLURMD_NODENAME": "node-2"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    out = run_cli("launch-env", "--launcher", "torchrun", "--port", "29500").stdout
    assert "export NODE_RANK=1\n" in out
    assert "export PET_NODE_RANK=1\n" in out
    assert "export PET_MASTER_PORT=29500\n" in out


def test_launch_env_evaluates_in_bash(run_cli, in_job: FakeSlurm) -> None:
    out = run_cli("launch-env", "--port", "auto").stdout
    shown = subprocess.run(
        ["bash", "-c", 'eval "$1"; echo "$MASTER_ADDR $MASTER_PORT $NNODES"', "_", out],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert shown == "node-1 20087 2\n"


def test_launch_env_nnodes_mismatch(
    run_cli, in_job: FakeSlurm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NNODES", "64")
    result = run_cli("launch-env", exit_code=2)
    assert result.stdout == ""
    assert "NNODES=64" in result.stderr and "SLURM_NNODES=2" in result.stderr


def test_launch_env_matching_nnodes_is_fine(
    run_cli, in_job: FakeSlurm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NNODES", "2")
    assert "export NNODES=2\n" in run_cli("launch-env").stdout


def test_launch_env_verbose_explains_missing_node_rank(run_cli, in_job: FakeSlurm) -> None:
    result = run_cli("-v", "launch-env")
    assert "NODE_RANK" not in result.stdout
    assert "NODE_RANK not exported" in result.stderr


def test_launch_env_bad_input(run_cli, slurm: FakeSlurm) -> None:
    assert "run inside a job" in run_cli("launch-env", exit_code=2).stderr
    assert "Invalid value for '--port'" in run_cli("launch-env", "--port", "0", exit_code=2).stderr
    result = run_cli("launch-env", "--launcher", "mpirun", exit_code=2)
    assert "Invalid value for '--launcher'" in result.stderr
