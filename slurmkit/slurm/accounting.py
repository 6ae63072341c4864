"""What accounting recorded about one job, step by step: the calls ``slurmkit why`` makes.

A fixed number of Slurm calls per question, whatever the steps, tasks or nodes: one
``sacct`` for every step and attempt of the job (or of every task of an array), one
``sstat`` for the steps of a running job, one ``sacctmgr show event`` for the nodes of a
NODE_FAIL. ``sacct`` is given an explicit ``--starttime`` so that a job older than its
default window (midnight today, or the epoch only with ``--jobs`` on some versions) is
still found. Every failure is one :class:`AccountingError`, whose ``unreachable`` says
that slurmdbd did not answer (``why`` then answers from slurmctld alone, with a note).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from slurmkit.errors import ControllerUnreachable, SlurmError
from slurmkit.grammar import idrange
from slurmkit.hostlist import HostSet
from slurmkit.slurm.commands import run_slurm
from slurmkit.slurm.parse_text import (
    DELIMITER,
    SACCT_HEAD_COLUMNS,
    Column,
    field_list,
    parse_exit_code,
    parse_int,
    parse_time,
    parse_user,
    split_records,
    text_or_none,
)

# Older than any job a cluster still has in its database; sacct's own default start is
# midnight today (and the epoch only with --jobs, which 22.05 applies to steps unevenly).
EPOCH = "2000-01-01T00:00:00"

# What a step's tasks used at their peak: sacct records it when a step ends, sstat
# reads it from a running one (why merges the two by these fields).
USAGE_COLUMNS: tuple[Column, ...] = (
    ("max_rss", "MaxRSS"),
    ("max_rss_node", "MaxRSSNode"),
    ("max_rss_task", "MaxRSSTask"),
    ("ave_rss", "AveRSS"),
    ("usage_max", "TRESUsageInMax"),
    ("usage_tot", "TRESUsageInTot"),
)

# Fields present from 22.05 to 26.05 (StdOut/StdErr are 23.02+: read from slurmctld).
WHY_SACCT_COLUMNS: tuple[Column, ...] = (
    *SACCT_HEAD_COLUMNS,
    ("derived_exit_code", "DerivedExitCode"),
    ("partition", "Partition"),
    ("qos", "QOS"),
    ("nodelist", "NodeList"),
    ("num_nodes", "NNodes"),
    ("alloc_cpus", "AllocCPUS"),
    ("ntasks", "NTasks"),
    ("req_mem", "ReqMem"),
    ("req_tres", "ReqTRES"),
    ("alloc_tres", "AllocTRES"),
    ("submit_time", "Submit"),
    ("start_time", "Start"),
    ("end_time", "End"),
    ("elapsed", "ElapsedRaw"),
    ("time_limit", "TimelimitRaw"),
    ("total_cpu", "TotalCPU"),
    *USAGE_COLUMNS,
    ("work_dir", "WorkDir"),
    ("submit_line", "SubmitLine"),
)

# An allocations-only read (``--allocations``) takes what an array's summary and a pending
# job's earlier starts use: 9 columns of 31, a quarter of sacct's text to print and split.
ALLOCATION_COLUMNS: tuple[Column, ...] = (
    *SACCT_HEAD_COLUMNS,
    ("nodelist", "NodeList"),
    ("start_time", "Start"),
)

SSTAT_COLUMNS: tuple[Column, ...] = (
    ("display_id", "JobID"),
    ("nodelist", "Nodelist"),
    ("ntasks", "NTasks"),
    *USAGE_COLUMNS,
)

EVENT_FIELDS = ("NodeName", "TimeStart", "TimeEnd", "State", "User", "Reason")

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)(?:[nc])?$", re.I)
_CANCELLED_BY = re.compile(r"^CANCELLED by (\S+)$")


class AccountingError(SlurmError):
    """Accounting could not answer; ``unreachable``: slurmdbd (or slurmctld) was silent."""

    unreachable: bool = False


@dataclass(frozen=True)
class Step:
    """One line of sacct: the allocation (``step`` None) or one step (``batch``, ``0``...).

    Sizes are bytes, times seconds; ``None`` where accounting recorded nothing.
    """

    job_id: str
    display_id: str
    step: str | None
    name: str = ""
    user: str | None = None
    state: str = "UNKNOWN"
    cancelled_by: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    exit_signal: int | None = None
    partition: str | None = None
    qos: str | None = None
    nodelist: str = ""
    num_nodes: int | None = None
    alloc_cpus: int | None = None
    ntasks: int | None = None
    req_mem: int | None = None
    req_tres_text: str = ""
    alloc_tres_text: str = ""
    submit_text: str = ""
    start_text: str = ""
    end_text: str = ""
    elapsed: int | None = None
    time_limit: int | None = None  # minutes
    total_cpu: float | None = None
    max_rss: int | None = None
    max_rss_node: str | None = None
    max_rss_task: int | None = None
    ave_rss: int | None = None
    usage_max_text: str = ""
    usage_tot_text: str = ""
    work_dir: str | None = None
    submit_line: str | None = None

    # Times and TRES strings are parsed only when read: an array of 10,000 tasks reads few.
    @property
    def submit_time(self) -> datetime | None:
        return parse_time(self.submit_text)

    @property
    def start_time(self) -> datetime | None:
        return parse_time(self.start_text)

    @property
    def end_time(self) -> datetime | None:
        return parse_time(self.end_text)

    @property
    def started(self) -> bool:
        """Whether it ran, read without parsing the time: 10,000 array tasks ask."""
        return self.start_text not in ("", "None", "Unknown")

    @property
    def req_tres(self) -> dict[str, str]:
        return parse_tres(self.req_tres_text)

    @property
    def alloc_tres(self) -> dict[str, str]:
        return parse_tres(self.alloc_tres_text)

    @property
    def usage_max(self) -> dict[str, str]:
        """Each TRES's largest task (``mem``: MaxRSS, ``gres/gpumem``, ``cpu`` time)."""
        return parse_tres(self.usage_max_text)

    @property
    def usage_tot(self) -> dict[str, str]:
        """Each TRES summed over the step's tasks (``mem``: all their peaks)."""
        return parse_tres(self.usage_tot_text)

    @property
    def array_job_id(self) -> str | None:
        return _array_part(self.display_id)[0]

    @property
    def array_task_id(self) -> str | None:
        return _array_part(self.display_id)[1]

    @property
    def task_key(self) -> str:
        """The id the user types for this job or array task: ``7`` or ``4_1``."""
        return self.display_id.split(".", 1)[0]


@dataclass(frozen=True)
class NodeEvent:
    """One ``sacctmgr show event`` record: a node down or drained, when, why, by whom."""

    node: str
    start: datetime | None
    end: datetime | None
    state: str
    user: str | None
    reason: str


# ---------------------------------------------------------------- values


def parse_size(value: str | None) -> int | None:
    """``322068K`` / ``1.5G`` / ``100Mn`` -> bytes; sacct's sizes count in 1024s."""
    text = text_or_none(value)
    if text is None:
        return None
    found = _SIZE.match(text)
    if not found:
        return None
    return int(float(found.group(1)) * _UNITS[found.group(2).upper()])


def parse_cpu_time(value: str | None) -> float | None:
    """sacct's TotalCPU ``[D-][HH:]MM:SS[.mmm]`` -> seconds."""
    text = text_or_none(value)
    if text is None:
        return None
    days, _, rest = text.rpartition("-")
    parts = rest.split(":")
    try:
        seconds = sum(float(p) * 60**i for i, p in enumerate(reversed(parts)))
        return seconds + (int(days) * 86400 if days else 0)
    except ValueError:
        return None


def parse_tres(value: str | None) -> dict[str, str]:
    """``cpu=4,mem=400M,gres/gpu=2`` -> ``{"cpu": "4", ...}``."""
    text = text_or_none(value) or ""
    pairs = (item.partition("=") for item in text.split(",") if "=" in item)
    return {key.strip(): val.strip() for key, _, val in pairs}


def _minutes(value: str | None) -> int | None:
    """TimelimitRaw: minutes, or a word (``UNLIMITED``, ``Partition_Limit``) for none."""
    text = text_or_none(value)
    return int(text) if text is not None and text.isdigit() else None


def _array_part(display_id: str) -> tuple[str | None, str | None]:
    try:
        parsed = idrange.parse_job_id(display_id.split(".", 1)[0])
    except SlurmError:
        return None, None
    return (parsed.job, parsed.tasks) if parsed.tasks is not None else (None, None)


def _state(text: str | None) -> tuple[str, str | None]:
    """``CANCELLED by 1001`` -> (CANCELLED, "1001"); ``COMPLETED`` -> (COMPLETED, None)."""
    text = (text or "UNKNOWN").strip()
    found = _CANCELLED_BY.match(text)
    if found:
        return "CANCELLED", found.group(1)
    return text.split()[0] if text else "UNKNOWN", None


def step_from_row(row: Mapping[str, str]) -> Step:
    display = row.get("display_id", "")
    job_id, _, step = (row.get("job_id") or display).partition(".")
    state, by = _state(row.get("state"))
    code, signal = parse_exit_code(row.get("exit_code"))
    return Step(
        job_id=job_id,
        display_id=display,
        step=step or None,
        name=row.get("name", ""),
        user=parse_user(row.get("user")),
        state=state,
        cancelled_by=by,
        reason=text_or_none(row.get("reason")),
        exit_code=code,
        exit_signal=signal,
        partition=text_or_none(row.get("partition")),
        qos=text_or_none(row.get("qos")),
        nodelist=text_or_none(row.get("nodelist")) or "",
        num_nodes=parse_int(row.get("num_nodes")),
        alloc_cpus=parse_int(row.get("alloc_cpus")),
        ntasks=parse_int(row.get("ntasks")),
        req_mem=parse_size(row.get("req_mem")),
        req_tres_text=row.get("req_tres", ""),
        alloc_tres_text=row.get("alloc_tres", ""),
        submit_text=row.get("submit_time", ""),
        start_text=row.get("start_time", ""),
        end_text=row.get("end_time", ""),
        elapsed=parse_int(row.get("elapsed")),
        time_limit=_minutes(row.get("time_limit")),
        total_cpu=parse_cpu_time(row.get("total_cpu")),
        max_rss=parse_size(row.get("max_rss")),
        max_rss_node=text_or_none(row.get("max_rss_node")),
        max_rss_task=parse_int(row.get("max_rss_task")),
        ave_rss=parse_size(row.get("ave_rss")),
        usage_max_text=row.get("usage_max", ""),
        usage_tot_text=row.get("usage_tot", ""),
        work_dir=text_or_none(row.get("work_dir")),
        submit_line=text_or_none(row.get("submit_line")),
    )


# ---------------------------------------------------------------- sacct


def sacct_argv(job: str, since: str = EPOCH, *, allocations: bool = False) -> list[str]:
    """Every step and every attempt (``--duplicates``: requeues) of ``job`` or its tasks.

    ``allocations``: the jobs' own lines only (``--allocations``, :data:`ALLOCATION_COLUMNS`).
    slurmdbd reads a job's steps with one database query per job
    (as_mysql_jobacct_process.c), so the steps of an array of 10,000 tasks cost Slurm
    10,000 queries (2.6-3.1 s on the 2-core sandbox), its allocations one (0.3-0.4 s).
    """
    only = ["--allocations"] if allocations else []
    columns = ALLOCATION_COLUMNS if allocations else WHY_SACCT_COLUMNS
    return [
        "sacct",
        "--parsable2",
        "--noheader",
        f"--delimiter={DELIMITER}",
        "--duplicates",
        "--allusers",
        *only,
        f"--starttime={since}",
        f"--format={field_list(columns)}",
        f"--jobs={job}",
    ]


def parse_steps(
    text: str, delimiter: str = DELIMITER, columns: tuple[Column, ...] = WHY_SACCT_COLUMNS
) -> list[Step]:
    rows = split_records(text, columns, delimiter, what="sacct")
    return [step_from_row(row) for row in rows]


def job_steps(job: str, since: str = EPOCH, *, allocations: bool = False) -> list[Step]:
    """What accounting holds about ``job`` (``7``, ``4_1``, a whole array ``4``, or a comma
    list of them): one sacct; ``allocations``: without the steps (see :func:`sacct_argv`)."""
    columns = ALLOCATION_COLUMNS if allocations else WHY_SACCT_COLUMNS
    return parse_steps(_run(sacct_argv(job, since, allocations=allocations)), columns=columns)


# ---------------------------------------------------------------- sstat


def sstat_argv(job: str) -> list[str]:
    return [
        "sstat",
        "--allsteps",
        "--parsable2",
        "--noheader",
        f"--format={field_list(SSTAT_COLUMNS)}",
        f"--jobs={job}",
    ]


def parse_sstat(text: str) -> list[Step]:
    """sstat's figures as :class:`Step` lines (numbers only: ``|`` is a safe separator)."""
    rows = split_records(text, SSTAT_COLUMNS, "|", what="sstat")
    return [step_from_row({**row, "state": "RUNNING"}) for row in rows]


def running_usage(job: str) -> list[Step]:
    """What the running steps of ``job`` use now (one sstat); no running step: []."""
    try:
        return parse_sstat(_run(sstat_argv(job)))
    except AccountingError as exc:
        if "no steps running" in str(exc).lower() or "no steps running" in exc.stderr.lower():
            return []
        raise


# ---------------------------------------------------------------- sacctmgr events


def events_argv(nodes: HostSet, start: datetime | None, end: datetime | None) -> list[str]:
    argv = ["sacctmgr", "--parsable2", "--noheader", "show", "event", f"nodes={nodes}"]
    argv += [f"start={_when(start)}"] if start else []
    argv += [f"end={_when(end)}"] if end else []
    return [*argv, f"format={','.join(EVENT_FIELDS)}"]


def parse_events(text: str) -> list[NodeEvent]:
    """``sacctmgr -P`` lines; the reason is last, so a ``|`` inside it stays in it."""
    events = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", len(EVENT_FIELDS) - 1)
        if len(parts) != len(EVENT_FIELDS):
            continue
        node, start, end, state, user, reason = parts
        events.append(
            NodeEvent(
                node=node.strip(),
                start=_event_time(start),
                end=_event_time(end),
                state=state.strip(),
                user=parse_user(user),
                reason=reason.strip(),
            )
        )
    return events


def node_events(nodes: HostSet, start: datetime | None, end: datetime | None) -> list[NodeEvent]:
    """Down and drain events of ``nodes`` that overlap [start, end]: one sacctmgr."""
    return parse_events(_run(events_argv(nodes, start, end)))


def _event_time(text: str) -> datetime | None:
    value = text_or_none(text)
    if value is None or value.lower() == "unknown":
        return None
    try:
        return parse_time(value)
    except SlurmError:
        return None


def _when(moment: datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone().replace(tzinfo=None)
    return moment.isoformat(timespec="seconds")


# ---------------------------------------------------------------- the one error


def _run(argv: Sequence[str]) -> str:
    try:
        return run_slurm(argv).stdout
    except SlurmError as exc:
        error = AccountingError(str(exc), exc.argv, exc.returncode, exc.stderr)
        error.unreachable = isinstance(exc, ControllerUnreachable)
        raise error from exc
