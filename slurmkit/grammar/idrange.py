"""Slurm id ranges: job array specs (``1-10:2%4``, ``1,3,5-7``), id lists, job ids (``123_[1-5]``).

The grammar of ``sbatch --array`` (``man sbatch``): comma-separated ``N``,
``N-M`` or ``N-M:S`` items and an optional ``%T`` throttle (at most T tasks at
once); ``squeue``/``scontrol`` print the pending remainder of an array the same
way inside brackets (``4_[2-6%1]``). GPU id lists (``SLURM_JOB_GPUS=0-3,6``,
``IDX:0,2``) are the same items without steps or throttle. A job id is
``123``, a task ``123_4``, and a group of tasks ``123_[1-5]`` or ``123_1-5``
(``scontrol hold`` answers). Node names are not here: they are
:mod:`slurmkit.hostlist`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurmkit.errors import SlurmParseError

_ITEM = re.compile(r"(\d{1,9})(?:-(\d{1,9})(?::(\d{1,9}))?)?")
_JOB_ID = re.compile(r"(\d{1,12})(?:_(\[[^\[\]]*\]|[0-9,\-:%]+))?")
# Expanding a spec is bounded: Slurm's MaxArraySize is at most 4,000,001.
MAX_TASKS = 4_000_001


@dataclass(frozen=True)
class IdRange:
    """``first-last:step``; a single id has ``first == last``."""

    first: int
    last: int
    step: int = 1

    def __str__(self) -> str:
        if self.first == self.last:
            return str(self.first)
        return f"{self.first}-{self.last}" + (f":{self.step}" if self.step != 1 else "")

    def ids(self) -> range:
        return range(self.first, self.last + 1, self.step)


@dataclass(frozen=True)
class ArraySpec:
    """A parsed array spec: its ranges in the order written and the ``%`` throttle."""

    ranges: tuple[IdRange, ...]
    throttle: int | None = None

    def __str__(self) -> str:
        text = ",".join(str(r) for r in self.ranges)
        return text + (f"%{self.throttle}" if self.throttle is not None else "")

    def ids(self) -> list[int]:
        """Every task id, in the order written (repeats kept, as Slurm would refuse them)."""
        return [i for r in self.ranges for i in r.ids()]

    def count(self) -> int:
        return sum(len(r.ids()) for r in self.ranges)


def parse_array(text: str, *, steps: bool = True, throttle: bool = True) -> ArraySpec:
    """``1-10:2%4``, ``[2-6%1]``, ``1,3,5-7`` -> an :class:`ArraySpec`.

    ``steps``/``throttle`` False refuse ``:S`` and ``%T`` (plain id lists).
    Raises :class:`SlurmParseError` naming the whole text on anything else,
    including a backwards range (``5-2``) and a step of 0.
    """
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    limit: int | None = None
    if "%" in body:
        body, _, rest = body.partition("%")
        if not throttle or not rest.isdigit() or not rest.isascii():
            raise SlurmParseError(f"not a Slurm id range: {text!r}")
        limit = int(rest)
    ranges = []
    for part in body.split(","):
        match = _ITEM.fullmatch(part.strip())
        if not match or (match[3] and not steps):
            raise SlurmParseError(f"not a Slurm id range: {text!r}")
        first = int(match[1])
        last = int(match[2]) if match[2] else first
        step = int(match[3]) if match[3] else 1
        if last < first or step < 1:
            raise SlurmParseError(f"not a Slurm id range (backwards or step 0): {text!r}")
        ranges.append(IdRange(first, last, step))
    return ArraySpec(tuple(ranges), limit)


def task_ids(text: str) -> list[int]:
    """Task indices of an array spec: ``[2-6%1]`` -> 2..6, ``1,4-8:2`` -> 1, 4, 6, 8."""
    spec = parse_array(text)
    if spec.count() > MAX_TASKS:
        raise SlurmParseError(f"{text!r}: more tasks than any Slurm array holds")
    return spec.ids()


def count_ids(text: str) -> int:
    """How many distinct ids ``2,3`` or ``0-3,6`` names (GPU ids are global: ``2,3`` is 2)."""
    spec = parse_array(text, steps=False, throttle=False)
    if spec.count() > MAX_TASKS:
        raise SlurmParseError(f"{text!r}: more ids than any Slurm list holds")
    return len(set(spec.ids()))


@dataclass(frozen=True)
class JobId:
    """``123``, ``123_4`` (a task) or ``123_[1-5%2]`` (tasks); ``tasks`` without the brackets."""

    job: str
    tasks: str | None = None

    def __str__(self) -> str:
        if self.tasks is None:
            return self.job
        return f"{self.job}_{self.tasks}" if self.tasks.isdigit() else f"{self.job}_[{self.tasks}]"

    @property
    def single_task(self) -> bool:
        return self.tasks is not None and self.tasks.isdigit()


def parse_job_id(text: str) -> JobId:
    """A job id as Slurm prints and takes it; the tasks part must be an array spec."""
    match = _JOB_ID.fullmatch(text.strip())
    if not match:
        raise SlurmParseError(f"not a Slurm job id: {text!r}")
    tasks = match[2].strip("[]") if match[2] else None
    if tasks is not None:
        parse_array(tasks)
    return JobId(match[1], tasks)


def is_job_id(text: str, *, tasks: bool = True) -> bool:
    """Whether ``text`` is ``123`` or ``123_4`` (and, with ``tasks``, ``123_[1-5]``)."""
    try:
        job = parse_job_id(text)
    except SlurmParseError:
        return False
    return job.tasks is None or job.single_task or tasks
