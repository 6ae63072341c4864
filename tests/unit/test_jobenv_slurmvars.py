"""Slurm's per-node repetition lists (``2(x3),1``).

GRES strings and GPU counts are tested in test_grammar_gres.py, GPU id lists in
test_grammar_idrange.py.
"""

from __future__ import annotations

import pytest

from slurmkit.errors import SlurmParseError
from slurmkit.jobenv import slurmvars


@pytest.mark.parametrize(
    ("text", "nodes", "expected"),
    [
        ("8(x2),4", 3, [8, 8, 4]),  # SLURM_JOB_CPUS_PER_NODE, heterogeneous
        ("2(x3),1", 4, [2, 2, 2, 1]),  # man sbatch's SLURM_TASKS_PER_NODE example
        ("72(x2),36", 3, [72, 72, 36]),  # man sbatch's SLURM_JOB_CPUS_PER_NODE example
        ("1,2", 2, [1, 2]),  # sandbox: -N2 -n3
        ("4,2", 2, [4, 2]),  # sandbox: -N2 -n3 -c2
        ("1(x2)", 2, [1, 1]),
        ("1", 1, [1]),
        (" 3(x2) ", 2, [3, 3]),
    ],
)
def test_per_node_lists(text: str, nodes: int, expected: list[int]) -> None:
    assert slurmvars.per_node(text, nodes) == expected


def test_per_node_must_describe_every_node() -> None:
    with pytest.raises(SlurmParseError, match="describes 3 nodes, the allocation has 2"):
        slurmvars.per_node("8(x2),4", 2)
    with pytest.raises(SlurmParseError, match="describes 1 nodes"):
        slurmvars.per_node("2", 4)


def test_huge_repetition_is_refused_without_expanding() -> None:
    with pytest.raises(SlurmParseError, match="999999999999"):
        slurmvars.per_node("1(x999999999999)", 4)


@pytest.mark.parametrize("text", ["", "x", "8(x)", "8(x0)", "8(2)", "8x2", "-1", "2,,1", "2(x2"])
def test_malformed_per_node_lists(text: str) -> None:
    with pytest.raises(SlurmParseError):
        slurmvars.per_node(text, 2)
