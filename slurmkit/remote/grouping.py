"""Group per-node results like ``dshbak -c``: identical output shown once.

Nodes whose stdout, stderr and outcome are identical share one block headed
by their folded hostlist, so 1000 healthy nodes print one block and the odd
one stands out. Failures follow, one line per group of nodes that failed the
same way (:mod:`slurmkit.grouping`, as every node report), or one per node
with ``per_node`` (``run -v``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from slurmkit.grouping import group_nodes
from slurmkit.hostlist import fold
from slurmkit.remote.result import FAILED, OK, UNREACHABLE, NodeResult

RULE = "-" * 16


@dataclass(frozen=True)
class OutputGroup:
    """Nodes whose stdout, stderr and outcome are identical: shown as one block."""

    nodes: tuple[str, ...]
    stdout: str
    stderr: str
    status: str
    exit_code: int | None

    @property
    def header(self) -> str:
        folded = fold(self.nodes)
        if self.status == OK:
            return folded
        if self.status == FAILED and self.exit_code is not None:
            return f"{folded} (exit {self.exit_code})"
        return f"{folded} ({self.status})"


def group(results: Iterable[NodeResult]) -> list[OutputGroup]:
    """Blocks of identical results that printed something, in order of first appearance.

    Unreachable nodes never ran the command: their connection errors are in
    the failure lines, not in blocks.
    """
    shown = [r for r in results if r.status != UNREACHABLE and (r.stdout or r.stderr)]
    groups = group_nodes(
        shown, node=lambda r: r.node, key=lambda r: (r.stdout, r.stderr, r.status, r.exit_code)
    )
    return [OutputGroup(g.nodes, *g.key) for g in groups]


def failure_line(result: NodeResult) -> str:
    detail = result.error or result.status
    return f"{result.node}: {result.status}: {detail}"


_NODE = "<node>"


def failure_lines(results: Iterable[NodeResult], per_node: bool = False) -> list[str]:
    """``node-[3,5] (2 nodes): unreachable: ssh: connect to host <node> port 22: refused``.

    Nodes that failed the same way share a line: same status and the same error
    once each node's own name in it is replaced by ``<node>`` (ssh and pdsh name
    the host they could not reach). A group of one keeps its line as it was.
    """
    failed = [r for r in results if not r.ok]
    if per_node:
        return [failure_line(r) for r in failed]
    groups = group_nodes(failed, node=lambda r: r.node, key=lambda r: (r.status, _generic(r)))
    first = {r.node: r for r in reversed(failed)}
    lines = []
    for g in groups:
        if len(g.nodes) == 1:
            lines.append(failure_line(first[g.nodes[0]]))
        else:
            status, detail = g.key
            lines.append(f"{g.hostlist} ({g.count} nodes): {status}: {detail}")
    return lines


def _generic(result: NodeResult) -> str:
    """The error with the node's own name as ``<node>`` (whole names only, not n1 in n10)."""
    detail = result.error or result.status
    return re.sub(rf"(?<![\w.-]){re.escape(result.node)}(?![\w-])", _NODE, detail)


def format_grouped(results: Sequence[NodeResult], per_node: bool = False) -> str:
    """The text ``slurmkit run`` prints: output blocks, then the failures (grouped unless
    ``per_node``)."""
    lines: list[str] = []
    for g in group(results):
        lines += [RULE, g.header, RULE]
        if g.stdout:
            lines += g.stdout.rstrip("\n").split("\n")
        if g.stderr:
            lines += ["[stderr]", *g.stderr.rstrip("\n").split("\n")]
    failures = failure_lines(results, per_node)
    if failures:
        lines += [RULE, "failed nodes", RULE, *failures] if lines else failures
    return "\n".join(lines) + ("\n" if lines else "")
