"""The read-only queries answered through pyslurm (Slurm's C API), record for record.

:class:`PyslurmBackend` returns exactly the records :mod:`.query`'s command backend
parses from ``scontrol``/``squeue``/``sinfo`` text, so no caller can tell which
backend answered: the parity test on the 25.11 sandbox compares both in every
scenario the integration suite builds. Where Slurm's clients format a value
(``sinfo -R``'s long state word, its grouping of nodes per reason, ``scontrol``'s
``GRES=gpu:2(IDX:0-1)``), the same rule is applied here to the same C fields.

Only reads live here. State changes (update node, hold, release, cancel, job
updates) stay on ``scontrol``/``scancel``: their per-task answers for arrays
(``115_2-4: No error``) are what :mod:`.query` interprets, pyslurm's modify calls
raise one error for the whole array instead, and a change must be echoed under
``-v`` as the exact command an operator could run again by hand.

Not answered here, and so always by the command backend: ``sacct`` (accounting,
through slurmdbd), ``listpids`` (asks a node's slurmd), ``nodes_in_state`` (sinfo's
state-word matching), ``pending_starts`` (``squeue --start``) and the commented-job
look-ups of the journal.

pyslurm is imported by :mod:`.backend` only after it checked that a configuration
exists (libslurm ends the whole process without one) and that pyslurm's Slurm
series matches the cluster's.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import pyslurm

from slurmkit.errors import ControllerUnreachable, NotFound, SlurmError
from slurmkit.grammar import gres as gres_grammar
from slurmkit.slurm import _exec
from slurmkit.slurm.backend import (
    NodeNames,
    QueryBackend,
    Words,
    nodelist_of_job,
    partition_named,
    record_asked,
)
from slurmkit.slurm.records import (
    FINISHED_JOB_STATES,
    HELD_REASONS,
    DrainReason,
    GresAlloc,
    Job,
    Node,
    Partition,
    job_state,
    node_state,
    plausible_end,
)

# What squeue is given by the command backend: array task lists in full, not cut at 64.
os.environ["SLURM_BITSTR_LEN"] = "0"

_UNREACHABLE = re.compile(
    r"unable to contact slurm controller|connection refused|socket timed out"
    r"|communication connection failure|zero bytes were transmitted",
    re.I,
)


# The configuration libslurm was initialised with (import pyslurm reads SLURM_CONF).
_conf_in_use = os.environ.get("SLURM_CONF", "")


def _follow_slurm_conf() -> None:
    """Re-initialise libslurm when SLURM_CONF changed since it was read, as the commands
    (one process each) would read the new one. A file that is not there is refused
    here: libslurm would end the whole process on it."""
    global _conf_in_use
    current = os.environ.get("SLURM_CONF", "")
    if current == _conf_in_use:
        return
    if current and not os.path.isfile(current):
        raise ControllerUnreachable(
            f"pyslurm: cannot locate slurmctld: SLURM_CONF={current} does not exist",
            ["slurm_init"],
        )
    pyslurm.slurm_fini()
    pyslurm.slurm_init(current or None)
    _conf_in_use = current


def _call(command: str, load: Any, *args: Any) -> Any:
    """One pyslurm RPC, its failure turned into the command backend's error and message:
    ``command`` is the client the commands backend would have run for the same query
    (``squeue: cannot reach slurmctld: Unable to contact slurm controller ...``)."""
    _follow_slurm_conf()
    # One entry per RPC in the log the commands backend keeps of its client runs, so "no
    # call per node" is checked the same way on both (``sinfo -R`` is one process but two
    # loads here: nodes and partitions).
    _exec.call_log.append((command, "(pyslurm)", getattr(load, "__qualname__", str(load))))
    try:
        return load(*args)
    except pyslurm.RPCError as exc:
        message = str(exc).strip() or "no message"
        argv = [command, "(pyslurm)"]
        if _UNREACHABLE.search(message):
            raise ControllerUnreachable(
                f"{command}: cannot reach slurmctld: {message}", argv, None, message
            ) from None
        if re.search(r"invalid (job id|node name|partition name)|does not exist", message, re.I):
            raise NotFound(f"{command}: {message}", argv, None, message) from None
        raise SlurmError(f"{command} (pyslurm) failed: {message}", argv, None, message) from None


def _when(epoch: int | None) -> datetime | None:
    """An epoch as the text parsers give it: aware, local, whole seconds; 0/None -> None."""
    if not epoch or not isinstance(epoch, int):
        return None
    return datetime.fromtimestamp(epoch).astimezone()


def _text(value: Any) -> str | None:
    """A C string as the text parsers see it: empty and Slurm's null words are None."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text in ("", "(null)", "N/A", "None", "Unknown") else text


def _names(values: NodeNames | None) -> list[str]:
    """Each name once expanded: a HostSet's as they come, names (or hostlists) expanded."""
    if not values:
        return []
    if not isinstance(values, (str, Sequence)):
        return list(values)  # a HostSet
    from slurmkit.hostlist import expand

    joined = values if isinstance(values, str) else ",".join(values)
    return list(expand(joined))


def _fold(names: Iterable[str]) -> str:
    """Slurm's ranged, sorted hostlist of ``names`` (``node-[1-2,4]``)."""
    from slurmkit.hostlist import fold

    return fold(list(names))


def _gres_text(gres: dict[str, Any] | None) -> str:
    """``{"gpu": 4}`` -> ``gpu:4``; ``{"gpu": {"count": 2, "indexes": "0-1"}}`` ->
    ``gpu:2(IDX:0-1)``: Slurm's own spelling of the string pyslurm parsed."""
    parts = []
    for name, value in (gres or {}).items():
        if isinstance(value, dict):
            parts.append(f"{name}:{value.get('count')}(IDX:{value.get('indexes')})")
        else:
            parts.append(f"{name}:{value}")
    return ",".join(parts)


def _kv_text(values: dict[str, Any] | None) -> str:
    """``{"cpu": 2, "mem": "2000M"}`` -> ``cpu=2,mem=2000M`` (pyslurm keeps Slurm's order)."""
    return ",".join(f"{k}={v}" for k, v in (values or {}).items())


def _minutes(value: Any) -> int | None:
    """A limit in minutes as seconds; UNLIMITED/NOT_SET (not an int) -> None."""
    return value * 60 if isinstance(value, int) and not isinstance(value, bool) else None


# ---------------------------------------------------------------- nodes

# scontrol's memory unit for CfgTRES (convert_num_unit: the largest exact unit).
_UNITS = ("M", "G", "T", "P")


def _mem_text(mb: int) -> str:
    unit = 0
    while mb and mb % 1024 == 0 and unit < len(_UNITS) - 1:
        mb //= 1024
        unit += 1
    return f"{mb}{_UNITS[unit]}"


def _cfg_tres(n: Any) -> str:
    """``CfgTRES``: pyslurm 25.11 leaves the node's ``tres_fmt_str`` out (commented out in
    node.pyx), so it is rebuilt in slurmctld's order: cpu, mem, billing, then each gres.
    billing equals the CPU count without TRESBillingWeights (the sandbox sets none)."""
    cpus = n.total_cpus
    parts = [f"cpu={cpus}"]
    if n.real_memory:
        parts.append(f"mem={_mem_text(n.real_memory)}")
    parts.append(f"billing={cpus}")
    for name, value in (n.configured_gres or {}).items():
        count = value.get("count") if isinstance(value, dict) else value
        parts.append(f"gres/{name}={count}")
    return ",".join(parts)


def _node(n: Any) -> Node:
    base, flags = node_state([n.state or "UNKNOWN"])
    registered = bool(n.slurm_version)
    return Node(
        name=n.name,
        state=base,
        flags=flags,
        cpus=n.total_cpus,
        cpus_alloc=n.allocated_cpus,
        # scontrol prints N/A for a node that never reported a load; pyslurm says 0.0
        cpu_load=n.cpu_load if registered else None,
        real_memory=n.real_memory,
        alloc_memory=n.allocated_memory,
        free_memory=n.free_memory,
        gres=_gres_text(n.configured_gres),
        gres_used="",  # 25.11's scontrol prints GresUsed only with --details
        partitions=tuple(n.partitions or ()),
        features=tuple(n.available_features or ()),
        active_features=tuple(n.active_features or ()),
        reason=_text(n.reason) if n.reason else None,
        reason_user=(n.reason_user or None) if n.reason and n.reason_time else None,
        reason_time=_when(n.reason_time) if n.reason else None,
        address=_text(n.address),
        hostname=_text(n.hostname),
        version=_text(n.slurm_version),
        boot_time=_when(n.boot_time),
        slurmd_start_time=_when(n.slurmd_start_time),
        tres=_cfg_tres(n),
        alloc_tres=_kv_text(n.allocated_tres),
    )


def _load_nodes(command: str = "scontrol") -> list[Any]:
    loaded = _call(command, pyslurm.Nodes.load)
    return list(loaded.values())


# ---------------------------------------------------------------- drain reasons (sinfo -R)

_BITS = {  # slurm.h NODE_STATE_* flags, for sinfo's sort by the raw state value
    "RESERVED": 1 << 5,
    "CLOUD": 1 << 7,
    "DRAIN": 1 << 9,
    "COMPLETING": 1 << 10,
    "NOT_RESPONDING": 1 << 11,
    "POWERED_DOWN": 1 << 12,
    "FAIL": 1 << 13,
    "POWERING_UP": 1 << 14,
    "MAINTENANCE": 1 << 15,
    "REBOOT_REQUESTED": 1 << 16,
    "POWERING_DOWN": 1 << 18,
    "REBOOT_ISSUED": 1 << 20,
    "PLANNED": 1 << 21,
    "POWER_DOWN": 1 << 23,
}
_BASES = {"UNKNOWN": 0, "DOWN": 1, "IDLE": 2, "ALLOCATED": 3, "ERROR": 4, "MIXED": 5, "FUTURE": 6}
_SUFFIXES = (  # node_state_string(): the first flag present gives the suffix
    ("MAINTENANCE", "$"),
    ("REBOOT_ISSUED", "^"),
    ("REBOOT_REQUESTED", "@"),
    ("POWERING_UP", "#"),
    ("POWERING_DOWN", "%"),
    ("POWERED_DOWN", "~"),
    ("POWER_DOWN", "!"),
    ("NOT_RESPONDING", "*"),
)


def _state_value(node: Node) -> int:
    return _BASES.get(node.state, 0) | sum(_BITS.get(f, 0) for f in node.flags)


def state_word(node: Node) -> str:
    """sinfo's ``%T`` for a node: Slurm's node_state_string() in lower case."""
    flags, base = node.flags, node.state
    busy = "COMPLETING" in flags or base in ("ALLOCATED", "MIXED")
    suffix = next((s for f, s in _SUFFIXES if f in flags), "")
    if "DRAIN" in flags:
        word = "draining" if busy else "drained"
    elif "FAIL" in flags:
        word, suffix = ("failing" if busy else "fail"), ("*" if "NOT_RESPONDING" in flags else "")
    else:
        word = base.lower()
    return word + suffix


# ---------------------------------------------------------------- partitions


def _load_partitions(command: str = "scontrol") -> list[Any]:
    return list(_call(command, pyslurm.Partitions.load).values())


def _partition(p: Any) -> Partition:
    return Partition(
        name=p.name,
        nodes=_text(p.nodes) or "",
        default=bool(p.is_default),
        state=str(p.state or "UP").upper(),
        max_time=_minutes(p.max_time),
        default_time=_minutes(p.default_time),
        total_nodes=p.total_nodes,
        total_cpus=p.total_cpus,
        hidden=bool(p.is_hidden),
    )


# ---------------------------------------------------------------- jobs


def _array_task_text(j: Any) -> str | None:
    """squeue's ``%K``: the pending tasks (``2-6%1``) or the task id; None for no array."""
    waiting = j.array_tasks_waiting
    if waiting:
        limit = j.array_tasks_parallel
        return f"{waiting}%{limit}" if limit else str(waiting)
    task = j.array_task_id
    return None if task is None else str(task)


def _dependency_text(j: Any) -> str | None:
    """Slurm's dependency string (``afterok:12(unfulfilled)``) from pyslurm's dict of it."""
    deps = j.dependencies
    if not deps:
        return None
    items: list[str] = []
    for kind in ("after", "afterany", "afterburstbuffer", "aftercorr", "afternotok", "afterok"):
        items.extend(f"{kind}:{job}" for job in deps.get(kind) or [])
    if deps.get("singleton"):
        items.append("singleton")
    return ("?" if deps.get("satisfy") == "any" else ",").join(items) or None


def _reason(j: Any) -> str | None:
    reason = _text(j.state_reason)
    return None if reason in (None, "None") else reason


def _squeue_job(j: Any) -> Job:
    """A job as the command backend's ``squeue`` row gives it (no detail fields)."""
    state, flags = job_state([j.state or "UNKNOWN"])
    limit = _minutes(j.time_limit)
    used = j.run_time or 0
    reason = _reason(j)
    task = _array_task_text(j)
    return Job(
        job_id=str(j.id),
        name=j.name or "",
        user=_text(j.user_name),
        state=state,
        state_flags=flags,
        reason=reason,
        array_job_id=str(j.array_id) if task is not None else None,
        array_task_id=task,
        partition=_text(j.partition),
        account=_text(j.account),
        qos=_text(j.qos),
        nodelist=_text(j.allocated_nodes) or "",
        batch_host=_text(j.batch_host),
        num_nodes=j.num_nodes,
        num_cpus=j.cpus,
        gres_per_node=gres_grammar.normalize(_gres_text(j.gres_per_node)),
        submit_time=_when(j.submit_time),
        start_time=_when(j.start_time),
        end_time=plausible_end(_when(j.end_time), state, limit),
        time_limit=limit,
        time_used=used,
        time_left=None if limit is None else limit - used,
        priority=j.priority,
        held=reason in HELD_REASONS,
        dependency=_dependency_text(j),
        work_dir=_text(j.working_directory),
    )


def _load_jobs(command: str = "squeue") -> list[Any]:
    return list(_call(command, pyslurm.Jobs.load).values())


# squeue's short state names (``--states=PD,R``), spelled out as job records hold them
_SHORT_STATES = {
    "PD": "PENDING",
    "R": "RUNNING",
    "CG": "COMPLETING",
    "CD": "COMPLETED",
    "CF": "CONFIGURING",
    "CA": "CANCELLED",
    "F": "FAILED",
    "TO": "TIMEOUT",
    "NF": "NODE_FAIL",
    "PR": "PREEMPTED",
    "S": "SUSPENDED",
    "ST": "STOPPED",
    "SI": "SIGNALING",
    "SO": "STAGE_OUT",
    "RS": "RESIZING",
    "RQ": "REQUEUED",
    "RH": "REQUEUE_HOLD",
    "RF": "REQUEUE_FED",
    "RD": "RESV_DEL_HOLD",
    "RV": "REVOKED",
    "SE": "SPECIAL_EXIT",
    "BF": "BOOT_FAIL",
    "DL": "DEADLINE",
    "OOM": "OUT_OF_MEMORY",
}


def _one_job_order(found: list[Job], head: str) -> list[Job]:
    """The order slurmctld answers squeue's one-id request in (``pack_one_job``): the
    job itself, then its array's records from the array hash chain, newest first."""
    first = [j for j in found if j.job_id == head]
    tasks = [j for j in found if j.array_job_id == head and j.job_id != head]
    rest = [j for j in found if j not in first and j not in tasks]
    return first + sorted(tasks, key=lambda j: -int(j.job_id)) + rest


def _split(values: Words | None) -> list[str]:
    if not values:
        return []
    joined = values if isinstance(values, str) else ",".join(values)
    return [v.strip() for v in joined.split(",") if v.strip()]


def _squeue_order(job: Job) -> tuple[str, str, int]:
    """squeue's default sort (``P,t,-p``): partition name, state word, priority highest
    first; its sort is stable, so ties keep slurmctld's order, which pyslurm keeps too."""
    return (job.partition or "", job.state, -(job.priority or 0))


def _gres_detail(j: Any, threads: dict[str, int]) -> tuple[GresAlloc, ...]:
    """``scontrol -d``'s per-node lines, consecutive identical nodes folded into one."""
    layout = j.get_resource_layout_per_node() or {}
    rows: list[tuple[list[str], str, str | None, int | None]] = []
    for node, res in layout.items():
        gres = _gres_text(res.get("gres"))
        cpu_ids = _cpu_ids(_text(res.get("cpu_ids")), threads.get(node, 1))
        mem = res.get("memory") or 0  # scontrol prints Mem=0 when none was allocated
        if rows and rows[-1][1:] == (gres, cpu_ids, mem):
            rows[-1][0].append(node)
        else:
            rows.append(([node], gres, cpu_ids, mem))
    return tuple(
        GresAlloc(nodes=_fold(names), gres=gres, cpu_ids=cpu_ids, mem=mem)
        for names, gres, cpu_ids, mem in rows
    )


# slurmctld's TRES ids 1-8, the order its TRES strings follow; gres/license come after
_TRES_ORDER = ("cpu", "mem", "energy", "node", "billing", "vmem", "pages")


def _alloc_tres(j: Any) -> str:
    """scontrol's ``AllocTRES`` (pending jobs: empty): pyslurm parses the string into
    objects and keeps no copy, so it is written back in slurmctld's order and units."""
    tres = j.allocated_tres
    if not tres:
        return ""
    parts = []
    for key in _TRES_ORDER:
        count = getattr(getattr(tres, key, None), "count", None)
        if count is not None:
            parts.append(f"{key}={_mem_text(count) if key == 'mem' else count}")
    for name, gres in (getattr(tres, "gres", None) or {}).items():
        parts.append(f"gres/{name}={gres.count}")
    return ",".join(parts)


def _cpu_ids(cores: str | None, threads: int) -> str | None:
    """pyslurm's layout gives core indices (its threads-per-core lookup is a TODO that
    says 1); scontrol prints the CPU ids of those cores: core 1 with 2 threads -> 2-3."""
    if not cores or threads <= 1:
        return cores
    from slurmkit.hostlist import expand, fold

    ids = [int(c) for c in expand(f"x[{cores}]") for c in [c[1:]]]
    cpus = [str(c * threads + t) for c in ids for t in range(threads)]
    return fold([f"x{c}" for c in cpus])[1:].strip("[]")


def _detail_job(j: Any, threads: dict[str, int]) -> Job:
    """A job as ``scontrol --details show job`` gives it: the squeue job and the detail fields."""
    base = _squeue_job(j)
    state = base.state
    limit = base.time_limit
    used = base.time_used
    reason = base.reason.replace("_", " ") if base.reason else None
    return dataclasses.replace(
        base,
        reason=reason,
        cpus_per_task=j.cpus_per_task,
        gres_detail=_gres_detail(j, threads),
        alloc_tres=_alloc_tres(j),
        accrue_time=_when(j.accrue_time),
        time_left=None
        if limit is None or state in FINISHED_JOB_STATES
        else (limit if state == "PENDING" else max(limit - (used or 0), 0)),
        held=reason in HELD_REASONS,
        exit_code=j.exit_code,
        exit_signal=j.exit_code_signal,
        std_out=_text(j.standard_output),
        std_err=_text(j.standard_error),
    )


def _matches(j: Any, job_id: str) -> bool:
    text = job_id.strip()
    if text == str(j.id):
        return True
    if "_" in text:
        array, _, task = text.partition("_")
        return str(j.array_id) == array and str(j.array_task_id) == task
    return j.array_id is not None and str(j.array_id) == text


# ---------------------------------------------------------------- the backend


class PyslurmBackend:
    """The read-only queries of :class:`.backend.QueryBackend` from pyslurm (one RPC each,
    two for ``sinfo -R`` and a running job's detail), records as the commands give them."""

    def nodes(self, names: NodeNames | None = None, *, exact_reasons: bool = False) -> list[Node]:
        """All nodes, or those of a hostlist, in Slurm's node order (one RPC).

        ``exact_reasons`` is accepted for the command backend's signature: the C API
        always gives reasons whole. An unknown name raises NotFound, as scontrol does.
        """
        everything = [_node(n) for n in _load_nodes()]
        if not names:
            return everything
        wanted = _names(names)
        by_name = {n.name: n for n in everything}
        missing = [w for w in wanted if w not in by_name]
        if missing:
            raise NotFound(f"pyslurm: Node {missing[0]} not found", ["load nodes"])
        return [by_name[w] for w in dict.fromkeys(wanted)]

    def jobs(
        self,
        job_ids: Words | None = None,
        user: str | None = None,
        name: str | None = None,
        states: Words | None = None,
        nodelist: NodeNames | None = None,
    ) -> list[Job]:
        """squeue's answer: the jobs matching every filter, in squeue's order.

        ``states`` as squeue takes them (``all``, or state words); squeue's default is
        pending, running and completing (plus the states between). An array id matches
        the array's every task, as ``squeue --jobs`` does.
        """
        found = [_squeue_job(j) for j in _load_jobs()]
        ids = set(_split(job_ids))
        if len(ids) == 1:
            found = _one_job_order(found, next(iter(ids)).split("_", 1)[0])
        wanted_states = {_SHORT_STATES.get(s.upper(), s.upper()) for s in _split(states)}
        nodes_wanted = set(_names(nodelist)) if nodelist else set()
        out = []
        for job in found:
            if ids and not ({job.job_id, job.array_job_id, job.display_id} & ids):
                continue
            if user and job.user != user:
                continue
            if name and job.name not in name.split(","):
                continue
            if not wanted_states:  # squeue's default: every job not finished, and completing ones
                if job.state in FINISHED_JOB_STATES and "COMPLETING" not in job.state_flags:
                    continue
            elif "ALL" not in wanted_states and not (
                job.state in wanted_states or job.state_flags & wanted_states
            ):
                continue
            if nodes_wanted and not (set(_names(job.nodelist)) & nodes_wanted):
                continue
            out.append(job)
        return sorted(out, key=_squeue_order)

    def job(self, job_id: str) -> Job:
        """One job with scontrol's detail; an array id gives the matching record, else the first."""
        found = [j for j in _load_jobs("scontrol") if _matches(j, job_id)]
        if not found:
            raise NotFound(f"unknown job {job_id}", ["load job", job_id])
        running = any(j.allocated_nodes for j in found)
        threads = {n.name: n.threads_per_core or 1 for n in _load_nodes()} if running else {}
        return record_asked(job_id, [_detail_job(j, threads) for j in found])

    def partitions(self) -> list[Partition]:
        return [_partition(p) for p in _load_partitions()]

    def drain_reasons(self) -> list[DrainReason]:
        """``sinfo -R``: down, drained, draining and failing nodes grouped per reason.

        sinfo groups nodes whose reason, author, time and state agree (partitions
        ignored), keeps them in the order they are met going through the partitions'
        nodes, and sorts the groups by partition order, then by raw state, highest first.
        """
        loaded = _load_nodes("sinfo")
        records = {n.name: _node(n) for n in loaded}
        partitions = _load_partitions("sinfo")
        order: list[tuple[int, str]] = []
        for index, p in enumerate(partitions):
            order.extend((index, name) for name in (_names(p.nodes) if p.nodes else []))
        # dicts as ordered sets: a group's members and the partition it was first met in,
        # linear in the node count (10,000 nodes under one reason)
        groups: dict[tuple[Any, ...], dict[str, None]] = {}
        first_partition: dict[tuple[Any, ...], int] = {}
        for part_index, name in order:
            node = records.get(name)
            if node is None or not node.reason:
                continue
            if not (node.state == "DOWN" or "DRAIN" in node.flags or "FAIL" in node.flags):
                continue
            key = (node.reason, node.reason_user, node.reason_time, _state_value(node))
            groups.setdefault(key, {})[name] = None
            first_partition.setdefault(key, part_index)
        keys = sorted(groups, key=lambda k: (first_partition[k], -k[3]))
        return [
            DrainReason(
                reason=key[0],
                nodelist=_fold(groups[key]),
                user=key[1],
                time=key[2],
                state=state_word(records[next(iter(groups[key]))]),
            )
            for key in keys
        ]

    def job_nodelist(self, jobid: str) -> str:
        return nodelist_of_job(jobid, self.jobs(job_ids=jobid), ["load jobs"])

    def partition_nodelist(self, name: str) -> str:
        return partition_named(name, self.partitions(), ["load partitions"]).nodes


_: QueryBackend = PyslurmBackend()  # mypy: pyslurm implements the protocol
