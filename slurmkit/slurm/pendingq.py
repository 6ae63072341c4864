"""The queries ``why`` asks about a pending job: one Slurm call each, whatever the queue holds.

A pending job's reason is explained from the whole of its partition's queue (one
``squeue``), the priority factors of every job there (one ``sprio``), the limits of
its QOS or association (one ``sacctmgr``) and the jobs those limits count (one
``squeue``), and what ``sbatch --test-only`` says a changed request would do. None
of them loops over jobs or nodes.

``sbatch --test-only`` submits nothing: slurmctld runs its will-run test and sbatch
prints ``sbatch: Job N to start at T using C processors on nodes L in partition P``
on stderr (22.05, 24.11 and 26.05 alike but for a stray word after the time on 26.05,
recorded in tests/fixtures/why/pending/);
a request that can never run prints an ``allocation failure:`` line and exits 1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from slurmkit.errors import ControllerUnreachable, SlurmError
from slurmkit.slurm import commands
from slurmkit.slurm.parse_text import (
    DELIMITER,
    SQUEUE_COLUMNS,
    Column,
    format_string,
    parse_int,
    parse_squeue,
    parse_time,
    split_records,
)
from slurmkit.slurm.records import Job

Names = str | Sequence[str]

# Print array task expressions in full (as query.py does for its squeue calls).
_SQUEUE_ENV = {"SLURM_BITSTR_LEN": "0"}

# sprio's weighted factors: what each adds to the job's priority.
SPRIO_COLUMNS: tuple[Column, ...] = (
    ("job_id", "%i"),
    ("partition", "%r"),
    ("user", "%u"),
    ("priority", "%Y"),
    ("site", "%S"),
    ("age", "%A"),
    ("assoc", "%B"),
    ("fairshare", "%F"),
    ("jobsize", "%J"),
    ("partition_factor", "%P"),
    ("qos", "%Q"),
    ("nice", "%N"),
    ("tres", "%T"),
)
FACTOR_NAMES = ("site", "age", "assoc", "fairshare", "jobsize", "partition_factor", "qos", "nice")

# What ``sacctmgr show qos|assoc`` is asked for: every per-user, per-account, per-job
# and group limit a pending reason can name.
QOS_FIELDS = (
    "Name", "MaxJobsPU", "MaxSubmitPU", "MaxTRESPU", "MaxJobsPA", "MaxSubmitPA",
    "MaxTRESPA", "MaxTRES", "MaxTRESPerNode", "MaxWall", "GrpJobs", "GrpSubmit", "GrpTRES",
)  # fmt: skip
ASSOC_FIELDS = (
    "Account", "User", "Partition", "MaxJobs", "MaxSubmit", "MaxTRES", "MaxTRESPerNode",
    "MaxWall", "GrpJobs", "GrpSubmit", "GrpTRES",
)  # fmt: skip


def _joined(values: Names) -> str:
    return values if isinstance(values, str) else ",".join(values)


# ---------------------------------------------------------------- the partition's queue


def partition_queue_argv(partitions: Names) -> list[str]:
    """Every pending job of the partitions, with priority, reason and expected start.

    ``%S`` of a pending job is the scheduler's expected start, the same value
    ``squeue --start`` prints, so this one call is both the rank and the estimate.
    """
    return [
        "squeue", "--all", "--noheader", f"--format={format_string(SQUEUE_COLUMNS)}",
        f"--partition={_joined(partitions)}", "--states=PENDING",
    ]  # fmt: skip


def partition_queue(partitions: Names) -> list[Job]:
    argv = partition_queue_argv(partitions)
    return parse_squeue(commands.run_slurm(argv, env=_SQUEUE_ENV).stdout)


def user_jobs_argv(
    *, user: str | None = None, qos: str | None = None, account: str | None = None
) -> list[str]:
    """The pending and running jobs a limit counts (of a user, a QOS, an account)."""
    argv = ["squeue", "--all", "--noheader", f"--format={format_string(SQUEUE_COLUMNS)}"]
    argv += [f"--user={user}"] if user else []
    argv += [f"--qos={qos}"] if qos else []
    argv += [f"--account={account}"] if account else []
    return [*argv, "--states=PENDING,RUNNING,SUSPENDED"]


def user_jobs(
    *, user: str | None = None, qos: str | None = None, account: str | None = None
) -> list[Job]:
    argv = user_jobs_argv(user=user, qos=qos, account=account)
    return parse_squeue(commands.run_slurm(argv, env=_SQUEUE_ENV).stdout)


# ---------------------------------------------------------------- priority factors


@dataclass(frozen=True)
class PriorityFactors:
    """One job's row of ``sprio``: its priority and what each factor adds to it."""

    job_id: str
    partition: str
    user: str
    priority: int | None
    factors: tuple[tuple[str, float], ...]
    tres: str = ""

    def nonzero(self) -> list[tuple[str, float]]:
        return [(name, value) for name, value in self.factors if value]


def sprio_argv(partitions: Names) -> list[str]:
    return [
        "sprio", "--noheader", f"--partition={_joined(partitions)}",
        f"--format={format_string(SPRIO_COLUMNS)}",
    ]  # fmt: skip


def parse_sprio(text: str, delimiter: str = DELIMITER) -> list[PriorityFactors]:
    rows = split_records(text, SPRIO_COLUMNS, delimiter, what="sprio")
    return [
        PriorityFactors(
            job_id=row["job_id"],
            partition=row["partition"],
            user=row["user"],
            priority=parse_int(row["priority"]),
            factors=tuple((name, _number(row[name])) for name in FACTOR_NAMES),
            tres=row["tres"],
        )
        for row in rows
    ]


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return 0.0
    return value if abs(value) < 1e18 else 0.0


def priority_factors(partitions: Names) -> list[PriorityFactors]:
    """sprio's rows for the partitions' pending jobs (held jobs have none).

    Raises SlurmError when sprio cannot answer (``priority/basic`` has no factors).
    """
    return parse_sprio(commands.run_slurm(sprio_argv(partitions)).stdout)


# ---------------------------------------------------------------- QOS and association limits


def qos_limits_argv(name: str) -> list[str]:
    return [
        "sacctmgr", "--noheader", "--parsable2", "show", "qos", name,
        f"format={','.join(QOS_FIELDS)}",
    ]  # fmt: skip


def assoc_limits_argv(user: str, account: str | None) -> list[str]:
    where = [f"users={user}", *([f"accounts={account}"] if account else [])]
    return [
        "sacctmgr", "--noheader", "--parsable2", "show", "assoc", "where", *where,
        f"format={','.join(ASSOC_FIELDS)}",
    ]  # fmt: skip


def parse_limits(text: str, fields: Sequence[str]) -> list[dict[str, str]]:
    """``sacctmgr --parsable2`` rows as ``{field: value}`` (names hold no ``|``)."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = line.split("|")
        rows.append(dict(zip(fields, (v.strip() for v in values), strict=False)))
    return rows


def qos_limits(name: str) -> dict[str, str] | None:
    """The QOS's limits, or None when accounting does not know it."""
    rows = parse_limits(commands.run_slurm(qos_limits_argv(name)).stdout, QOS_FIELDS)
    return next((r for r in rows if r.get("Name") == name), None)


def assoc_limits(user: str, account: str | None) -> list[dict[str, str]]:
    """The user's associations (one per account and partition) with their limits."""
    argv = assoc_limits_argv(user, account)
    return parse_limits(commands.run_slurm(argv).stdout, ASSOC_FIELDS)


# ---------------------------------------------------------------- sbatch --test-only

# 26.05.5 prints a stray word after the time ("... to start at 2026-11-29T01:54:14 a using
# 16 processors ..."), recorded; the time is the first word either way.
_WILL_START = re.compile(
    r"Job (?P<job>\d+) to start at (?P<start>\S+)(?: \S+)*? using (?P<cpus>\d+) processors?"
    r"(?: on nodes (?P<nodes>\S+))?(?: in partition (?P<partition>\S+))?"
)

_UNREACHABLE = re.compile(
    r"unable to contact slurm controller|connection refused|socket timed out"
    r"|zero bytes were transmitted|communication connection failure",
    re.I,
)


@dataclass(frozen=True)
class TestOnly:
    """What ``sbatch --test-only`` answered: a start estimate, or why it cannot run."""

    argv: tuple[str, ...]
    start: datetime | None = None
    cpus: int | None = None
    nodes: str = ""
    partition: str = ""
    refusal: str = ""

    __test__ = False  # not a pytest class, despite its name


def parse_test_only(argv: Sequence[str], returncode: int | None, stderr: str) -> TestOnly:
    match = _WILL_START.search(stderr)
    if match and not returncode:
        return TestOnly(
            tuple(argv),
            start=parse_time(match["start"]),
            cpus=parse_int(match["cpus"]),
            nodes=match["nodes"] or "",
            partition=match["partition"] or "",
        )
    return TestOnly(tuple(argv), refusal=commands.first_message(stderr))


def test_only_argv(request: Sequence[str]) -> list[str]:
    """``sbatch --test-only`` of a request (sbatch's options); the script is ``true``."""
    return ["sbatch", "--test-only", *request, "--wrap", "true"]


def test_only(request: Sequence[str]) -> TestOnly:
    """Ask slurmctld when ``request`` would start; nothing is submitted.

    A refusal (the request can never run, a limit) is an answer, not an error;
    a controller that cannot be reached raises as any other call does.
    """
    argv = test_only_argv(request)
    result = commands.run_slurm(argv, check=False)
    if _UNREACHABLE.search(result.stderr):
        message = commands.first_message(result.stderr)
        raise ControllerUnreachable(f"sbatch: cannot reach slurmctld: {message}", argv)
    if result.returncode and not result.stderr.strip():
        raise SlurmError(f"sbatch --test-only failed (exit {result.returncode})", argv)
    return parse_test_only(argv, result.returncode, result.stderr)
