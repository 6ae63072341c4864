"""The rendezvous variables multi-node launchers need, computed from the allocation.

``MASTER_ADDR`` is the first node in Slurm's order (what ``scontrol show
hostnames | head -n 1`` means to do, without the pipe); ``NNODES`` and
``WORLD_SIZE`` come from the allocation, ``GPUS_PER_NODE`` from the slot
resolution (:mod:`slurmkit.jobenv.slots`: GPUs, else tasks per node).

``NODE_RANK`` is exported only inside an ``srun`` step, where it is this
node's ``SLURM_NODEID``: in the batch script a value would be inherited by
every node's tasks and all of them would claim rank 0. Inside a step the
allocation is the step's nodes (``SLURM_STEP_NODELIST``), the list
``SLURM_NODEID`` counts in.

Launcher extras: ``torchrun`` reads ``PET_<OPTION>`` variables as defaults
for its options (``torch.distributed.argparse_util.env``), so
``PET_NNODES``/``PET_NPROC_PER_NODE``/``PET_MASTER_ADDR``/``PET_MASTER_PORT``
(and ``PET_NODE_RANK`` where known) configure it with no arguments.
``accelerate launch`` and ``deepspeed`` read no such variables; their extras
are named after their options (``--num_machines "$NUM_MACHINES"``,
``--num_gpus "$NUM_GPUS"``) so scripts need no arithmetic.

``srun`` as the launcher (one task per GPU, no torchrun): each task is a worker, so
``RANK``/``LOCAL_RANK``/``WORLD_SIZE`` are the task's ``SLURM_PROCID``/``SLURM_LOCALID``/
``SLURM_NTASKS`` (what ``torch.distributed``'s ``env://`` init reads). They exist only
inside the step's tasks: in the batch script they would be the batch step's, so
``--launcher srun`` is refused there, as a per-node value is.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from slurmkit.errors import SlurmkitError, UsageError
from slurmkit.jobenv.allocation import Allocation
from slurmkit.jobenv.slots import Slots

LAUNCHERS = ("torchrun", "accelerate", "deepspeed", "srun")
DEFAULT_PORT = 6000
_AUTO_PORT_BASE = 20000  # same formula as the shipped launcher templates


@dataclass(frozen=True)
class LaunchEnv:
    """Variables to export, in order, and notes for ``-v``."""

    variables: tuple[tuple[str, str], ...]
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, str]:
        return dict(self.variables)

    def exports(self) -> str:
        """``export NAME=value`` lines for ``eval "$(slurmkit launch-env)"``, values quoted."""
        return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in self.variables)


def parse_port(text: str) -> int | str:
    """``--port``: 1-65535, or ``auto`` (20000 + job id mod 20000: jobs sharing a node differ)."""
    word = text.strip().lower()
    if word == "auto":
        return word
    try:
        port = int(word)
    except ValueError:
        raise UsageError(f"--port must be a number 1-65535 or auto, not {text!r}") from None
    if not 1 <= port <= 65535:
        raise UsageError(f"--port must be 1-65535, not {port}")
    return port


def resolve_port(port: int | str, job_id: str | None) -> int:
    if isinstance(port, int):
        return port
    digits = (job_id or "").split("_", 1)[0]
    if not digits.isdigit():
        raise UsageError("--port auto needs a job id (run inside a job or give --jobid)")
    return _AUTO_PORT_BASE + int(digits) % _AUTO_PORT_BASE


def check_nnodes(env: Mapping[str, str], nnodes: int) -> None:
    """Refuse an ``NNODES`` already set to another node count ("Mismatching nodes number").

    A launcher told to wait for 64 nodes in a 40-node job hangs until its
    rendezvous times out; failing here names both numbers at once.
    """
    existing = env.get("NNODES", "").strip()
    if not existing or existing == str(nnodes):
        return
    raise UsageError(
        f"NNODES={existing} is set in the environment but SLURM_NNODES={nnodes} (the nodes "
        f"of this allocation): launchers would wait for {existing} nodes; set "
        "NNODES=$SLURM_NNODES or change #SBATCH --nodes"
    )


def node_rank(alloc: Allocation) -> int | None:
    """This node's rank in ``alloc``: ``SLURM_NODEID`` inside a step, else unknown (None)."""
    if not alloc.in_step or alloc.env is None:
        return None
    value = alloc.env.get("SLURM_NODEID", "").strip()
    if not value.isdigit():
        return None
    rank = int(value)
    me = alloc.env.get("SLURMD_NODENAME", "").strip()
    if rank >= len(alloc.hosts) or (me and alloc.hosts[rank] != me):
        raise SlurmkitError(
            f"SLURM_NODEID={rank} does not point at this node ({me or '?'}) in "
            f"{alloc.origin}: run launch-env in a step that spans the nodes it launches on"
        )
    return rank


def build(
    alloc: Allocation,
    slots: Slots,
    *,
    port: int,
    launcher: str | None = None,
) -> LaunchEnv:
    """The variables for ``alloc``; GPUS_PER_NODE must be one number for the node asking."""
    rank = node_rank(alloc)
    per_node = slots.uniform
    if per_node is None and rank is not None:
        per_node = slots.per_host[rank]
    if per_node is None:
        shown = ", ".join(f"{h}: {n}" for h, n in zip(alloc.hosts, slots.per_host, strict=True))
        raise SlurmkitError(
            f"nodes have different slot counts ({shown}): GPUS_PER_NODE depends on the node; "
            "run launch-env inside srun (one task per node) so each node gets its own"
        )
    nnodes = str(len(alloc.hosts))
    common = [
        ("MASTER_ADDR", alloc.first),
        ("MASTER_PORT", str(port)),
        ("NNODES", nnodes),
        ("GPUS_PER_NODE", str(per_node)),
        ("WORLD_SIZE", str(slots.total)),
    ]
    if rank is not None:
        common.append(("NODE_RANK", str(rank)))
    extras = _launcher_extras(launcher, dict(common), rank, alloc)
    if extras:  # a launcher's own value of a common name (srun's WORLD_SIZE) replaces it
        names = {name for name, _ in extras}
        common = [(name, value) for name, value in common if name not in names]
    notes = [slots.describe()]
    if rank is None:
        notes.append(
            "NODE_RANK not exported: outside an srun step a value would reach every node; "
            "run launch-env inside srun, or use $SLURM_NODEID in the srun command"
        )
    return LaunchEnv(tuple(common + extras), tuple(notes))


def _launcher_extras(
    launcher: str | None, common: Mapping[str, str], rank: int | None, alloc: Allocation
) -> list[tuple[str, str]]:
    if launcher is None:
        return []
    nnodes, per_node = common["NNODES"], common["GPUS_PER_NODE"]
    ranked = rank is not None
    if launcher == "torchrun":
        extras = [
            ("PET_NNODES", nnodes),
            ("PET_NPROC_PER_NODE", per_node),
            ("PET_MASTER_ADDR", common["MASTER_ADDR"]),
            ("PET_MASTER_PORT", common["MASTER_PORT"]),
        ]
        return extras + ([("PET_NODE_RANK", str(rank))] if ranked else [])
    if launcher == "accelerate":
        extras = [("NUM_MACHINES", nnodes), ("NUM_PROCESSES", common["WORLD_SIZE"])]
        return extras + ([("MACHINE_RANK", str(rank))] if ranked else [])
    if launcher == "deepspeed":
        return [("NUM_NODES", nnodes), ("NUM_GPUS", per_node)]
    if launcher == "srun":
        return srun_ranks(alloc)
    raise UsageError(f"unknown launcher {launcher!r} (one of {', '.join(LAUNCHERS)})")


def srun_ranks(alloc: Allocation) -> list[tuple[str, str]]:
    """RANK, LOCAL_RANK, WORLD_SIZE of this srun task; refused outside a step's task."""
    env = alloc.env or {}
    names = ("SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS")
    values = [env.get(name, "").strip() for name in names]
    if not alloc.in_step or not all(v.isdigit() for v in values):
        raise UsageError(
            "--launcher srun exports each task's RANK, LOCAL_RANK and WORLD_SIZE: run it "
            "inside the srun step, in each task (srun ... bash -c 'eval \"$(slurmkit "
            "launch-env --launcher srun)\"; python train.py'), not in the batch script"
        )
    rank, local, size = (int(v) for v in values)
    if not (0 <= rank < size):
        raise SlurmkitError(f"SLURM_PROCID={rank} is outside SLURM_NTASKS={size}")
    return [("RANK", str(rank)), ("LOCAL_RANK", str(local)), ("WORLD_SIZE", str(size))]
