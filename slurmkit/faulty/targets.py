"""Which nodes a scan runs on, and how many GPUs per node its job may ask for.

``-w LIST`` scans those nodes; ``--nodes K`` lets Slurm pick K nodes of the
partition; neither scans every node of the partition (the default partition when
none is named). Nodes that cannot run a job now (drained, down, not responding,
powered down) are left out of the job, so it does not wait for them forever, and
reported as unavailable. One ``scontrol show node`` call (plus one for the partition).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slurmkit.errors import SlurmkitError, UsageError
from slurmkit.grammar.gres import gpu_count
from slurmkit.hostlist import HostSet, fold
from slurmkit.slurm import query
from slurmkit.slurm.records import Node

_CANNOT_RUN = frozenset(
    {
        "DRAIN",
        "NOT_RESPONDING",
        "POWERED_DOWN",
        "POWERING_DOWN",
        "POWER_DOWN",
        "POWERING_UP",
        "MAINTENANCE",
        "REBOOT_REQUESTED",
        "REBOOT_ISSUED",
        "FAIL",
    }
)
_RUNNING_BASES = frozenset({"IDLE", "MIXED", "ALLOCATED"})


@dataclass(frozen=True)
class Targets:
    """``nodelist`` None: Slurm picks ``count`` nodes of the partition."""

    count: int
    nodelist: str | None
    unavailable: list[tuple[str, str]] = field(default_factory=list)
    gpus: dict[str, int] = field(default_factory=dict)  # per candidate node

    @property
    def gpus_per_node(self) -> int:
        """What every node can give: a GPU request the job can get wherever it lands."""
        return min(self.gpus.values(), default=0)

    @property
    def mixed_gpus(self) -> bool:
        return len(set(self.gpus.values())) > 1


def can_run_jobs(node: Node) -> bool:
    return node.state in _RUNNING_BASES and not (node.flags & _CANNOT_RUN)


def choose(partition: str | None, nodes: int | None, nodelist: HostSet | None) -> Targets:
    if nodes is not None and nodelist is not None:
        raise UsageError("--nodes and -w/--nodelist exclude each other")
    if nodes is not None and nodes < 1:
        raise UsageError("--nodes must be at least 1")
    if nodelist is not None:
        if not nodelist:
            raise UsageError("-w/--nodelist names no node")
        records = query.nodes(nodelist)
    else:
        records = _partition_nodes(partition)
    usable = [n for n in records if can_run_jobs(n)]
    unavailable = [(n.name, n.state_text) for n in records if not can_run_jobs(n)]
    if not usable:
        states = ", ".join(f"{name} {state}" for name, state in unavailable) or "no nodes"
        raise SlurmkitError(f"no node to scan can run a job now ({states})")
    if nodes is not None and nodes > len(usable):
        raise SlurmkitError(
            f"--nodes {nodes}: only {len(usable)} node(s) of the partition can run a job now"
        )
    counts = {n.name: gpu_count(n.gres) or 0 for n in usable}
    if nodes is not None:
        return Targets(count=nodes, nodelist=None, gpus=counts)
    return Targets(
        count=len(usable),
        nodelist=fold([n.name for n in usable]),
        unavailable=unavailable,
        gpus=counts,
    )


def _partition_nodes(partition: str | None) -> list[Node]:
    if partition is not None:
        return query.nodes(HostSet(query.partition_nodelist(partition)))
    default = next((p for p in query.partitions() if p.default), None)
    if default is None or not default.nodes:
        return query.nodes()
    return query.nodes(HostSet(default.nodes))
