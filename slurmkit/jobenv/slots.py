"""How many processes (slots) each node of an allocation gets, and which source said so.

``auto`` tries, in this order, and uses the first source that answers:

1. ``--slots N`` (the caller's number wins).
2. GPUs per node, from the job environment (inside the job only):
   ``SLURM_GPUS_ON_NODE``; else the count of ids in ``SLURM_STEP_GPUS`` /
   ``SLURM_JOB_GPUS`` (global ids: ``2,3`` is two GPUs); else
   ``SLURM_GPUS_PER_NODE`` (``4`` or ``a100:4``). The first two count *this*
   node's GPUs only, so for a multi-node job they are used for every node
   only when the request was per node: when the job asked GPUs per job or per
   task (``SLURM_GPUS``, ``SLURM_GPUS_PER_TASK``, ``SLURM_GPUS_PER_SOCKET``)
   the counts can differ per node (``--gpus=5`` on two nodes gives 4 + 1) and
   they are skipped.
3. GPUs per node from the job's GRES (one ``scontrol show job -d``): the
   per-node allocation lines (``gpu:h100:4(IDX:0-3)``), else ``TresPerNode``.
   Inside a job without any GPU variable this RPC is not made: the job has
   no GPUs.
4. Tasks per node: ``SLURM_NTASKS_PER_NODE``, then ``SLURM_TASKS_PER_NODE``
   (``2(x3),1``, per node); from outside the job, ``--ntasks-per-node`` from
   the record, or one per node when the job has as many tasks as nodes.
5. 1.

``gpus``, ``tasks`` and ``cpus`` restrict the search to one kind and fail if
it has no answer; ``cpus`` reads ``SLURM_JOB_CPUS_PER_NODE`` (``72(x2),36``),
known only inside the job. The environment describes the job in the batch
script and the step inside ``srun``; a per-node list that does not match the
node count (a step on fewer nodes) is an error, never stretched nor replaced by
one slot per node: give ``--slots N`` there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from slurmkit import hostlist
from slurmkit.errors import SlurmkitError, SlurmParseError, UsageError
from slurmkit.grammar import gres, idrange
from slurmkit.jobenv import slurmvars
from slurmkit.jobenv.allocation import Allocation
from slurmkit.slurm.records import Job

AUTO = "auto"
KINDS = ("gpus", "tasks", "cpus")
# More processes than any node runs (Slurm caps tasks per node far lower): a larger
# count in the environment is a broken variable, not a hostfile to write.
MAX_PER_NODE = 65_536

# Variables that exist only when the job (or step) has GPUs.
_GPU_HINTS = (
    "SLURM_GPUS_ON_NODE",
    "SLURM_GPUS",
    "SLURM_GPUS_PER_NODE",
    "SLURM_GPUS_PER_TASK",
    "SLURM_GPUS_PER_SOCKET",
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
)
# Requests that do not fix the GPU count per node.
_NOT_PER_NODE = ("SLURM_GPUS", "SLURM_GPUS_PER_TASK", "SLURM_GPUS_PER_SOCKET")


@dataclass(frozen=True)
class Slots:
    """Slots per host (in the allocation's order), the source used and the sources skipped."""

    per_host: tuple[int, ...]
    source: str
    kind: str
    skipped: tuple[str, ...] = ()

    @property
    def uniform(self) -> int | None:
        """The common count, or None when nodes differ."""
        return self.per_host[0] if len(set(self.per_host)) == 1 else None

    @property
    def total(self) -> int:
        return sum(self.per_host)

    def describe(self) -> str:
        """What ``-v`` prints: the source, then each source skipped and why."""
        lines = [f"slots from {self.source}"]
        lines += [f"  skipped: {note}" for note in self.skipped]
        return "\n".join(lines)


class _Skip(Exception):
    """A source that exists but cannot be used here; the message goes to ``-v``."""


JobLoader = Callable[[str], Job]


@dataclass
class _Context:
    alloc: Allocation
    load_job: JobLoader
    skipped: list[str] = field(default_factory=list)
    _job: Job | None = None

    @property
    def env(self) -> Mapping[str, str]:
        return self.alloc.env or {}

    @property
    def nodes(self) -> int:
        return len(self.alloc.hosts)

    def job(self) -> Job | None:
        """The ``scontrol show job -d`` record, fetched at most once."""
        if self.alloc.job is not None:
            return self.alloc.job
        if self._job is None and self.alloc.job_id:
            self._job = self.load_job(self.alloc.job_id)
        return self._job


Found = tuple[list[int], str]
Source = Callable[[_Context], "Found | None"]


def parse_wanted(text: str) -> int | str:
    """``--slots`` value: a positive integer, ``auto``, ``gpus``, ``tasks`` or ``cpus``."""
    word = text.strip().lower()
    if word == AUTO or word in KINDS:
        return word
    try:
        number = int(word)
    except ValueError:
        raise UsageError(
            f"--slots must be a positive integer, auto, gpus, tasks or cpus, not {text!r}"
        ) from None
    if number < 1:
        raise UsageError(f"--slots must be at least 1, not {number}")
    return number


def resolve_slots(
    alloc: Allocation, wanted: int | str = AUTO, load_job: JobLoader | None = None
) -> Slots:
    """Slots for every host of ``alloc``; see the module docstring for the order."""
    if isinstance(wanted, int):
        if wanted < 1:
            raise UsageError(f"--slots must be at least 1, not {wanted}")
        return Slots((wanted,) * len(alloc.hosts), f"--slots {wanted}", "option")
    if wanted != AUTO and wanted not in KINDS:
        raise UsageError(f"unknown slot kind {wanted!r}")
    ctx = _Context(alloc, load_job or _query_job)
    kinds = KINDS[:2] if wanted == AUTO else (wanted,)
    for kind in kinds:
        for source in _SOURCES[kind]:
            found = _try(source, ctx)
            if found is not None:
                counts, label = found
                return Slots(tuple(counts), label, kind, tuple(ctx.skipped))
    if wanted != AUTO:
        where = "" if alloc.env else " (outside the job only GPUs and tasks are known)"
        raise SlurmkitError(
            f"no {wanted} count per node is known for {_what(alloc)}{where}: give --slots N"
        )
    return Slots((1,) * len(alloc.hosts), "default: 1 slot per host", "default", tuple(ctx.skipped))


def _what(alloc: Allocation) -> str:
    return f"job {alloc.job_id}" if alloc.job_id else "these nodes"


def _query_job(job_id: str) -> Job:
    from slurmkit.slurm import query

    return query.job(job_id)


def _try(source: Source, ctx: _Context) -> Found | None:
    try:
        found = source(ctx)
    except _Skip as skip:
        ctx.skipped.append(str(skip))
        return None
    except SlurmParseError as exc:
        ctx.skipped.append(f"{source.__doc__ or source.__name__}: {exc}")
        return None
    if found is not None and min(found[0]) < 1:
        ctx.skipped.append(f"{found[1]}: zero slots")
        return None
    if found is not None and max(found[0]) > MAX_PER_NODE:
        raise UsageError(
            f"{found[1]}: {max(found[0])} slots on one node is more than any node runs "
            f"(at most {MAX_PER_NODE}): fix the variable, or give --slots N"
        )
    return found


# ---------------------------------------------------------------- GPU sources


def _uniform_gpus(ctx: _Context, var: str) -> None:
    """Refuse a this-node-only GPU count when other nodes may have a different one."""
    env = ctx.env
    if ctx.nodes <= 1 or env.get("SLURM_GPUS_PER_NODE"):
        return
    for marker in _NOT_PER_NODE:
        if env.get(marker):
            raise _Skip(
                f"{var}={env[var]} counts this node only and {marker}={env[marker]} "
                "does not fix GPUs per node: asking Slurm for each node's count"
            )


def _env_gpus_on_node(ctx: _Context) -> Found | None:
    """SLURM_GPUS_ON_NODE"""
    value = ctx.env.get("SLURM_GPUS_ON_NODE", "").strip()
    if not value:
        return None
    if not _digits(value):
        raise SlurmParseError(f"not a GPU count: {value[:40]!r}")
    if int(value) == 0:
        raise _Skip("SLURM_GPUS_ON_NODE=0: no GPUs on this node")
    _uniform_gpus(ctx, "SLURM_GPUS_ON_NODE")
    return [int(value)] * ctx.nodes, f"SLURM_GPUS_ON_NODE={value} (GPUs on each node)"


def _env_gpu_ids(ctx: _Context) -> Found | None:
    """SLURM_STEP_GPUS / SLURM_JOB_GPUS"""
    for var in ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS"):
        value = ctx.env.get(var, "").strip()
        if value and value not in ("N/A", "(null)"):
            _uniform_gpus(ctx, var)
            count = idrange.count_ids(value)
            return [count] * ctx.nodes, f"{var}={value} ({count} GPU ids on each node)"
    return None


def _env_gpus_per_node(ctx: _Context) -> Found | None:
    """SLURM_GPUS_PER_NODE"""
    value = ctx.env.get("SLURM_GPUS_PER_NODE", "").strip()
    if not value:
        return None
    count = gres.typed_gpu_count(value)
    return [count] * ctx.nodes, f"SLURM_GPUS_PER_NODE={value}"


def _job_gres(ctx: _Context) -> Found | None:
    """the job's GPU GRES"""
    if ctx.alloc.env is not None and not _has_gpu_hint(ctx.env):
        ctx.skipped.append("job GRES: no GPU variable in the job environment (no GPUs)")
        return None
    job = ctx.job()
    if job is None:
        return None
    if any(d.gres for d in job.gres_detail):
        return _gres_detail(job, ctx.alloc.hosts)
    count = gres.gpu_count(job.gres_per_node)
    if count:
        return [count] * ctx.nodes, f"scontrol show job: TresPerNode={job.gres_per_node}"
    return None


def _has_gpu_hint(env: Mapping[str, str]) -> bool:
    return any(env.get(v, "").strip() for v in _GPU_HINTS) or "gpu" in env.get(
        "SLURM_TRES_PER_TASK", ""
    )


def _gres_detail(job: Job, hosts: tuple[str, ...]) -> Found | None:
    """Per-node GPU counts from the ``Nodes=... GRES=gpu:4(IDX:0-3)`` lines, keyed by node name."""
    counts: dict[str, int] = {}
    for detail in job.gres_detail:
        gpus = gres.gpu_count(detail.gres) or 0
        counts.update(dict.fromkeys(hostlist.expand(detail.nodes), gpus))
    if not any(counts.values()):
        return None
    missing = [h for h in hosts if h not in counts]
    if missing:
        raise _Skip(f"scontrol show job -d lists no GRES for {hostlist.fold(missing)}")
    per_host = [counts[h] for h in hosts]
    empty = [h for h, n in zip(hosts, per_host, strict=True) if n == 0]
    if empty:
        raise SlurmkitError(
            f"job {job.job_id} has no GPUs on {hostlist.fold(empty)} (its GPUs were spread "
            "per job, not per node): give --slots N, or request GPUs per node (--gres=gpu:N)"
        )
    shown = ", ".join(f"{d.nodes}: {d.gres}" for d in job.gres_detail if d.gres)
    return per_host, f"scontrol show job -d: GPUs per node ({shown})"


# ---------------------------------------------------------------- task and CPU sources


def _malformed(var: str, value: str, shape: str) -> UsageError:
    """A variable Slurm sets that does not read as Slurm writes it: an error, never a guess.

    Falling back to 1 slot per node (exit 0, the reason shown only with ``-v``) started
    a launcher with the wrong number of processes; a broken environment is the
    caller's to fix.
    """
    shown = value if len(value) <= 60 else value[:57] + "..."
    return UsageError(
        f"{var}={shown!r} is not {shape} as Slurm sets it: fix or unset {var}, or give --slots N"
    )


def _digits(value: str) -> bool:
    """A count as Slurm writes one: ASCII digits, at most 20 (Python will not read 5000)."""
    return value.isascii() and value.isdigit() and len(value) <= 20


def _env_ntasks_per_node(ctx: _Context) -> Found | None:
    """SLURM_NTASKS_PER_NODE"""
    value = ctx.env.get("SLURM_NTASKS_PER_NODE", "").strip()
    if not value:
        return None
    if not _digits(value):
        raise _malformed("SLURM_NTASKS_PER_NODE", value, "a task count")
    return [int(value)] * ctx.nodes, f"SLURM_NTASKS_PER_NODE={value}"


def _env_per_node(var: str, what: str) -> Source:
    def source(ctx: _Context) -> Found | None:
        value = ctx.env.get(var, "").strip()
        if not value:
            return None
        try:
            slurmvars.parse_repeated(value)
        except SlurmParseError:
            raise _malformed(var, value, "a per-node count list (like 2(x3),1)") from None
        try:  # well formed, for another node count: a step on fewer nodes
            counts = slurmvars.per_node(value, ctx.nodes)
        except SlurmParseError as exc:
            # Going on to the next source ended in 1 slot per node, exit 0: a launcher
            # then started the wrong number of processes. Say so and stop.
            raise UsageError(f"{var}: {exc}: give --slots N") from None
        return counts, f"{var}={value} ({what} per node)"

    source.__doc__ = var
    return source


def _job_tasks(ctx: _Context) -> Found | None:
    """the job's task layout"""
    job = ctx.job() if ctx.alloc.env is None else None
    if job is None:
        return None
    per_node = (job.raw.get("NtasksPerN:B:S:C") or "").split(":", 1)[0]
    if per_node.isdigit() and int(per_node) > 0:
        return [int(per_node)] * ctx.nodes, f"scontrol show job: --ntasks-per-node={per_node}"
    tasks = job.raw.get("NumTasks", "")
    if job.num_nodes and tasks.isdigit() and int(tasks) == job.num_nodes:
        return [1] * ctx.nodes, f"scontrol show job: NumTasks={tasks} on {job.num_nodes} nodes"
    if tasks.isdigit():
        ctx.skipped.append(
            f"scontrol show job: {tasks} tasks on {job.num_nodes} nodes, split unknown "
            "outside the job"
        )
    return None


_SOURCES: dict[str, tuple[Source, ...]] = {
    "gpus": (_env_gpus_on_node, _env_gpu_ids, _env_gpus_per_node, _job_gres),
    "tasks": (
        _env_ntasks_per_node,
        _env_per_node("SLURM_TASKS_PER_NODE", "tasks"),
        _job_tasks,
    ),
    "cpus": (_env_per_node("SLURM_JOB_CPUS_PER_NODE", "CPUs"),),
}


def sources_in_order() -> Iterator[str]:
    """The names of the ``auto`` sources, in order (for help text and tests)."""
    for kind in KINDS[:2]:
        for source in _SOURCES[kind]:
            yield source.__doc__ or source.__name__
