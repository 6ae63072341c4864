"""``DIR/trace-<node>.txt``: py-spy's own text per process, as the seed recipes kept it.

Named by Slurm node name, never by ``srun --output=trace-%N.out`` (``%N`` is
the host name there, the same for every node when nodes share a host).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.pyspy.collect import Collection
from slurmkit.pyspy.records import NodeStacks, ProcessStack


def default_dir(jobid: str, now: datetime | None = None) -> Path:
    moment = now or datetime.now()
    return Path(f"pyspy-{jobid}-{moment:%Y%m%d-%H%M%S}")


def prepare_dir(directory: Path) -> Path:
    """Create the directory before any node is asked, so a bad path fails first."""
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--output-dir {directory} exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot create {directory}: {exc.strerror}") from exc
    return directory


def write_traces(
    directory: Path, collection: Collection, now: datetime | None = None
) -> list[Path]:
    """One file per node of the job, including nodes that only have problems to report."""
    stamp = f"{now or datetime.now():%Y-%m-%d %H:%M:%S}"
    written = []
    for report in collection.reports:
        path = directory / f"trace-{report.node}.txt"
        header = (
            f"# slurmkit pyspy: job {collection.jobid} on {report.node} "
            f"(via {collection.transport}, {stamp})\n"
        )
        try:
            path.write_text(header + node_text(report))
        except OSError as exc:
            raise EnvironmentProblem(f"cannot write {path}: {exc.strerror}") from exc
        written.append(path)
    return written


def node_text(report: NodeStacks) -> str:
    lines = [f"# problem: {p.message}" for p in report.problems if not p.pids]
    blocks = ["\n".join(lines) + "\n"] if lines else []
    blocks += [_process_text(proc) for proc in report.processes]
    return "\n".join(blocks)


def _process_text(proc: ProcessStack) -> str:
    parent = f", ppid {proc.ppid}" if proc.ppid is not None else ""
    head = f"## pid {proc.pid} ({proc.role}{parent}): {proc.command}\n"
    if proc.ok:
        return head + proc.text.rstrip("\n") + "\n"
    return head + f"# {proc.status}: {proc.error}\n" + proc.text
