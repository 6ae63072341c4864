"""Group per-node results like ``dshbak -c``: identical output shown once.

Nodes whose stdout, stderr and outcome are identical share one block headed
by their folded hostlist, so 1000 healthy nodes print one block and the odd
one stands out. Failures are also listed one line per node, after the blocks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from slurmkit.hostlist import fold
from slurmkit.remote.result import FAILED, OK, UNREACHABLE, NodeResult

RULE = "-" * 16


@dataclass(frozen=True)
class Group:
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


def group(results: Iterable[NodeResult]) -> list[Group]:
    """Blocks of identical results that printed something, in order of first appearance.

    Unreachable nodes never ran the command: their connection errors are in
    the failure lines, not in blocks.
    """
    buckets: dict[tuple[str, str, str, int | None], list[str]] = {}
    for r in results:
        if r.status == UNREACHABLE or not (r.stdout or r.stderr):
            continue
        buckets.setdefault((r.stdout, r.stderr, r.status, r.exit_code), []).append(r.node)
    return [Group(tuple(nodes), *key) for key, nodes in buckets.items()]


def failure_line(result: NodeResult) -> str:
    detail = result.error or result.status
    return f"{result.node}: {result.status}: {detail}"


def format_grouped(results: Sequence[NodeResult]) -> str:
    """The text ``slurmkit run`` prints: output blocks, then one line per failed node."""
    lines: list[str] = []
    for g in group(results):
        lines += [RULE, g.header, RULE]
        if g.stdout:
            lines += g.stdout.rstrip("\n").split("\n")
        if g.stderr:
            lines += ["[stderr]", *g.stderr.rstrip("\n").split("\n")]
    failures = [failure_line(r) for r in results if not r.ok]
    if failures:
        lines += [RULE, "failed nodes", RULE, *failures] if lines else failures
    return "\n".join(lines) + ("\n" if lines else "")
