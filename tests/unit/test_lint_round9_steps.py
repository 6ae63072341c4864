"""Round nine of issue 32, srun-rank-expanded-early and gpus-per-node-mismatch: what the
ninth test part showed once read.

Each class below is a value the batch step fills in, or a GPU count, that is right after
all; each test also keeps the right finding the class resembles.
"""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V22 = LintContext(SlurmVersion.parse("22.05"))
RANKS = "srun-rank-expanded-early"
GPUS = "gpus-per-node-mismatch"
NODES4 = "#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=2\n"


def _found(text: str, rule: str) -> list[tuple[int, str]]:
    """(line, severity) of every finding of ``rule`` at 22.05."""
    return [(f.line, f.severity) for f in lint_text(text, "t.sh", V22) if f.rule == rule]


def test_quoted_node_rank_under_c10d() -> None:
    """torchrun's c10d rendezvous numbers the nodes as they join, so an early 0 passed as
    ``--node_rank="$NODE_RANK"`` is as harmless quoted as bare; without c10d (the static
    rendezvous) every node claims rank 0 and the finding stays."""
    body = (
        "export NODE_RANK=$SLURM_NODEID\n"
        "srun python -m torch.distributed.run --nproc_per_node=2 --nnodes=4 \\\n"
        '  --node_rank="$NODE_RANK" {backend}--rdzv_endpoint=h:29500 train.py\n'
    )
    assert _found(NODES4 + body.format(backend="--rdzv_backend=c10d "), RANKS) == []
    assert _found(NODES4 + body.format(backend=""), RANKS) == [(6, "info")]


def test_hostname_as_host_port_address() -> None:
    """``dask-worker ${hn}:${port}`` with ``hn=$(hostname -s)``: the scheduler the batch
    step started runs on the first node, so the first node's name is the address every
    task should connect to. A name any task uses as its own (a log name) is still wrong,
    and so is one a task is told to listen on."""
    head = "#!/bin/bash\n#SBATCH --nodes=16\n#SBATCH --ntasks-per-node=16\nhn=$(hostname -s)\n"
    worker = 'port="8786"\ndask-scheduler --host ${hn} --port ${port} &\n'
    assert _found(head + worker + "srun dask-worker ${hn}:${port} &\n", RANKS) == []
    assert _found(head + worker + "srun python w.py --log w.${hn}.txt\n", RANKS) == [(7, "info")]
    listen = "srun python w.py --listen-address tcp://${hn}:${port}\n"
    assert _found(head + worker + listen, RANKS) == [(7, "info")]


def test_valgrind_log_named_per_process() -> None:
    """valgrind's ``%p`` puts each process's pid in its log name, so an early
    ``$SLURM_LOCALID`` beside it only misnames files no two tasks share. Without ``%p``
    every task writes the same file."""
    head = "#!/bin/bash\n#SBATCH -N 512\n"
    vg = "srun -n18432 valgrind --log-file=valgrind.log.$SLURM_LOCALID{pid} ./app\n"
    assert _found(head + vg.format(pid=".%p"), RANKS) == []
    assert _found(head + vg.format(pid=""), RANKS) == [(3, "info")]


def test_exclusive_job_holds_every_gpu_of_its_node() -> None:
    """Plain ``--exclusive`` gives the job every GRES of its nodes (sbatch's man page,
    22.05.8 and 25.11.7; slurmctld's whole-node GRES allocation), so ``-G a100:1`` is the
    least a node gives: four workers may each find a GPU. ``--exclusive=user`` shares
    nothing but the request, and without ``--exclusive`` the finding stays."""
    head = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH -n 48\n#SBATCH -G a100:1\n{excl}#SBATCH --mem=0\n"
    run = "python -m torch.distributed.launch --nproc_per_node=4 train.py --dist\n"
    assert _found(head.format(excl="#SBATCH --exclusive\n") + run, GPUS) == []
    assert _found(head.format(excl="#SBATCH --exclusive=user\n") + run, GPUS) == [(7, "info")]
    assert _found(head.format(excl="") + run, GPUS) == [(6, "info")]


def test_exclusive_still_judges_idle_gpus_and_other_counts() -> None:
    """On whole nodes the request is a floor: a count below it still leaves GPUs idle
    (GPUS_PER_NODE=2 with gpu:4), and a count variable or a program's ``--gpus`` above it
    is unknown there but judged without ``--exclusive``."""
    head = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gres=gpu:4\n{excl}"
    idle = "GPUS_PER_NODE=2\ntorchrun --nproc_per_node $GPUS_PER_NODE train.py\n"
    assert _found(head.format(excl="#SBATCH --exclusive\n") + idle, GPUS) == [(5, "info")]
    more = "NGPUS=8\ntorchrun --nproc_per_node $NGPUS train.py\n"
    assert _found(head.format(excl="#SBATCH --exclusive\n") + more, GPUS) == []
    assert _found(head.format(excl="") + more, GPUS) == [(4, "info")]
