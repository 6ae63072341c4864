"""Quick answers for shell completion: one Slurm call each, bounded, never an error.

A user pressing TAB waits for the answer, so every lookup is a single command run with
a short timeout (about 1 s) through :func:`slurmkit.slurm._exec.run_slurm`; with the
controller down, Slurm missing or any other failure the answer is an empty list, never
an exception. The query backend is not used here: pyslurm's calls cannot be given a
deadline, a killed subprocess can.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from slurmkit.errors import SlurmkitError
from slurmkit.slurm import _exec, nodegroups, query
from slurmkit.slurm.parse_records import parse_scontrol_partitions
from slurmkit.slurm.parse_text import Column, parse_squeue

TIMEOUT = 1.0

# How ``sinfo -t`` spells the states a node list can be selected by (sinfo(1), 22.05+).
STATES = (
    "alloc",
    "allocated",
    "cloud",
    "comp",
    "completing",
    "down",
    "drain",
    "drained",
    "draining",
    "fail",
    "failing",
    "future",
    "idle",
    "maint",
    "mix",
    "mixed",
    "no_respond",
    "npc",
    "perfctrs",
    "planned",
    "power_down",
    "power_up",
    "powered_down",
    "powering_down",
    "powering_up",
    "reboot",
    "reserved",
    "unk",
    "unknown",
)


def _stdout(argv: list[str], timeout: float, env: Mapping[str, str] | None = None) -> str:
    try:
        return _exec.run_slurm(argv, timeout=timeout, env=env).stdout
    except (SlurmkitError, OSError):
        return ""


def _lines(argv: list[str], timeout: float) -> list[str]:
    return [line.strip() for line in _stdout(argv, timeout).splitlines() if line.strip()]


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def node_names(timeout: float = TIMEOUT) -> list[str]:
    """Every node name, in sinfo's order (a node in two partitions once): ``@all``'s call."""
    return _unique(_lines(nodegroups.all_nodes_argv(), timeout))


def partitions(timeout: float = TIMEOUT) -> list[str]:
    """Partition names, from the Slurm layer's own ``scontrol show partition`` and parser."""
    try:
        found = parse_scontrol_partitions(_stdout(query.partitions_argv(), timeout))
    except SlurmkitError:
        return []
    return _unique([p.name for p in found])


def features(timeout: float = TIMEOUT) -> list[str]:
    """Every node feature, sorted: ``@feature:``'s call and parser, read for all features."""
    text = _stdout(nodegroups.features_argv(), timeout)
    return sorted({f for _, found in nodegroups.parse_node_features(text) for f in found})


def reservations_argv() -> list[str]:
    return ["scontrol", "-o", "show", "reservation"]


def reservations(timeout: float = TIMEOUT) -> list[str]:
    names = (
        re.match(r"ReservationName=(\S+)", line) for line in _lines(reservations_argv(), timeout)
    )
    return _unique([m.group(1) for m in names if m])


JOB_COLUMNS: tuple[Column, ...] = (("display_id", "%i"), ("user", "%u"))


def jobs_argv() -> list[str]:
    return query.squeue_argv(columns=JOB_COLUMNS)


def jobs(user: str | None, timeout: float = TIMEOUT) -> list[str]:
    """Job ids in the queue as users type them (``4_1``): ``user``'s first, then the others'.

    The Slurm layer's own squeue call and parser (one call, every user's jobs).
    """
    try:
        found = parse_squeue(_stdout(jobs_argv(), timeout, query._SQUEUE_ENV), JOB_COLUMNS)
    except SlurmkitError:
        return []
    ids = [(j.display_id or j.job_id, j.user) for j in found]
    mine = [i for i, owner in ids if user is not None and owner == user]
    return _unique(mine + [i for i, owner in ids if user is None or owner != user])
