"""Hostfiles, launcher variables and time limits inside and around real jobs on the sandbox.

Batch scripts run the installed ``slurmkit`` (beside ``sys.executable``: the
nodes share this file system) and write what it printed into the test's temp
folder; expectations come from Slurm itself (``scontrol show hostnames``,
each node's ``SLURM_GPUS_ON_NODE`` via ``srun``), never from slurmkit. Job
names are unique; every job is cancelled at the end of its test.
"""

from __future__ import annotations

import json
import shlex
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from slurmkit import _proc, sandbox
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import PLAIN_USER, poll, sacct_state, submit

BIN = Path(sys.executable).parent
SK = BIN / "slurmkit"
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}

# What every hostfile job records besides the hostfiles: Slurm's own expansion of the
# node list, each node's GPU count as its tasks see it, and the variables read.
RECORD = """
scontrol show hostnames "$SLURM_JOB_NODELIST" > "$OUT/hostnames"
srun --ntasks-per-node=1 --ntasks="$SLURM_NNODES" bash -c \
  'echo "$SLURMD_NODENAME ${SLURM_GPUS_ON_NODE:-0}"' | sort > "$OUT/gpus_per_node"
env | grep -E '^SLURM_(GPUS|JOB_GPUS|STEP_GPUS|TASKS_PER_NODE|JOB_CPUS_PER_NODE|NTASKS)' \
  | sort > "$OUT/env"
"""


@dataclass
class JobRun:
    job_id: str
    out: Path

    def read(self, name: str) -> str:
        return (self.out / name).read_text()

    @property
    def hostnames(self) -> list[str]:
        return self.read("hostnames").split()

    @property
    def gpus(self) -> dict[str, int]:
        pairs = (line.split() for line in self.read("gpus_per_node").splitlines())
        return {node: int(count) for node, count in pairs}


@pytest.fixture
def batch(cluster: sandbox.SandboxSpec, tmp_path: Path) -> Iterator[Callable[..., JobRun]]:
    """Submit a script (with $SK and $OUT set), wait for its end, return what it wrote."""
    submitted: list[str] = []

    def run(body: str, *sbatch_args: str, timeout: float = 180) -> JobRun:
        out = tmp_path / f"job{len(submitted)}"
        out.mkdir()
        script = out / "job.sh"
        script.write_text(f"#!/bin/bash\nSK={SK}\nOUT={out}\nPY={sys.executable}\n{body}")
        name = f"sk-jobenv-{uuid.uuid4().hex[:8]}"
        job_id = submit("-J", name, "-o", str(out / "slurm.out"), *sbatch_args, str(script))
        submitted.append(job_id)
        state = poll(lambda: (s := sacct_state(job_id)) in FINAL and s, timeout, f"job {job_id}")
        log = (out / "slurm.out").read_text() if (out / "slurm.out").exists() else ""
        assert state == "COMPLETED", f"job {job_id} ended {state}:\n{log}"
        return JobRun(job_id, out)

    yield run
    if submitted:
        run_slurm(["scancel", *submitted], check=False)


@pytest.fixture
def running(cluster: sandbox.SandboxSpec) -> Iterator[Callable[..., str]]:
    """Start a sleeping job and wait until it runs; cancelled at the end."""
    started: list[str] = []

    def start(*sbatch_args: str) -> str:
        name = f"sk-jobenv-{uuid.uuid4().hex[:8]}"
        job_id = submit("-J", name, "-o", "/dev/null", *sbatch_args, "--wrap", "sleep 300")
        started.append(job_id)
        poll(lambda: query.job(job_id).is_running, 120, f"job {job_id} to run")
        return job_id

    yield start
    if started:
        run_slurm(["scancel", *started], check=False)


def _expected(hosts: list[str], slots: list[int]) -> str:
    return "".join(f"{h} slots={n}\n" for h, n in zip(hosts, slots, strict=True))


HOSTFILE = RECORD + '"$SK" -v hostfile -o "$OUT/hostfile" 2> "$OUT/verbose"\n'


# ---------------------------------------------------------------- hostfile inside jobs


@pytest.mark.parametrize(
    ("sbatch_args", "source"),
    [
        (("-N1",), "SLURM_TASKS_PER_NODE=1"),
        (("-N2", "--gres=gpu:2"), "SLURM_GPUS_ON_NODE=2"),
        (("-N3", "--gres=gpu:3"), "SLURM_GPUS_ON_NODE=3"),
        (("-N2", "--ntasks-per-node=2", "--gres=gpu:1"), "SLURM_GPUS_ON_NODE=1"),
    ],
    ids=["1-node-no-gpu", "2-nodes-gpu2", "3-nodes-gpu3", "gpus-win-over-tasks"],
)
def test_hostfile_inside_job(batch, sbatch_args: tuple[str, ...], source: str) -> None:
    run = batch(HOSTFILE, *sbatch_args)
    hosts = run.hostnames
    assert len(hosts) == int(sbatch_args[0][2:])
    gres = any(arg.startswith("--gres") for arg in sbatch_args)
    per_node = [run.gpus[h] if gres else 1 for h in hosts]
    assert run.read("hostfile") == _expected(hosts, per_node)
    assert f"slurmkit: slots from {source}" in run.read("verbose")


def test_heterogeneous_tasks_give_per_node_slots(batch) -> None:
    """-N2 -n3: Slurm puts 1 task on one node and 2 on the other (SLURM_TASKS_PER_NODE=1,2)."""
    run = batch(HOSTFILE, "-N2", "-n3")
    env = dict(line.split("=", 1) for line in run.read("env").splitlines())
    tasks = [int(n) for n in env["SLURM_TASKS_PER_NODE"].split(",")]
    assert sorted(tasks) == [1, 2]  # really heterogeneous, as Slurm reported it
    assert env["SLURM_JOB_CPUS_PER_NODE"] == env["SLURM_TASKS_PER_NODE"]
    assert run.read("hostfile") == _expected(run.hostnames, tasks)
    assert "slots from SLURM_TASKS_PER_NODE=" in run.read("verbose")


def test_gpus_per_job_are_counted_per_node(batch) -> None:
    """--gpus=5 on 2 nodes: the batch node's SLURM_GPUS_ON_NODE is not every node's count."""
    run = batch(HOSTFILE, "-N2", "--gpus=5")
    hosts = run.hostnames
    per_node = [run.gpus[h] for h in hosts]
    assert sum(per_node) == 5 and len(set(per_node)) == 2  # 4+1 or 3+2: uneven either way
    assert run.read("hostfile") == _expected(hosts, per_node)
    verbose = run.read("verbose")
    assert "slots from scontrol show job -d: GPUs per node" in verbose
    assert "SLURM_GPUS=5 does not fix GPUs per node" in verbose


@pytest.mark.smoke
def test_every_format_inside_a_job(batch) -> None:
    body = RECORD + "".join(
        f'"$SK" hostfile --format {fmt} > "$OUT/{fmt}"\n'
        for fmt in ("deepspeed", "openmpi", "mpich", "plain", "json")
    )
    run = batch(body, "-N2", "--gres=gpu:2")
    hosts = run.hostnames
    assert run.read("deepspeed") == run.read("openmpi") == _expected(hosts, [2, 2])
    assert run.read("mpich") == "".join(f"{h}:2\n" for h in hosts)
    assert run.read("plain") == "".join(f"{h}\n" for h in hosts)
    assert json.loads(run.read("json")) == [{"host": h, "slots": 2} for h in hosts]


# ---------------------------------------------------------------- hostfile from outside


def test_hostfile_by_jobid_from_outside(run_cli, running) -> None:
    job_id = running("-N2", "--gres=gpu:2")
    hosts = run_slurm(["scontrol", "show", "hostnames", query.job(job_id).nodelist]).stdout
    out = run_cli("hostfile", "--jobid", job_id, "--format", "mpich").stdout
    assert out == "".join(f"{h}:2\n" for h in hosts.split())


def test_hostfile_uneven_gpus_by_jobid(run_cli, running) -> None:
    job_id = running("-N2", "-n3", "--gpus-per-task=1")
    detail = {d.nodes: d.gres for d in query.job(job_id).gres_detail}
    out = json.loads(run_cli("hostfile", "--jobid", job_id, "--format", "json").stdout)
    assert sum(entry["slots"] for entry in out) == 3
    for entry in out:
        assert detail[entry["host"]].startswith(f"gpu:{entry['slots']}(IDX:")


def test_hostfile_bad_jobs(run_cli, cluster: sandbox.SandboxSpec) -> None:
    held = submit("-H", "-J", f"sk-jobenv-{uuid.uuid4().hex[:8]}", "--wrap", "true")
    try:
        result = run_cli("hostfile", "--jobid", held, exit_code=2)
        assert f"job {held} has no nodes allocated yet (state PENDING" in result.stderr
        result = run_cli("job", "info", held, "--seconds-left", exit_code=2)
        assert f"job {held} is pending" in result.stderr
    finally:
        run_slurm(["scancel", held])
    assert "unknown job 99999999" in run_cli("hostfile", "--jobid", "99999999", exit_code=2).stderr


# ---------------------------------------------------------------- launch-env


TASK_PY = """import json, os, sys
keys = ("SLURMD_NODENAME", "MASTER_ADDR", "MASTER_PORT", "NNODES", "NODE_RANK",
        "GPUS_PER_NODE", "WORLD_SIZE", "PET_NODE_RANK", "PET_NNODES")
print(json.dumps({k: os.environ.get(k) for k in keys}))
"""

LAUNCH = """
printf '%s' "$TASK_PY" > "$OUT/task.py"
eval "$("$SK" launch-env --port 29500)"
echo "$MASTER_ADDR $MASTER_PORT $NNODES $GPUS_PER_NODE $WORLD_SIZE ${NODE_RANK-unset}" \
  > "$OUT/batch"
NNODES=5 "$SK" launch-env > "$OUT/mismatch.out" 2> "$OUT/mismatch.err"
echo $? > "$OUT/mismatch.rc"
srun --ntasks-per-node=1 --ntasks="$SLURM_NNODES" bash -c '
  eval "$("$SK" launch-env --launcher torchrun --port 29500)" || exit 1
  "$PY" "$OUT/task.py" > "$OUT/task-$SLURMD_NODENAME.json"
  getent hosts "$MASTER_ADDR" > "$OUT/getent-$SLURMD_NODENAME"
'
"""


def test_launch_env_in_a_two_node_job(batch, cluster: sandbox.SandboxSpec) -> None:
    body = RECORD + f"export SK OUT PY\nTASK_PY={shlex.quote(TASK_PY)}\n" + LAUNCH
    run = batch(body, "-N2", "--gres=gpu:2")
    hosts = run.hostnames
    assert run.read("batch").split() == [hosts[0], "29500", "2", "2", "4", "unset"]
    assert run.read("mismatch.rc").strip() == "2"
    assert run.read("mismatch.out") == ""
    assert "NNODES=5" in run.read("mismatch.err") and "SLURM_NNODES=2" in run.read("mismatch.err")
    for rank, host in enumerate(hosts):
        seen = json.loads(run.read(f"task-{host}.json"))
        assert seen == {
            "SLURMD_NODENAME": host,
            "MASTER_ADDR": hosts[0],
            "MASTER_PORT": "29500",
            "NNODES": "2",
            "NODE_RANK": str(rank),
            "GPUS_PER_NODE": "2",
            "WORLD_SIZE": "4",
            "PET_NODE_RANK": str(rank),
            "PET_NNODES": "2",
        }
        resolved = run.read(f"getent-{host}").split()
        master = int(hosts[0].rsplit("-", 1)[1])
        assert resolved[0] == cluster.node_addr(master) and hosts[0] in resolved[1:]


# ---------------------------------------------------------------- time left and extend


def test_seconds_left_inside_a_job(batch) -> None:
    run = batch('"$SK" job info --seconds-left > "$OUT/left"\n', "-N1", "--time=5")
    assert 1 <= int(run.read("left")) <= 300


def test_extend_by_root_and_dry_run(run_cli, running) -> None:
    job_id = running("-N1", "--time=5")
    out = run_cli("job", "extend", job_id, "+2m", "--dry-run").stdout
    assert f"would run: scontrol update JobId={job_id} TimeLimit+=2" in out
    assert query.job(job_id).time_limit == 300  # --dry-run changed nothing
    out = run_cli("job", "extend", job_id, "+2m", "--yes").stdout
    assert out == f"job {job_id}: time limit 00:05:00 -> 00:07:00\n"
    assert query.job(job_id).time_limit == 420
    run_cli("job", "extend", job_id, "00:10:00", "--yes")
    assert query.job(job_id).time_limit == 600
    assert run_cli("job", "extend", job_id, "+1h", exit_code=1).stderr  # no terminal, no --yes
    assert query.job(job_id).time_limit == 600
    left = int(run_cli("job", "info", job_id, "--seconds-left").stdout)
    assert 300 < left <= 600


def test_extend_refused_for_a_plain_user(
    run_cli, cluster: sandbox.SandboxSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user raising their own running job's limit: real Slurm says no, slurmkit explains."""
    name = f"sk-jobenv-{uuid.uuid4().hex[:8]}"
    job_id = submit(f"--uid={PLAIN_USER}", "-D", "/tmp", "-o", "/dev/null", "-J", name, "--time=5",
                    "--wrap", "sleep 300")  # fmt: skip
    try:
        poll(lambda: query.job(job_id).is_running, 120, f"job {job_id} to run")
        real = _proc.runner

        def as_owner(argv, **kwargs):  # only the update runs as the job's owner
            if tuple(argv[:2]) == ("scontrol", "update"):
                argv = ["runuser", "-u", PLAIN_USER, "--", *argv]
            return real(argv, **kwargs)

        monkeypatch.setattr(_proc, "runner", as_owner)
        result = run_cli("job", "extend", job_id, "+1h", "--yes", exit_code=2)
        assert "Access/permission denied" in result.stderr
        assert "only Slurm operators, administrators and root can raise" in result.stderr
        assert query.job(job_id).time_limit == 300
    finally:
        run_slurm(["scancel", job_id])
