"""Typed records for what Slurm reports, independent of how it was read.

Parsers of JSON (any Slurm version) and of delimited or key=value text all
produce these, so a command never needs to know which Slurm version or output
format answered. Values Slurm leaves unset (``0`` times, ``(null)``, ``N/A``,
``UNLIMITED``) become ``None`` here; times are timezone-aware datetimes.

The small canonicalising functions (node/job state, end times)
live here too because both parser modules must agree on them exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from slurmkit.errors import SlurmParseError
from slurmkit.grammar import gres as gres_grammar

# Base node states; everything else Slurm attaches ("DRAIN", "NOT_RESPONDING",
# "COMPLETING", "POWERED_DOWN", ...) is a flag.
NODE_BASE_STATES = frozenset(
    {"IDLE", "ALLOCATED", "MIXED", "DOWN", "ERROR", "FUTURE", "UNKNOWN", "PLANNED"}
)
_NODE_STATE_ALIASES = {
    "ALLOC": "ALLOCATED",
    "MIX": "MIXED",
    "UNK": "UNKNOWN",
    "FUTR": "FUTURE",
    "NO_RESPOND": "NOT_RESPONDING",
    "COMP": "COMPLETING",
}
# Suffixes sinfo/scontrol append to a state word instead of spelling a flag.
_NODE_STATE_SUFFIXES = {
    "*": "NOT_RESPONDING",
    "~": "POWERED_DOWN",
    "#": "POWERING_UP",
    "%": "POWERING_DOWN",
    "!": "POWER_DOWN",
    "$": "MAINTENANCE",
    "@": "REBOOT_REQUESTED",
    "^": "REBOOT_ISSUED",
    "-": "PLANNED",
}
_BUSY_BASES = frozenset({"ALLOCATED", "MIXED"})
HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})
FINISHED_JOB_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
        "SPECIAL_EXIT",
        "REVOKED",
    }
)


def node_state(parts: Iterable[str]) -> tuple[str, frozenset[str]]:
    """Split Slurm's node state into (base, flags), whatever the spelling.

    Accepts ``["MIXED", "DRAIN"]`` (JSON 23.02+), ``"mixed"`` plus
    ``state_flags`` (JSON 22.05), ``"MIXED+DRAIN"`` (scontrol) and
    ``"down*"`` (sinfo), so all parsers agree on one model.
    """
    tokens: list[str] = []
    for part in parts:
        for raw in str(part).split("+"):
            word = raw.strip().upper()
            suffix_flags = []
            while word and word[-1] in _NODE_STATE_SUFFIXES:
                suffix_flags.append(_NODE_STATE_SUFFIXES[word[-1]])
                word = word[:-1]
            tokens.extend([word] if word else [])
            tokens.extend(suffix_flags)
    words = [_NODE_STATE_ALIASES.get(t, t) for t in tokens]
    base = next((w for w in words if w in NODE_BASE_STATES), words[0] if words else "UNKNOWN")
    return base, frozenset(w for w in words if w != base)


def job_state(parts: Iterable[str]) -> tuple[str, frozenset[str]]:
    """(base, flags) of a job state: ``["PENDING", "REQUEUED"]`` or ``"CANCELLED by 0"``."""
    words = [w.upper() for part in parts for w in str(part).replace("+", " ").split()]
    words = [w for w in words if w != "BY" and not w.isdigit()]
    if not words:
        return "UNKNOWN", frozenset()
    return words[0], frozenset(words[1:])


def plausible_end(end: datetime | None, state: str, time_limit: int | None) -> datetime | None:
    """Drop the end time Slurm invents for unfinished jobs without a time limit.

    Slurm reports start + 1 year (or a far-future value for pending jobs) as
    the "expected end" of a job with an unlimited time limit; nobody should
    plan with that.
    """
    if end is None or state in FINISHED_JOB_STATES or time_limit is not None:
        return end
    return None


@dataclass(frozen=True, order=True)
class SlurmVersion:
    """Slurm release, comparable: ``SlurmVersion(22, 5, 8) < SlurmVersion(24, 11, 0)``."""

    major: int
    minor: int
    micro: int = 0

    @classmethod
    def parse(cls, text: str) -> SlurmVersion:
        """Read ``slurm-wlm 22.05.8``, ``slurm 24.11.5`` or a bare ``24.11``."""
        match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
        if not match:
            raise SlurmParseError(f"cannot read a Slurm version from {text.strip()[:80]!r}")
        major, minor, micro = match.groups()
        return cls(int(major), int(minor), int(micro or 0))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor:02d}.{self.micro}"


@dataclass(frozen=True, kw_only=True)
class Node:
    """One node; ``state`` is the base state and ``flags`` the rest (DRAIN, ...)."""

    name: str
    state: str
    flags: frozenset[str] = frozenset()
    cpus: int | None = None
    cpus_alloc: int | None = None
    cpu_load: float | None = None
    real_memory: int | None = None
    alloc_memory: int | None = None
    free_memory: int | None = None
    gres: str = ""
    gres_used: str = ""
    partitions: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    active_features: tuple[str, ...] = ()
    reason: str | None = None
    reason_user: str | None = None
    reason_time: datetime | None = None
    address: str | None = None
    hostname: str | None = None
    version: str | None = None
    boot_time: datetime | None = None
    slurmd_start_time: datetime | None = None
    tres: str = ""
    alloc_tres: str = ""
    raw: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def state_text(self) -> str:
        """Slurm's own spelling, e.g. ``MIXED+DRAIN``."""
        return "+".join([self.state, *sorted(self.flags)])

    @property
    def is_draining(self) -> bool:
        """Drain requested while jobs still run: Slurm's "draining"/"drng"."""
        return "DRAIN" in self.flags and (self.state in _BUSY_BASES or "COMPLETING" in self.flags)

    @property
    def is_drained(self) -> bool:
        """Drain requested and nothing runs any more: Slurm's "drained"."""
        return "DRAIN" in self.flags and not self.is_draining

    @property
    def is_down(self) -> bool:
        return self.state == "DOWN"

    @property
    def is_not_responding(self) -> bool:
        return "NOT_RESPONDING" in self.flags

    @property
    def is_idle(self) -> bool:
        return self.state == "IDLE" and "DRAIN" not in self.flags


@dataclass(frozen=True, kw_only=True)
class GresAlloc:
    """Resources a job holds on some of its nodes (``scontrol show job -d`` detail lines).

    Text output groups identical nodes (``nodes="node-[1-2]"``); JSON lists
    one entry per node.
    """

    nodes: str
    gres: str = ""
    cpu_ids: str | None = None
    mem: int | None = None

    @property
    def gpu_indices(self) -> str | None:
        """``0-3`` from ``gpu:4(IDX:0-3)``: which devices the job got."""
        return gres_grammar.gpu_indices(self.gres)


@dataclass(frozen=True, kw_only=True)
class Job:
    """A job or array task, from squeue, scontrol, sacct or their JSON.

    ``job_id`` is Slurm's unique id (``5`` for task 1 of array 4);
    :attr:`display_id` is the ``4_1`` form users type. Fields a source does not
    report stay ``None`` (squeue text has no exit code, sacct no GRES detail).
    ``raw`` keeps every key Slurm printed (scontrol text) for fields not modelled.
    """

    job_id: str
    name: str = ""
    user: str | None = None
    state: str = "UNKNOWN"
    state_flags: frozenset[str] = frozenset()
    reason: str | None = None
    array_job_id: str | None = None
    array_task_id: str | None = None
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    nodelist: str = ""
    batch_host: str | None = None
    num_nodes: int | None = None
    num_cpus: int | None = None
    cpus_per_task: int | None = None
    gres_per_node: str = ""
    gres_detail: tuple[GresAlloc, ...] = ()
    alloc_tres: str = ""
    submit_time: datetime | None = None
    # When the job began to accrue queue age (multifactor's age factor counts from here).
    accrue_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    time_limit: int | None = None
    time_used: int | None = None
    time_left: int | None = None
    priority: int | None = None
    held: bool = False
    dependency: str | None = None
    exit_code: int | None = None
    exit_signal: int | None = None
    work_dir: str | None = None
    std_out: str | None = None
    std_err: str | None = None
    raw: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def display_id(self) -> str:
        """``4_1`` for an array task, ``4_[2-6%1]`` for pending tasks, else the job id."""
        if not self.array_job_id or self.array_task_id is None:
            return self.job_id
        task = self.array_task_id
        return f"{self.array_job_id}_{task if task.isdigit() else f'[{task}]'}"

    @property
    def is_array(self) -> bool:
        return self.array_job_id is not None

    @property
    def is_pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def is_running(self) -> bool:
        return self.state == "RUNNING"

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_JOB_STATES


@dataclass(frozen=True, kw_only=True)
class Partition:
    name: str
    nodes: str = ""
    default: bool = False
    state: str = "UP"
    max_time: int | None = None
    default_time: int | None = None
    total_nodes: int | None = None
    total_cpus: int | None = None
    hidden: bool = False


@dataclass(frozen=True, kw_only=True)
class DrainReason:
    """One line of ``sinfo -R``: the nodes that share a reason, its author and time.

    ``state`` is sinfo's long state word (``drained``, ``draining``, ``down*``).
    """

    reason: str
    nodelist: str
    user: str | None = None
    time: datetime | None = None
    state: str = ""


@dataclass(frozen=True, kw_only=True)
class ProcessInfo:
    """One process of ``scontrol listpids``; ``step_id`` is ``batch``, ``extern`` or a number."""

    pid: int
    job_id: str
    step_id: str | None = None
    local_id: int | None = None
    global_id: int | None = None
