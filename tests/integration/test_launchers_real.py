"""The shipped launcher templates with the real launchers: torchrun, accelerate, DeepSpeed, mpirun.

test_templates.py runs these templates with a stand-in that prints its arguments; only a
real launcher shows that what a template gives it forms a process group. Each test here
renders a shipped template, submits it to the sandbox and runs a tiny distributed program
on CPU (gloo): every rank prints its rank, the world size, its node and the sum of an
``all_reduce``.
The test asserts every rank once, the world size, the ranks on each node in Slurm's node
order (the first node holds rank 0: it is MASTER_ADDR) and the sum.

The launchers live in their own venv (``scripts/launchers-venv``: torch 2.13.0 CPU build,
accelerate 1.15.0, DeepSpeed 0.19.8); building it takes about a minute, so these tests run
only with ``SLURMKIT_TEST_LAUNCHERS=1`` (``./scripts/test`` sets it in CI and builds the
venv first). The nodes run the venv's python by its absolute path,
``SLURMKIT_LAUNCHERS_PYTHON`` (default /opt/slurmkit/launchers-venv/bin/python): /opt is
bound into every Slurm version's root. mpirun is the host's Open MPI (``openmpi-bin``,
installed by scripts/bootstrap), found on the batch node's PATH.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from slurmkit import hostlist, sandbox
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll

pytestmark = pytest.mark.skipif(
    os.environ.get("SLURMKIT_TEST_LAUNCHERS") != "1",
    reason="real launchers run only with SLURMKIT_TEST_LAUNCHERS=1 (./scripts/test: in CI, in the "
    "first Slurm version's session; their venv is scripts/launchers-venv)",
)

PYTHON = Path(
    os.environ.get("SLURMKIT_LAUNCHERS_PYTHON", "/opt/slurmkit/launchers-venv/bin/python")
)
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}
# Six to nine python processes importing torch on a 2-core machine shared with other work.
JOB_TIMEOUT = 600.0

# The tiny distributed program. Each launcher hands the rendezvous over in its own way:
# torchrun and accelerate (torch.distributed.run underneath) and DeepSpeed's launch.py set
# RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT; DeepSpeed also passes --local_rank=N, and its
# own init_distributed forms the group; under mpirun the rank and size are Open MPI's.
TRAIN_PY = """import os, sys
import torch
import torch.distributed as dist

launcher = [a for a in sys.argv[1:] if not a.startswith("--")][0]  # DeepSpeed adds --local_rank=N
if launcher == "deepspeed":
    import deepspeed
    deepspeed.init_distributed(dist_backend="gloo")
elif launcher == "mpirun":
    os.environ["RANK"] = os.environ["OMPI_COMM_WORLD_RANK"]
    os.environ["WORLD_SIZE"] = os.environ["OMPI_COMM_WORLD_SIZE"]
    dist.init_process_group("gloo")
else:
    dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
# One step of training: each rank's gradient is rank + 1; the all_reduce sums them.
model = torch.nn.Linear(1, 1, bias=False)
model(torch.tensor([[float(rank + 1)]])).sum().backward()
grad = model.weight.grad.clone()
dist.all_reduce(grad)
node = os.environ["SLURMD_NODENAME"]
line = f"SK_RANK rank={rank} world={world} node={node} sum={grad.item():g}\\n"
os.write(1, line.encode())  # one write: whole lines even where outputs are merged
# And in a file of its own in the job's (shared) folder: mpirun's output forwarding has
# been seen to drop a rank's line from a completed job's log. "x": a rank twice fails.
with open(f"ranks/{rank}", "x") as out:
    out.write(line)
dist.destroy_process_group()
"""

# Not anchored and numbers only: mpirun forwards the ranks' output as it comes, and two
# ranks' lines can land on one line of the log.
RANK_LINE = re.compile(r"SK_RANK rank=(\d+) world=(\d+) node=([\w.-]+) sum=([0-9.]+)")


@dataclass
class Launch:
    """Submits into a private folder; cancels what it submitted when the test ends."""

    run_cli: Callable[..., object]
    root: Path
    cluster: sandbox.SandboxSpec
    names: list[str] = field(default_factory=list)

    def new_name(self) -> str:
        name = f"sk-launch-{uuid.uuid4().hex[:8]}"
        self.names.append(name)
        return name

    def submit_template(self, template: str, *sets: str) -> tuple[str, str]:
        name = self.new_name()
        args = ["template", "submit", template, "--script-dir", str(self.root / "scripts")]
        for value in (f"log_dir={self.root / 'logs'}", f"job_name={name}", *sets):
            args += ["--set", value]
        result = self.run_cli(*args, "--", f"--chdir={self.root}")
        job_id = result.stdout.strip()  # type: ignore[attr-defined]
        assert job_id.isdigit(), result
        return job_id, name

    def log(self, name: str, job_id: str) -> str:
        path = self.root / "logs" / f"{name}-{job_id}.out"
        return path.read_text() if path.exists() else f"(no log at {path})"

    def cancel_all(self) -> None:
        for name in self.names:
            run_slurm(["scancel", f"--name={name}"], check=False)


@pytest.fixture
def launch(cluster: sandbox.SandboxSpec, run_cli, tmp_path: Path) -> Iterator[Launch]:
    if not os.access(PYTHON, os.X_OK):
        pytest.fail(f"no launcher venv python at {PYTHON}: run ./scripts/launchers-venv")
    (tmp_path / "train.py").write_text(TRAIN_PY)
    (tmp_path / "logs").mkdir()
    (tmp_path / "ranks").mkdir()
    helper = Launch(run_cli=run_cli, root=tmp_path, cluster=cluster)
    try:
        yield helper
    finally:
        helper.cancel_all()


def sacct_rows(job_id: str, name: str, fields: str) -> list[list[str]]:
    """This job's rows only: the sandbox reuses job ids after a restart, names are unique."""
    argv = ["sacct", "-X", "-n", "-P", "-j", job_id, f"--name={name}", "-o", fields]
    return [line.split("|") for line in run_slurm(argv).stdout.splitlines() if line]


def wait_final(job_id: str, name: str) -> str:
    def final() -> str:
        rows = sacct_rows(job_id, name, "State")
        now = rows[0][0].split(" ")[0] if rows else ""
        return now if now in FINAL else ""

    return str(poll(final, JOB_TIMEOUT, f"job {job_id} ({name}) to end"))


def job_nodes(job_id: str, name: str) -> list[str]:
    ((nodelist,),) = sacct_rows(job_id, name, "NodeList")
    return hostlist.expand(nodelist)


def assert_group(root: Path, log: str, nodes: list[str], per_node: int) -> None:
    """Every rank once, one world of all of them, ranks by node in Slurm's order, the sum.

    Read from the ranks' own files (root/ranks/<rank>); the job log is shown on failure.
    """
    world = len(nodes) * per_node
    ranks: dict[int, tuple[int, str, float]] = {}
    text = "".join(p.read_text() for p in sorted((root / "ranks").iterdir()))
    for match in RANK_LINE.finditer(text):
        rank, size, node, total = match.groups()
        assert int(rank) not in ranks, f"rank {rank} printed twice:\n{log}"
        ranks[int(rank)] = (int(size), node, float(total))
    assert sorted(ranks) == list(range(world)), log
    assert {size for size, _, _ in ranks.values()} == {world}, log
    for i, node in enumerate(nodes):
        on_node = {rank for rank, (_, where, _) in ranks.items() if where == node}
        assert on_node == set(range(i * per_node, (i + 1) * per_node)), (node, log)
    assert {total for _, _, total in ranks.values()} == {world * (world + 1) / 2}, log


# Each launcher by the venv's own entry point: its shebang is the venv's python, and the
# launcher starts the workers with that same python (sys.executable).
LAUNCHERS = {
    "torchrun": "torchrun",
    "accelerate": "accelerate launch",
    "deepspeed": "deepspeed",
}


@pytest.mark.parametrize("template", sorted(LAUNCHERS))
def test_real_launcher_forms_a_four_rank_group_over_two_nodes(
    launch: Launch, template: str
) -> None:
    """2 nodes x 2 workers (gpus_per_node=2: the sandbox's GPUs are names only; the
    program runs on CPU): the template's rendezvous must give one group of 4 ranks."""
    bin_dir = PYTHON.parent
    job_id, name = launch.submit_template(
        template,
        "nodes=2",
        "gpus_per_node=2",
        "cpus_per_task=2",
        "time=10",
        f"launcher={bin_dir / LAUNCHERS[template]}",
        "script=train.py",
        f"script_args={template}",
        # One thread per worker on 2 shared cores; gloo on the sandbox nodes' network.
        "setup=export OMP_NUM_THREADS=1",
    )
    assert wait_final(job_id, name) == "COMPLETED", launch.log(name, job_id)
    nodes = job_nodes(job_id, name)
    assert len(nodes) == 2
    assert_group(launch.root, launch.log(name, job_id), nodes, per_node=2)


def test_mpirun_template_places_three_ranks_per_node_from_the_openmpi_hostfile(
    launch: Launch,
) -> None:
    """The mpirun template: Open MPI's mpirun reads ``slurmkit hostfile --format openmpi``
    (3 slots a node, from gpus_per_node=3) and places ranks 0-2 on the first node and 3-5
    on the second; the ranks join torch's gloo group from Open MPI's rank variables."""
    if launch.cluster.root:  # as test_launch_templates.py's mpirun test
        pytest.skip("mpirun is the host's Open MPI: not inside another Slurm version's root")
    slurmkit_bin = Path(shutil.which("slurmkit") or Path(sys.executable).parent / "slurmkit")
    job_id, name = launch.submit_template(
        "mpirun",
        "nodes=2",
        "gpus_per_node=3",
        "cpus_per_task=1",
        "time=10",
        f"python={PYTHON}",
        "script=train.py",
        "script_args=mpirun",
        # The sandbox's jobs run as root, which mpirun refuses unless told.
        "mpirun_args=--allow-run-as-root -x OMP_NUM_THREADS",
        # slurmkit (for `slurmkit hostfile`) where the batch step runs; one thread a rank.
        f"setup=export PATH={shlex.quote(str(slurmkit_bin.parent))}:$PATH OMP_NUM_THREADS=1",
    )
    assert wait_final(job_id, name) == "COMPLETED", launch.log(name, job_id)
    text = launch.log(name, job_id)
    nodes = job_nodes(job_id, name)
    assert f"\n{nodes[0]} slots=3\n{nodes[1]} slots=3\n" in text, text
    assert_group(launch.root, text, nodes, per_node=3)
