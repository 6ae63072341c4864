"""Processes grouped by identical stack; the smallest groups of ranks are the outliers.

In a hung collective, most ranks wait in the same call and the culprit is
somewhere else: the few processes whose stack differs. Stacks are compared
on the main thread (innermost frame first, file and line included; native
addresses ignored, they move with ASLR): helper threads (heartbeats,
pin-memory, loggers) sit at slightly different places in every process and
would otherwise make every process a group of one. Launchers (torchrun,
deepspeed) and child processes are grouped apart and never called outliers:
there is one launcher per node against many ranks, always "smallest".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from slurmkit.hostlist import fold
from slurmkit.pyspy.records import CHILD, LAUNCHER, RANK, ProcessStack
from slurmkit.pyspy.stack import Frame

_ROLE_ORDER = {RANK: 0, CHILD: 1, LAUNCHER: 2}


@dataclass(frozen=True)
class StackGroup:
    role: str
    frames: tuple[Frame, ...]
    members: tuple[ProcessStack, ...]
    outlier: bool = False

    @property
    def count(self) -> int:
        return len(self.members)

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.node for m in self.members))

    @property
    def folded_nodes(self) -> str:
        return fold(self.nodes)


def stack_key(frames: Iterable[Frame]) -> tuple[tuple[str, str, int | None], ...]:
    return tuple(frame.key() for frame in frames)


def group_stacks(processes: Iterable[ProcessStack]) -> list[StackGroup]:
    """Groups of dumped processes, ranks first, largest first; outliers marked."""
    buckets: dict[tuple[str, tuple], list[ProcessStack]] = {}
    for proc in processes:
        if proc.ok:
            role = proc.role if proc.role in _ROLE_ORDER else RANK
            buckets.setdefault((role, stack_key(proc.main_frames)), []).append(proc)
    groups = [
        StackGroup(role, members[0].main_frames, tuple(members))
        for (role, _), members in buckets.items()
    ]
    groups.sort(key=lambda g: (_ROLE_ORDER[g.role], -g.count))
    return mark_outliers(groups)


def mark_outliers(groups: list[StackGroup]) -> list[StackGroup]:
    """The rank groups of the smallest size, when not every rank group has that size."""
    sizes = [g.count for g in groups if g.role == RANK]
    if len(sizes) < 2 or min(sizes) == max(sizes):
        return groups
    smallest = min(sizes)
    return [
        replace(g, outlier=True) if g.role == RANK and g.count == smallest else g for g in groups
    ]
