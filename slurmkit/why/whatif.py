"""Would a smaller request start sooner? Slurm's own answer, with nothing submitted.

The job's request is rebuilt from ``scontrol show job`` as sbatch options and changed
in one respect at a time (half the ``--time``, half the nodes), and each is put to
``sbatch --test-only``: slurmctld runs the scheduler's will-run test and says when
that request would start. Two calls at most, one per change.

The test judges the changed request as a *new* job, behind every job already
queued (it has no queue age), so an earlier start there is earlier for the job
itself too; a later one may only mean that it would queue behind the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from slurmkit.errors import SlurmkitError
from slurmkit.grammar import timelimit
from slurmkit.slurm import pendingq
from slurmkit.slurm.records import Job

CAVEAT = (
    "what-if: sbatch --test-only judged each changed request as a new job at the back "
    "of the queue; an earlier start there is earlier for this job too"
)
MAX_CALLS = 2
_NULL = frozenset({"", "(null)", "N/A", "None"})


@dataclass(frozen=True)
class Answer:
    """One changed request and what Slurm said about it."""

    change: tuple[str, ...]
    start: datetime | None
    refusal: str
    earlier: bool
    text: str

    def to_json(self) -> dict[str, object]:
        return {
            "change": list(self.change),
            "start": self.start.isoformat(timespec="seconds") if self.start else None,
            "refusal": self.refusal,
            "earlier": self.earlier,
            "text": self.text,
        }


def _raw(job: Job, key: str) -> str:
    value = job.raw.get(key, "").strip()
    return "" if value in _NULL else value


def request_options(job: Job) -> dict[str, str]:
    """The job's request as sbatch ``--option`` -> value ("" for a flag), from its record.

    Raises SlurmkitError when the record has no request (a squeue row, not scontrol's).
    """
    if not job.raw:
        raise SlurmkitError(f"job {job.display_id}'s request is unknown (no scontrol record)")
    pairs = {
        "--partition": _raw(job, "Partition"),
        "--nodes": _nodes(_raw(job, "NumNodes")),
        "--ntasks": _raw(job, "NumTasks"),
        "--cpus-per-task": _raw(job, "CPUs/Task"),
        "--time": _raw(job, "TimeLimit"),
        "--qos": _raw(job, "QOS"),
        "--account": _raw(job, "Account"),
        "--nodelist": _raw(job, "ReqNodeList"),
        "--exclude": _raw(job, "ExcNodeList"),
        "--constraint": _raw(job, "Features"),
        "--reservation": _raw(job, "Reservation"),
        "--gres": _gres(_raw(job, "TresPerNode")),
        "--mem": _memory(_raw(job, "MinMemoryNode")),
        "--mem-per-cpu": _memory(_raw(job, "MinMemoryCPU")),
    }
    options = {k: v for k, v in pairs.items() if v}
    exclusive = _exclusive(job)
    if exclusive is not None:
        options["--exclusive"] = exclusive
    if _raw(job, "Contiguous") == "1":
        options["--contiguous"] = ""
    if options.get("--time", "").upper() in timelimit.UNLIMITED_WORDS:
        options.pop("--time")
    return options


def _exclusive(job: Job) -> str | None:
    """``--exclusive``'s value, or None: 26.05 says ``Exclusive=NODE|USER|MCS|NO`` (and
    ``OverSubscribe=NO`` for every job); 22.05 and 24.11 only ``OverSubscribe=NO``."""
    if "Exclusive" in job.raw:
        value = _raw(job, "Exclusive").upper()
        return {"NODE": "", "USER": "user", "MCS": "mcs"}.get(value)
    return "" if _raw(job, "OverSubscribe") == "NO" else None


def _nodes(text: str) -> str:
    low, _, high = text.partition("-")
    return low if not high or high == low else text


def _gres(text: str) -> str:
    return ",".join(part.removeprefix("gres/").removeprefix("gres:") for part in text.split(","))


def _memory(text: str) -> str:
    return "" if text in ("0", "0M", "") else text


def _argv(options: dict[str, str]) -> list[str]:
    return [f"{k}={v}" if v else k for k, v in options.items()]


def changes(job: Job, options: dict[str, str]) -> list[tuple[tuple[str, ...], dict[str, str]]]:
    """The (at most two) changed requests worth asking about: half the time, half the nodes."""
    found: list[tuple[tuple[str, ...], dict[str, str]]] = []
    limit = timelimit.from_slurm(options.get("--time"))
    if limit and limit > 60:
        shorter = max(60, (limit // 2) // 60 * 60)
        changed = dict(options, **{"--time": timelimit.format_limit(shorter)})
        found.append(((f"--time={changed['--time']}",), changed))
    nodes = job.num_nodes or 0
    if nodes > 1 and "--nodelist" not in options:
        fewer = max(1, nodes // 2)
        changed = dict(options, **{"--nodes": str(fewer)})
        tasks = int(options["--ntasks"]) if options.get("--ntasks", "").isdigit() else 0
        if tasks:
            changed["--ntasks"] = str(max(fewer, -(-tasks * fewer // nodes)))
        found.append(((f"--nodes={fewer}",), changed))
    return found[:MAX_CALLS]


def ask(job: Job, estimate: datetime | None, *, now: datetime) -> list[Answer]:
    """Put each change to ``sbatch --test-only`` and compare with Slurm's own estimate."""
    options = request_options(job)
    answers = []
    for change, changed in changes(job, options):
        result = pendingq.test_only(_argv(changed))
        answers.append(_answer(change, result, estimate, now))
    return answers


def _answer(
    change: tuple[str, ...], result: pendingq.TestOnly, estimate: datetime | None, now: datetime
) -> Answer:
    what = " ".join(change)
    if result.start is None:
        text = f"with {what} Slurm would not start it: {result.refusal}"
        return Answer(change, None, result.refusal, False, text)
    earlier = estimate is None or result.start < estimate
    at = result.start.isoformat(timespec="seconds")
    where = f" on {result.nodes}" if result.nodes else ""
    if estimate is None:
        text = f"with {what} it could start at {at}{where}"
    elif earlier:
        gain = _minutes((estimate - result.start).total_seconds())
        text = f"with {what} it could start at {at}{where}, {gain} earlier"
    else:
        text = f"with {what} it would not start earlier ({at})"
    return Answer(change, result.start, "", earlier, text)


def _minutes(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60} min"
