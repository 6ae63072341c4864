"""Node reports that stay short at 10,000 nodes: one line per group of alike nodes.

Every report and plan that lists nodes (undrain, ``nodes drained``, ``faulty scan``,
the ``node`` commands, ``run``'s failures) would print one line per node: 5,000
nodes drained for the same reason and skipped for the same cause are 5,000 lines
that say one thing. Rows that agree on everything but the node (state, reason,
action, ...) become one row, with their nodes folded into a hostlist and counted,
so the odd node stands out instead of scrolling away. The per-node view
(``-v``) and JSON keep one record per node: this only shapes the default table.

Groups come in the order their first node came (the report's own order, usually
Slurm's node order), so the output is stable from run to run.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from slurmkit.hostlist import fold

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

NODES = "nodes"
COUNT = "count"


@dataclass(frozen=True)
class NodeGroup(Generic[K]):
    """Nodes that share ``key``, in the order they came (names or hostlists)."""

    key: K
    nodes: tuple[str, ...]

    @property
    def hostlist(self) -> str:
        """The nodes folded and sorted, duplicates once (``node-[1-3,7]``)."""
        return fold(self.nodes)

    @property
    def count(self) -> int:
        """How many distinct nodes; a member may itself be a hostlist."""
        from slurmkit.hostlist import HostSet

        if len(self.nodes) == 1 and not _is_hostlist(self.nodes[0]):
            return 1
        return len(HostSet(self.nodes))


def group_nodes(
    items: Iterable[T], node: Callable[[T], str], key: Callable[[T], K]
) -> list[NodeGroup[K]]:
    """Items bucketed by ``key(item)``, each bucket's nodes ``node(item)``, in first-seen order.

    One pass and one dict: linear in the number of items (10,000 rows in a few ms).
    """
    buckets: dict[K, list[str]] = {}
    for item in items:
        buckets.setdefault(key(item), []).append(node(item))
    return [NodeGroup(k, tuple(names)) for k, names in buckets.items()]


def grouped_table(
    rows: Iterable[Sequence[object]], headers: Sequence[str], node_column: int = 0
) -> tuple[list[list[object]], list[str]]:
    """Rows equal in every cell but the node's become one: ``[nodes, count, *the others]``.

    The node cell may be a name or a hostlist (``nodes drained`` rows are folded
    already); the group's cell is the folded union of them. The headers become
    ``nodes``, ``count`` (upper case if the node's header was) and the other headers
    in their order.
    """
    groups = group_nodes(
        rows,
        node=lambda row: str(row[node_column]),
        key=lambda row: tuple(cell for i, cell in enumerate(row) if i != node_column),
    )
    others = [h for i, h in enumerate(headers) if i != node_column]
    names = [NODES, COUNT]
    if headers and str(headers[node_column]).isupper():  # faulty scan's NODE, RESULT, ...
        names = [n.upper() for n in names]
    return [[g.hostlist, g.count, *g.key] for g in groups], [*names, *others]


def per_node_table(rows: Iterable[Sequence[object]], node_column: int = 0) -> list[list[object]]:
    """Rows whose node cell is a hostlist, one row per node (``-v`` of a folded report)."""
    from slurmkit.hostlist import iter_expand

    out: list[list[object]] = []
    for row in rows:
        cell = str(row[node_column])
        for name in iter_expand(cell) if _is_hostlist(cell) else (cell,):
            out.append([*row[:node_column], name, *row[node_column + 1 :]])
    return out


def _is_hostlist(text: str) -> bool:
    return "[" in text or "," in text
