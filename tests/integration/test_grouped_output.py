"""Short output on the sandbox (issue 20 item 5): alike nodes share one line.

Two idle nodes drained with the same reason (ours, unique per run: other engineers share
the cluster) are one line of ``nodes drained`` and of ``undrain --dry-run`` with a
folded hostlist and a count; ``-v`` prints one line per node. The nodes are returned
in a ``finally``.
"""

from __future__ import annotations

import json
import uuid

import pytest

from slurmkit import sandbox
from slurmkit.hostlist import fold
from tests.integration.test_undrain import _drained, _idle_nodes


def _rows(out: str) -> list[list[str]]:
    """The table's rows split at runs of blanks (header and rule dropped)."""
    return [line.split() for line in out.splitlines()[2:]]


@pytest.mark.smoke
def test_two_nodes_drained_for_one_reason_print_one_line(
    cluster: sandbox.SandboxSpec, run_cli
) -> None:
    a, b = _idle_nodes(2)
    tag = f"sk-test grouped {uuid.uuid4().hex[:6]}"
    pair = fold([a, b])
    with _drained({a: tag, b: tag}):
        drained = _rows(run_cli("nodes", "drained", "--reason", tag).stdout)
        assert len(drained) == 1 and drained[0][:2] == [pair, "2"]
        per_node = _rows(run_cli("nodes", "drained", "--reason", tag, "-v").stdout)
        assert sorted(r[0] for r in per_node) == sorted([a, b])
        data = json.loads(run_cli("nodes", "drained", "--reason", tag, "--json").stdout)
        assert [(d["nodes"], d["count"]) for d in data] == [(pair, 2)]

        args = ("undrain", "--dry-run", "--reason", f"^{tag}$", "-w", pair)
        plan = _rows(run_cli(*args, exit_code=None).stdout)
        assert len(plan) == 1 and plan[0][:2] == [pair, "2"]
        assert sorted(r[0] for r in _rows(run_cli(*args, "-v", exit_code=None).stdout)) == sorted(
            [a, b]
        )
