"""The srun transport at the argv seam: the step it asks for and ``--label`` output parsed.

The transport asks ``scontrol show job`` whether the job holds GPUs before it
starts the step; the fake answers with recorded 22.05 job records.
"""

from __future__ import annotations

import re

import fixtures_path
import pytest

from slurmkit import remote
from slurmkit.errors import NotFound, UsageError
from slurmkit.remote.base import RemoteOptions
from slurmkit.remote.srun import SrunTransport, holds_gpus
from slurmkit.slurm import _exec
from slurmkit.slurm.parse_records import parse_scontrol_jobs
from slurmkit.slurm.records import GresAlloc, Job
from tests.fakes import Call, FakeSlurm

TOKEN = re.compile(r"__slurmkit_end_[0-9a-f]{16}__")
GPU_JOB = fixtures_path.read("22.05", "03_jobs", "scontrol_show_job_d_running_gpu_2node.txt")
CPU_JOB = fixtures_path.read("22.05", "03_jobs", "scontrol_show_job_d_array.txt")
UNKNOWN_JOB = "slurm_load_jobs error: Invalid job id specified\n"


@pytest.fixture
def srun(fake_slurm: FakeSlurm) -> FakeSlurm:
    """The shared fake Slurm: job 42's record holds GPUs; srun is routed by each test."""
    job(fake_slurm, GPU_JOB)
    return fake_slurm


def job(slurm: FakeSlurm, text: str | None) -> None:
    """``scontrol --details show job`` prints ``text`` (any id), or None: an unknown job."""
    argv = ["scontrol", "--details", "show", "job", "*"]
    if text is None:
        slurm.on(argv, rc=1, stderr=UNKNOWN_JOB)
    else:
        slurm.on(argv, text)


def step(slurm: FakeSlurm, stdout: str, rc: int = 0, stderr: str = "") -> None:
    """The srun step prints ``stdout`` with TOKEN replaced by the end marker it was given."""

    def answer(call: Call) -> tuple[int, str, str]:
        token = TOKEN.findall(call.argv[-1])[-1]
        return rc, stdout.replace("TOKEN", token), stderr

    slurm.on(["srun", "**"], answer=answer)


def steps(slurm: FakeSlurm) -> list[list[str]]:
    return [list(argv) for argv in slurm.calls_to("srun")]


def job_queries(slurm: FakeSlurm) -> int:
    return slurm.count("scontrol", "--details", "show", "job")


def test_argv_is_one_overlapping_step_without_gpus(srun: FakeSlurm) -> None:
    step(srun, "0: TOKEN rc=0 t0=1 t1=2 node=node-1\n1: TOKEN rc=0 t0=1 t1=2 node=node-2\n")
    before = len(_exec.call_log)
    SrunTransport(RemoteOptions(jobid="42", timeout=9)).run(["node-2", "node-1"], "hostname")
    (argv,) = steps(srun)
    assert argv[:9] == [
        "srun",
        "--jobid=42",
        "--overlap",
        "--gres=gpu:0",
        "--nodes=2",
        "--ntasks-per-node=1",
        "--nodelist=node-[1-2]",
        "--label",
        "--kill-on-bad-exit=0",
    ]
    assert argv[9:11] == ["sh", "-c"]
    assert "timeout -k 5 9 sh -c hostname" in argv[11]
    assert len(_exec.call_log) - before == 2  # scontrol show job + srun, through run_slurm
    assert job_queries(srun) == 1


def test_job_without_gpus_gets_no_gres_option(srun: FakeSlurm) -> None:
    """Where no GPU gres exist Slurm refuses --gres=gpu:0 ("Invalid generic resource ...")."""
    job(srun, CPU_JOB)
    step(srun, "0: TOKEN rc=0 t0=1 t1=2 node=node-4\n")
    (result,) = SrunTransport(RemoteOptions(jobid="5")).run(["node-4"], "true")
    (argv,) = steps(srun)
    assert result.ok
    assert not any(a.startswith("--gres") for a in argv[: argv.index("sh")])
    assert argv[:4] == ["srun", "--jobid=5", "--overlap", "--nodes=1"]
    assert job_queries(srun) == 1


def test_unknown_job_stops_before_srun(srun: FakeSlurm) -> None:
    job(srun, None)
    with pytest.raises(NotFound, match="unknown job 77"):
        SrunTransport(RemoteOptions(jobid="77")).run(["node-1"], "true")
    assert steps(srun) == []


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"alloc_tres": "cpu=8,node=2,billing=8,gres/gpu=8"}, True),
        ({"alloc_tres": "cpu=8,node=2,gres/gpu:a100=8"}, True),
        ({"alloc_tres": "cpu=8,node=2,gres/gpu=0"}, False),
        ({"alloc_tres": "cpu=8,node=2,gres/nic=1"}, False),
        ({"gres_detail": (GresAlloc(nodes="n1", gres="gpu:a100:2(IDX:0,2)"),)}, True),
        ({"gres_detail": (GresAlloc(nodes="n1", gres="nic:1"),)}, False),
        ({"gres_per_node": "gpu:4"}, True),
        ({"gres_per_node": "gpu:h100:0"}, False),
        ({}, False),
    ],
)
def test_holds_gpus(fields: dict, expected: bool) -> None:
    assert holds_gpus(Job(job_id="1", **fields)) is expected


def test_holds_gpus_on_recorded_jobs() -> None:
    (gpu,) = parse_scontrol_jobs(GPU_JOB)
    assert holds_gpus(gpu)
    assert not any(holds_gpus(j) for j in parse_scontrol_jobs(CPU_JOB))


def test_label_output_is_mapped_to_slurm_node_names(srun: FakeSlurm) -> None:
    """Task ids are not node names: the marker's node= field is what maps them."""
    step(
        srun,
        "1: from task one\n"
        "0: from task zero\n"
        "1: TOKEN rc=0 t0=1 t1=2 node=node-1\n"
        "0: partTOKEN rc=3 t0=1 t1=2 node=node-2\n",
        stderr="0: oops\n",
    )
    one, two, three = SrunTransport(RemoteOptions(jobid="42")).run(
        ["node-1", "node-2", "node-3"], "x"
    )
    assert (one.status, one.stdout) == ("ok", "from task one\n")
    assert (two.status, two.exit_code, two.stdout, two.stderr) == (
        "failed",
        3,
        "from task zero\npart",
        "oops\n",
    )
    assert three.status == "failed" and "no end marker" in three.error


def test_exit_124_after_the_limit_is_a_timeout(srun: FakeSlurm) -> None:
    step(
        srun,
        "0: TOKEN rc=124 t0=0 t1=5000000000 node=node-1\n"
        "1: TOKEN rc=124 t0=0 t1=10000000 node=node-2\n",
    )
    slow, quick = SrunTransport(RemoteOptions(jobid="7", timeout=5)).run(["node-1", "node-2"], "x")
    assert slow.status == "timeout"
    assert quick.status == "failed" and quick.exit_code == 124  # its own exit code


def test_step_refused_fails_every_node_with_srun_message(srun: FakeSlurm) -> None:
    step(
        srun,
        "",
        rc=1,
        stderr="srun: error: Unable to create step for job 5: "
        "Requested node configuration is not available\n",
    )
    results = SrunTransport(RemoteOptions(jobid="5")).run(["node-4"], "x")
    assert results[0].status == "failed"
    assert "Requested node configuration is not available" in results[0].error


def test_srun_needs_a_job() -> None:
    with pytest.raises(UsageError, match="--jobid"):
        SrunTransport(RemoteOptions())


def test_auto_with_a_job_is_srun(srun: FakeSlurm) -> None:
    step(srun, "0: TOKEN rc=0 t0=1 t1=2 node=n1\n")
    assert remote.run(["n1"], "true", options=RemoteOptions(jobid="3")).transport == "srun"
