"""Slurm's compact value formats in job environments and ``scontrol show job -d``.

Each function reads one documented format exactly and raises
:class:`~slurmkit.errors.SlurmParseError` on anything else, so a caller can
say which variable was malformed instead of guessing a slot count:

- ``SLURM_TASKS_PER_NODE=2(x3),1`` and ``SLURM_JOB_CPUS_PER_NODE=72(x2),36``:
  per-node counts in the order of ``SLURM_JOB_NODELIST`` (``man sbatch``,
  OUTPUT ENVIRONMENT VARIABLES).

GPU id lists (``SLURM_JOB_GPUS=2,3``) are :mod:`slurmkit.grammar.idrange`'s; GRES strings
and ``SLURM_GPUS_PER_NODE`` (``a100:2,v100:2``) :mod:`slurmkit.grammar.gres`'s; node names
:mod:`slurmkit.hostlist`'s.
"""

from __future__ import annotations

import re

from slurmkit.errors import SlurmParseError

# At most 20 digits: Python refuses to read a 5000-digit number (it was a traceback).
_REPEATED = re.compile(r"(\d{1,20})(?:\(x(\d{1,20})\))?")


def parse_repeated(text: str) -> list[tuple[int, int]]:
    """``2(x3),1`` -> ``[(2, 3), (1, 1)]``: (count, how many consecutive nodes have it).

    Kept compressed: a hostile ``1(x999999999)`` costs nothing until it is
    checked against the node count by :func:`per_node`.
    """
    pairs: list[tuple[int, int]] = []
    for part in text.strip().split(","):
        match = _REPEATED.fullmatch(part.strip())
        if not match or (match.group(2) is not None and int(match.group(2)) == 0):
            raise SlurmParseError(f"not a Slurm per-node count list: {text!r}")
        pairs.append((int(match.group(1)), int(match.group(2) or 1)))
    return pairs


def per_node(text: str, nodes: int) -> list[int]:
    """Per-node counts of ``text`` (``2(x3),1``), which must describe exactly ``nodes`` nodes."""
    pairs = parse_repeated(text)
    described = sum(times for _, times in pairs)
    if described != nodes:
        raise SlurmParseError(f"{text!r} describes {described} nodes, the allocation has {nodes}")
    return [value for value, times in pairs for _ in range(times)]
