"""How well a job used what it asked for, from accounting's own per-step figures.

The peers get this wrong in known ways (issue 31), so each choice here is deliberate:
- CPU: all steps' TotalCPU (the allocation line's, which is their sum) against elapsed
  time x the allocation's CPUs. A multi-task MPI step counts every task's CPU time, not
  the batch shell's alone (reportseff #37 showed 5% for a job busy at 100%).
- Memory: a step's use is the sum of its tasks' peaks (``TRESUsageInTot`` mem), not
  ``MaxRSS``, which is one task's (reportseff #41: srun memory not scaled by the task
  count; seff thinks one task per node). Steps are compared one at a time, the largest
  wins: steps are not summed (reportseff #16: 182.8% where seff said 24%).
- The request is the allocation's memory (``AllocTRES`` mem, else ``ReqTRES``, else
  ``ReqMem``): the job's total whether asked per node (``--mem``) or per CPU
  (``--mem-per-cpu``); per node it is that total over the node count.
- Every step is read whatever its state: a TIMEOUT job's steps end CANCELLED, and a filter
  on the job's state dropped them (reportseff #58: 0% memory for TIMEOUT jobs).
- Sizes keep sacct's units (K, M, G: powers of 1024): seff-array #24 printed 1228% of
  409.6 MB from mixed units.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from slurmkit.slurm.accounting import Step, parse_size

# A waste flag needs at least this many CPUs left idle and this share of them unused.
IDLE_CPUS = 1.0
LOW_CPU = 0.5
# Memory asked and left unused is flagged from this size and below this share used.
BIG_UNUSED = 1 << 30
LOW_MEM = 0.25


@dataclass(frozen=True)
class StepUse:
    """One step's use: CPU share of its allocation, memory of all its tasks."""

    step: str
    tasks: int | None
    nodes: int | None
    cpus: int | None
    elapsed: int | None
    cpu_seconds: float | None
    cpu_share: float | None
    memory: int | None  # all tasks' peaks, summed
    memory_per_node: int | None
    peak_task: int | None  # MaxRSS: the largest task's peak
    peak_node: str | None
    gpu_memory: int | None = None
    gpu_util: float | None = None

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Efficiency:
    """The job's (or array task's) use of its allocation."""

    cpus: int | None
    elapsed: int | None
    cpu_seconds: float | None
    cpu_share: float | None
    memory_request: int | None
    memory_request_per_node: int | None
    memory_used: int | None
    memory_share: float | None
    steps: tuple[StepUse, ...]
    waste: tuple[str, ...]
    over: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        data = {k: v for k, v in self.__dict__.items() if k != "steps"}
        data["steps"] = [s.to_json() for s in self.steps]
        data["waste"] = list(self.waste)
        data["over"] = list(self.over)
        return data


def memory_request(allocation: Step) -> int | None:
    """The allocation's memory in bytes, per-CPU requests already multiplied out."""
    for tres in (allocation.alloc_tres, allocation.req_tres):
        size = parse_size(tres.get("mem"))
        if size:
            return size
    return allocation.req_mem


def step_use(step: Step, fallback_cpus: int | None = None) -> StepUse:
    cpus = step.alloc_cpus or fallback_cpus
    share = _share(step.total_cpu, step.elapsed, cpus)
    memory = _step_memory(step)
    nodes = step.num_nodes or (1 if step.nodelist else None)
    return StepUse(
        step=step.display_id,
        tasks=step.ntasks,
        nodes=nodes,
        cpus=cpus,
        elapsed=step.elapsed,
        cpu_seconds=step.total_cpu,
        cpu_share=share,
        memory=memory,
        memory_per_node=memory // nodes if memory is not None and nodes else None,
        peak_task=step.max_rss,
        peak_node=step.max_rss_node,
        gpu_memory=parse_size(step.usage_max.get("gres/gpumem")),
        gpu_util=_number(step.usage_max.get("gres/gpuutil")),
    )


def _step_memory(step: Step) -> int | None:
    """All tasks' peaks summed: TRESUsageInTot mem, else MaxRSS x tasks (an upper bound)."""
    total = parse_size(step.usage_tot.get("mem"))
    if total is not None:
        return total
    if step.max_rss is None:
        return None
    return step.max_rss * (step.ntasks or 1)


def _share(used: float | None, elapsed: int | None, cpus: int | None) -> float | None:
    if used is None or not elapsed or not cpus:
        return None
    return used / (elapsed * cpus)


def _number(text: str | None) -> float | None:
    try:
        return None if text is None else float(text)
    except ValueError:
        return None


def of_attempt(allocation: Step, steps: Sequence[Step]) -> Efficiency:
    """The efficiency of one attempt: its allocation line and the steps after it."""
    uses = tuple(step_use(s, allocation.alloc_cpus) for s in steps)
    cpu_seconds = allocation.total_cpu
    if cpu_seconds is None and uses:
        cpu_seconds = sum(u.cpu_seconds or 0.0 for u in uses)
    cpu_share = _share(cpu_seconds, allocation.elapsed, allocation.alloc_cpus)
    request = memory_request(allocation)
    used = max((u.memory for u in uses if u.memory is not None), default=None)
    nodes = allocation.num_nodes or 1
    efficiency = Efficiency(
        cpus=allocation.alloc_cpus,
        elapsed=allocation.elapsed,
        cpu_seconds=cpu_seconds,
        cpu_share=cpu_share,
        memory_request=request,
        memory_request_per_node=request // nodes if request else None,
        memory_used=used,
        memory_share=used / request if used is not None and request else None,
        steps=uses,
        waste=(),
        over=(),
    )
    return _flagged(efficiency)


def _flagged(eff: Efficiency) -> Efficiency:
    waste: list[str] = []
    over: list[str] = []
    if eff.cpu_share is not None and eff.cpus and eff.elapsed:
        busy = (eff.cpu_seconds or 0.0) / eff.elapsed
        if eff.cpus >= 2 and eff.cpu_share < LOW_CPU and eff.cpus - busy >= IDLE_CPUS:
            waste.append(f"asked {eff.cpus} CPUs, used {busy:.1f} ({eff.cpu_share:.0%})")
    if eff.memory_request and eff.memory_used is not None:
        unused = eff.memory_request - eff.memory_used
        if eff.memory_used > eff.memory_request:
            over.append(
                f"used {size_text(eff.memory_used)} of memory, "
                f"{eff.memory_used / eff.memory_request:.1f}x the {size_text(eff.memory_request)}"
                " asked"
            )
        elif unused >= BIG_UNUSED and (eff.memory_share or 0.0) < LOW_MEM:
            waste.append(
                f"asked {size_text(eff.memory_request)} of memory, "
                f"used {size_text(eff.memory_used)} ({eff.memory_share:.0%})"
            )
    return Efficiency(**{**eff.__dict__, "waste": tuple(waste), "over": tuple(over)})


def size_text(size: int | None) -> str:
    """Bytes as sacct writes them (powers of 1024), one decimal: ``314.5M``."""
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}P"


def summary_lines(eff: Efficiency) -> list[str]:
    """The evidence lines: the job's CPU and memory, then one line per step that ran."""
    lines = []
    if eff.cpu_share is not None:
        lines.append(
            f"CPU: {eff.cpu_seconds:.1f} s of CPU time over {eff.elapsed} s x {eff.cpus} CPUs"
            f" = {eff.cpu_share:.0%}"
        )
    if eff.memory_used is not None:
        per_node = (
            f" ({size_text(eff.memory_request_per_node)}/node)"
            if eff.memory_request_per_node and eff.memory_request_per_node != eff.memory_request
            else ""
        )
        share = f" = {eff.memory_share:.0%}" if eff.memory_share is not None else ""
        lines.append(
            f"memory: peak {size_text(eff.memory_used)} (the largest step, all its tasks) of "
            f"{size_text(eff.memory_request)} asked{per_node}{share}"
        )
    for use in eff.steps:
        if use.memory is None and use.cpu_seconds is None:
            continue
        lines.append(_step_line(use))
    return lines


def _step_line(use: StepUse) -> str:
    cpu = f"CPU {use.cpu_share:.0%} of {use.cpus}" if use.cpu_share is not None else "CPU -"
    tasks = f"{use.tasks} task{'s' if use.tasks != 1 else ''}" if use.tasks else "tasks -"
    gpu = ""
    if use.gpu_util is not None:
        gpu = f", GPU util {use.gpu_util:.0f}%, GPU memory {size_text(use.gpu_memory)}"
    return (
        f"step {use.step}: {tasks} on {use.nodes or '-'} node(s), {cpu}, memory "
        f"{size_text(use.memory)} (largest task {size_text(use.peak_task)}"
        f"{' on ' + use.peak_node if use.peak_node else ''}){gpu}"
    )
