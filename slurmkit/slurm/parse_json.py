"""Parsers for the ``--json`` output of sinfo, squeue, scontrol and sacct.

The JSON changed shape across releases, and every parser here accepts all of
them (checked against recorded 22.05 and 24.11 output; 26.05 by synthetic
documents using the 24.11 shapes):

* numbers: plain ints in 22.05 (``0`` = unset, ``null`` = NO_VAL), objects
  ``{"set", "infinite", "number"}`` from 23.02 on; raw NO_VAL/INFINITE
  (``4294967294``/``4294967295``) still leak into some 24.11 sacct times;
* states: ``"mixed"`` plus a ``state_flags`` list (22.05 nodes), ``"RUNNING"``
  (22.05 jobs), lists such as ``["MIXED", "DRAIN"]`` later;
* exit codes: a raw wait status in 22.05 squeue (``768`` = exit 3), objects
  with ``return_code``/``signal`` later;
* wrappers: ``meta.Slurm`` (22.05) vs ``meta.slurm``; ``sinfo --json`` lists
  ``nodes`` in 22.05 but groups of nodes under ``sinfo`` from 23.02 on.

Known Slurm defects the caller should know about (why :mod:`.query` prefers
text for these): 22.05 ``squeue --json`` ignores every filter, and 22.05
``sacct --json`` reports exit code 0 for a job that exited 3.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from slurmkit.errors import SlurmError, SlurmParseError
from slurmkit.slurm.parse_text import text_or_none
from slurmkit.slurm.records import (
    HELD_REASONS,
    GresAlloc,
    Job,
    Node,
    SlurmVersion,
    job_state,
    node_state,
    normalize_gres,
    plausible_end,
)

# NO_VAL / INFINITE of Slurm's 32- and 64-bit fields: "no value", never data.
_SENTINELS = frozenset({0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF})
# Entries of "errors" that only mean "empty result" (sacct on 22.05).
_BENIGN_ERRORS = frozenset({9003})
_BENIGN_TEXT = ("Nothing found",)

JsonDict = Mapping[str, Any]

# ---------------------------------------------------------------- values


def number(value: Any) -> int | float | None:
    """Unwrap a Slurm number in any version's shape; None when unset or infinite."""
    if isinstance(value, Mapping):
        if not value.get("set", False) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value) if "." in value else int(value)
        except ValueError as exc:
            raise SlurmParseError(f"JSON number expected, got {value!r}") from exc
    if not isinstance(value, (int, float)):
        raise SlurmParseError(f"JSON number expected, got {value!r}")
    return None if value in _SENTINELS else value


def _int(value: Any) -> int | None:
    found = number(value)
    return None if found is None else int(found)


def _epoch(value: Any) -> datetime | None:
    """A Unix time, with Slurm's ``0`` for "not yet" turned into None."""
    seconds = number(value)
    if not seconds:
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc).astimezone()


def _minutes(value: Any) -> int | None:
    """Slurm's time limits are minutes; records hold seconds (None = unlimited)."""
    minutes = number(value)
    return None if minutes is None else int(minutes * 60)


def _states(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value]


def _words(value: Any) -> tuple[str, ...]:
    """Features: a comma string in 22.05, a list later."""
    items = value.split(",") if isinstance(value, str) else (value or [])
    return tuple(str(item).strip() for item in items if str(item).strip())


def _text(value: Any) -> str | None:
    return text_or_none(value) if isinstance(value, str) else None


def exit_status(value: Any) -> tuple[int | None, int | None]:
    """(exit code, signal) from a raw wait status (22.05 squeue) or a status object."""
    if value is None:
        return None, None
    if isinstance(value, Mapping):
        signal = value.get("signal")
        signal_id = (
            signal.get("id", signal.get("signal_id")) if isinstance(signal, Mapping) else None
        )
        code = _int(value.get("return_code"))
        return code, _int(signal_id) or (0 if code is not None else None)
    status = _int(value)
    if status is None:
        return None, None
    return (status >> 8) & 0xFF, status & 0x7F


# ---------------------------------------------------------------- documents


def load(text: str, what: str) -> JsonDict:
    """Decode a Slurm JSON document and raise the errors Slurm put inside it."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        start = text.strip()[:60]
        raise SlurmParseError(
            f"{what}: output is not JSON ({exc.msg}); it starts {start!r}"
        ) from exc
    if not isinstance(doc, dict):
        raise SlurmParseError(f"{what}: expected a JSON object, got {type(doc).__name__}")
    errors = [e for e in doc.get("errors") or [] if not _benign(e)]
    if errors:
        first = errors[0]
        detail = (
            first.get("description") or first.get("error") if isinstance(first, dict) else first
        )
        raise SlurmError(f"{what}: Slurm reported an error: {detail}")
    return doc


def _benign(error: Any) -> bool:
    if not isinstance(error, Mapping):
        return False
    return error.get("error_number") in _BENIGN_ERRORS or any(
        text in str(error.get("description", "")) for text in _BENIGN_TEXT
    )


def _items(doc: JsonDict, key: str, what: str) -> list[JsonDict]:
    items = doc.get(key)
    if not isinstance(items, list):
        raise SlurmParseError(f"{what}: JSON has no {key!r} list (keys: {sorted(doc)})")
    return items


def _field(item: JsonDict, key: str, what: str) -> Any:
    try:
        return item[key]
    except (KeyError, TypeError) as exc:
        raise SlurmParseError(f"{what}: record without {key!r}") from exc


def json_version(text: str) -> SlurmVersion | None:
    """The Slurm version a JSON document says produced it (``meta.Slurm``/``meta.slurm``)."""
    meta = load(text, "Slurm JSON").get("meta") or {}
    slurm = meta.get("slurm") or meta.get("Slurm") or {}
    version = slurm.get("version") or {}
    try:
        return SlurmVersion(int(version["major"]), int(version["minor"]), int(version["micro"]))
    except (KeyError, TypeError, ValueError):
        release = slurm.get("release")
        return SlurmVersion.parse(release) if isinstance(release, str) else None


# ---------------------------------------------------------------- nodes


def parse_nodes_json(text: str, what: str = "sinfo --json") -> list[Node]:
    """Nodes from ``sinfo --json`` (any version) or ``scontrol show node --json`` (23.02+)."""
    doc = load(text, what)
    if isinstance(doc.get("sinfo"), list):
        return _nodes_from_groups(doc["sinfo"], what)
    return [_node(item, what) for item in _items(doc, "nodes", what)]


def parse_sinfo_json(text: str) -> list[Node]:
    return parse_nodes_json(text, "sinfo --json")


def parse_scontrol_nodes_json(text: str) -> list[Node]:
    return parse_nodes_json(text, "scontrol show node --json")


def _node(item: JsonDict, what: str) -> Node:
    base, flags = node_state([*_states(item.get("state")), *_states(item.get("state_flags"))])
    reason = _text(item.get("reason"))
    load_avg = number(item.get("cpu_load"))
    return Node(
        name=_field(item, "name", what),
        state=base,
        flags=flags,
        cpus=_int(item.get("cpus")),
        cpus_alloc=_int(item.get("alloc_cpus")),
        cpu_load=None if load_avg is None else load_avg / 100,
        real_memory=_int(item.get("real_memory")),
        alloc_memory=_int(item.get("alloc_memory")),
        free_memory=_int(item.get("free_mem", item.get("free_memory"))),
        gres=_text(item.get("gres")) or "",
        gres_used=_text(item.get("gres_used")) or "",
        partitions=_words(item.get("partitions")),
        features=_words(item.get("features")),
        active_features=_words(item.get("active_features")),
        reason=reason,
        reason_user=_text(item.get("reason_set_by_user")) if reason else None,
        reason_time=_epoch(item.get("reason_changed_at")) if reason else None,
        address=_text(item.get("address")),
        hostname=_text(item.get("hostname")),
        version=_text(item.get("version", item.get("slurmd_version"))),
        boot_time=_epoch(item.get("boot_time")),
        slurmd_start_time=_epoch(item.get("slurmd_start_time")),
        tres=_text(item.get("tres")) or "",
        alloc_tres=_text(item.get("tres_used")) or "",
    )


def _nodes_from_groups(groups: Iterable[JsonDict], what: str) -> list[Node]:
    """23.02+ ``sinfo --json`` groups nodes by state and partition; split them again.

    Counters of a group are sums, so per-node usage (allocated CPUs, free
    memory, GRES used) is only known for single-node groups and is None
    otherwise: use :func:`parse_scontrol_nodes_json` or text for those.
    """
    merged: dict[str, Node] = {}
    for group in groups:
        names = _field(_field(group, "nodes", what), "nodes", what)
        for name in names:
            node = _node_from_group(group, name, single=len(names) == 1)
            known = merged.get(name)
            merged[name] = (
                replace(known, partitions=known.partitions + node.partitions) if known else node
            )
    return list(merged.values())


def _node_from_group(group: JsonDict, name: str, single: bool) -> Node:
    base, flags = node_state(_states((group.get("node") or {}).get("state")))
    cpus, memory = group.get("cpus") or {}, group.get("memory") or {}
    reason_info, gres = group.get("reason") or {}, group.get("gres") or {}
    features = group.get("features") or {}
    reason = _text(reason_info.get("description"))
    partition = _text((group.get("partition") or {}).get("name"))
    load_avg = number((cpus.get("load") or {}).get("maximum")) if single else None
    return Node(
        name=name,
        state=base,
        flags=flags,
        cpus=_same(cpus),
        cpus_alloc=_int(cpus.get("allocated")) if single else None,
        cpu_load=None if load_avg is None else load_avg / 100,
        real_memory=_same(memory),
        alloc_memory=_int(memory.get("allocated")) if single else None,
        free_memory=_int((memory.get("free") or {}).get("maximum")) if single else None,
        gres=_text(gres.get("total")) or "",
        gres_used=(_text(gres.get("used")) or "") if single else "",
        partitions=(partition,) if partition else (),
        features=_words(features.get("total")),
        active_features=_words(features.get("active")),
        reason=reason,
        reason_user=_text(reason_info.get("user")) if reason else None,
        reason_time=_epoch(reason_info.get("time")) if reason else None,
    )


def _same(span: JsonDict) -> int | None:
    """A group's per-node value when all its nodes agree (minimum == maximum)."""
    low, high = _int(span.get("minimum")), _int(span.get("maximum"))
    return low if low == high else None


# ---------------------------------------------------------------- jobs


def parse_jobs_json(text: str, what: str = "squeue --json") -> list[Job]:
    """Jobs from ``squeue --json`` or ``scontrol show job --json`` (23.02+)."""
    return [_job(item, what) for item in _items(load(text, what), "jobs", what)]


def parse_squeue_json(text: str) -> list[Job]:
    return parse_jobs_json(text, "squeue --json")


def parse_scontrol_jobs_json(text: str) -> list[Job]:
    return parse_jobs_json(text, "scontrol show job --json")


def _job(item: JsonDict, what: str) -> Job:
    state, flags = job_state(_states(item.get("job_state")))
    limit = _minutes(item.get("time_limit"))
    # The free-text description ("Nodes required for job are DOWN, ...") when
    # Slurm set one, as squeue and scontrol print it; the reason code otherwise.
    reason = _text(item.get("state_description")) or _text(item.get("state_reason"))
    array_job_id, array_task_id = _queue_array_ids(item)
    code, signal = exit_status(item.get("exit_code"))
    start, end = _epoch(item.get("start_time")), _epoch(item.get("end_time"))
    return Job(
        job_id=str(_field(item, "job_id", what)),
        name=item.get("name") or "",
        user=_text(item.get("user_name")),
        state=state,
        state_flags=flags,
        reason=reason,
        array_job_id=array_job_id,
        array_task_id=array_task_id,
        partition=_text(item.get("partition")),
        account=_text(item.get("account")),
        qos=_text(item.get("qos")),
        nodelist=_text(item.get("nodes")) or "",
        batch_host=_text(item.get("batch_host")),
        num_nodes=_int(item.get("node_count")),
        num_cpus=_int(item.get("cpus")),
        cpus_per_task=_int(item.get("cpus_per_task")),
        gres_per_node=normalize_gres(item.get("tres_per_node")),
        gres_detail=_gres_detail(item),
        alloc_tres=_text(item.get("tres_alloc_str")) or "",
        submit_time=_epoch(item.get("submit_time")),
        accrue_time=_epoch(item.get("accrue_time")),
        start_time=start,
        end_time=plausible_end(end, state, limit),
        time_limit=limit,
        time_used=_elapsed(start, end, state),
        priority=_int(item.get("priority")),
        held=bool(item.get("hold")) or reason in HELD_REASONS,
        dependency=_text(item.get("dependency")),
        exit_code=code,
        exit_signal=signal,
        work_dir=_text(item.get("current_working_directory")),
        std_out=_text(item.get("standard_output")),
        std_err=_text(item.get("standard_error")),
    )


def _queue_array_ids(item: JsonDict) -> tuple[str | None, str | None]:
    """Array ids; 22.05 has ``array_task_id: null`` plus ``array_task_string`` for pending tasks."""
    array_job = _int(item.get("array_job_id"))
    if not array_job:
        return None, None
    task = _int(item.get("array_task_id"))
    return str(array_job), str(task) if task is not None else _text(item.get("array_task_string"))


def _elapsed(start: datetime | None, end: datetime | None, state: str) -> int | None:
    """Run time is only fixed (and so derivable without a clock) once a job ended."""
    if start is None or end is None or state in ("PENDING", "RUNNING", "SUSPENDED"):
        return None
    return int((end - start).total_seconds())


def _gres_detail(item: JsonDict) -> tuple[GresAlloc, ...]:
    details = [str(d) for d in item.get("gres_detail") or []]
    names = _allocated_names(item.get("job_resources") or {})
    if len(names) != len(details):
        names = [""] * len(details)
    return tuple(
        GresAlloc(nodes=name, gres=gres) for name, gres in zip(names, details, strict=True)
    )


def _allocated_names(resources: JsonDict) -> list[str]:
    nodes = resources.get("nodes")
    if isinstance(nodes, Mapping):  # 23.02+
        return [str(a.get("name", "")) for a in nodes.get("allocation") or []]
    return [str(a.get("nodename", "")) for a in resources.get("allocated_nodes") or []]


# ---------------------------------------------------------------- sacct


def parse_sacct_json(text: str) -> list[Job]:
    """Jobs (allocations; steps ignored) from ``sacct --json``."""
    what = "sacct --json"
    return [_acct_job(item, what) for item in _items(load(text, what), "jobs", what)]


def _acct_job(item: JsonDict, what: str) -> Job:
    status = item.get("state") or {}
    times = item.get("time") or {}
    state, flags = job_state(_states(status.get("current")))
    limit = _minutes(times.get("limit"))
    array_job_id, array_task_id = _acct_array_ids(item.get("array") or {})
    code, signal = exit_status(item.get("exit_code"))
    reason = _text(status.get("reason"))
    return Job(
        job_id=str(_field(item, "job_id", what)),
        name=item.get("name") or "",
        user=_text(item.get("user")),
        state=state,
        state_flags=flags,
        reason=reason,
        array_job_id=array_job_id,
        array_task_id=array_task_id,
        partition=_text(item.get("partition")),
        account=_text(item.get("account")),
        qos=_text(item.get("qos")),
        nodelist=_text(item.get("nodes")) or "",
        num_nodes=_int(item.get("allocation_nodes")),
        num_cpus=_tres_count(item, "cpu"),
        submit_time=_epoch(times.get("submission")),
        start_time=_epoch(times.get("start")),
        end_time=plausible_end(_epoch(times.get("end")), state, limit),
        time_limit=limit,
        time_used=_int(times.get("elapsed")),
        priority=_int(item.get("priority")),
        held=bool(item.get("hold")),
        exit_code=code,
        exit_signal=signal,
        work_dir=_text(item.get("working_directory")),
        std_out=_text(item.get("stdout_expanded")) or _text(item.get("stdout")),
        std_err=_text(item.get("stderr_expanded")) or _text(item.get("stderr")),
    )


def _acct_array_ids(array: JsonDict) -> tuple[str | None, str | None]:
    """Task id, or for the pending remainder the ``task`` bitmap (``0x7C`` = 2-6)."""
    array_job = _int(array.get("job_id"))
    if not array_job:
        return None, None
    task = _int(array.get("task_id"))
    if task is not None:
        return str(array_job), str(task)
    ranges = _bitmap_ranges(_text(array.get("task")))
    limit = _int(((array.get("limits") or {}).get("max") or {}).get("running", {}).get("tasks"))
    return str(array_job), (f"{ranges}%{limit}" if ranges and limit else ranges)


def _bitmap_ranges(bitmap: str | None) -> str | None:
    if not bitmap:
        return None
    try:
        bits = int(bitmap, 16)
    except ValueError:
        return bitmap
    indices = [i for i in range(bits.bit_length()) if bits >> i & 1]
    spans: list[list[int]] = []
    for index in indices:
        if spans and spans[-1][1] == index - 1:
            spans[-1][1] = index
        else:
            spans.append([index, index])
    return ",".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans) or None


def _tres_count(item: JsonDict, kind: str) -> int | None:
    for tres in (item.get("tres") or {}).get("allocated") or []:
        if isinstance(tres, Mapping) and tres.get("type") == kind:
            return _int(tres.get("count"))
    return None
