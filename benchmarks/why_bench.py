"""``slurmkit why`` at scale, in process, on recorded real accounting (run by hand).

    .venv/bin/python benchmarks/why_bench.py [--runs 7]

Slurm's answers are the 22.05 recording of tests/fixtures/why (real sacct lines), grown to
size: the 5-task array's task 1 repeated as 10,000 tasks, and the 4-task srun job (14)
stretched to 64 nodes and 512 tasks with a "Kill task failed" drain on half its nodes.
Slurm is not run: what is measured is slurmkit's own parsing and verdict (Slurm's own time
to answer is a property of the site's database: ``why_live_bench.py`` runs it), and the
calls it asks for, counted at the process seam, each answered as Slurm would (the
allocations alone for ``--allocations``, the listed tasks for a sample's ``--jobs``).
Prints a markdown table: median ms over ``--runs`` and calls.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from slurmkit import _proc  # noqa: E402
from slurmkit.slurm.parse_text import DELIMITER  # noqa: E402
from tests.unit.test_why_ended import (  # noqa: E402  (the unit tests' grower and projection)
    allocation_lines,
    array_sacct,
)

FIXTURE = REPO / "tests" / "fixtures" / "why" / "slurm-22.05"
UNKNOWN = (1, "", "slurm_load_jobs error: Invalid job id specified\n")


def recorded_lines() -> list[str]:
    index = json.loads((FIXTURE / "index.json").read_text())
    text = (FIXTURE / "sacct.txt").read_text().replace(index["_delimiter"], DELIMITER)
    return [line for line in text.splitlines() if DELIMITER in line]


def field(line: str, number: int) -> str:
    return line.split(DELIMITER)[number]


def wide_job_sacct(nodes: int, tasks_per_node: int) -> str:
    """Job 14's lines with its allocation and srun step stretched over ``nodes`` nodes."""
    out = []
    for line in recorded_lines():
        values = line.split(DELIMITER)
        if values[1] not in ("14", "14.0"):
            continue
        values[10] = f"vnode-[1-{nodes}]"  # NodeList
        values[11] = str(nodes)  # NNodes
        values[12] = str(nodes * tasks_per_node)  # AllocCPUS
        if values[1] == "14.0":
            values[13] = str(nodes * tasks_per_node)  # NTasks
        out.append(DELIMITER.join(values))
    return "\n".join(out) + "\n"


def reasons(nodes: int) -> str:
    half = f"vnode-[1-{nodes // 2}]"
    return DELIMITER.join(["Kill task failed", "root", "2026-11-29T01:00:00", "drained", half])


def task_of(line: str) -> str:
    return field(line, 1).split(".", 1)[0] if DELIMITER in line else ""


class Seam:
    """The process seam answering by program name; counts every call."""

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, argv: Sequence[str], **_: object) -> _proc.Completed:
        self.calls.append(argv[0])
        rc, out, err = self.answers.get(argv[0], (0, "", ""))
        wanted = set(argv[-1].removeprefix("--jobs=").split(","))
        if "--allocations" in argv:  # why's first sacct: the allocations, 9 columns
            out = allocation_lines(out)
        elif argv[0] == "sacct" and len(wanted) > 1:  # the steps of a sample of an array
            out = "".join(ln for ln in out.splitlines(True) if task_of(ln) in wanted)
        return _proc.Completed(tuple(argv), rc, out, err, 0.0)


def measure(job: str, answers: dict[str, tuple[int, str, str]], runs: int) -> tuple[float, int]:
    from slurmkit.why.explain import explain

    seam = Seam(answers)
    _proc.runner = seam  # type: ignore[assignment]
    explain(job)  # warm-up (imports)
    calls = len(seam.calls)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        explain(job)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, calls


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    cases: list[tuple[str, str, Callable[[], dict[str, tuple[int, str, str]]]]] = [
        ("array of 10,000 tasks (summary)", "22", lambda: {"sacct": (0, array_sacct(10_000), "")}),
        (
            "one job on 64 nodes, 512 tasks",
            "14",
            lambda: {
                "sacct": (0, wide_job_sacct(64, 8), ""),
                "scontrol": UNKNOWN,
                "sinfo": (0, reasons(64) + "\n", ""),
            },
        ),
    ]
    print("| case | median ms | Slurm calls |")
    print("|---|---:|---:|")
    for title, job, answers in cases:
        ms, calls = measure(job, answers(), args.runs)
        print(f"| {title} | {ms:.0f} | {calls} |")


if __name__ == "__main__":
    main()
