"""The query backends compared: pyslurm's C API against Slurm's commands (run by hand).

Needs Slurm 25.11 built and pyslurm 25.11 (scripts/test installs both); the script brings
its own sandbox up and down, once per node count, in a slot no other sandbox uses (its own
dir, ports 21400+ and nodes on 127.0.30.x), so it runs beside the demo's or the tests':

    .venv/bin/python benchmarks/bench_backend.py [--runs 15] [--virtual 0,1000,10000]

Part 1, on a 4-node sandbox with one running 2-node job and two drained nodes: whole
``slurmkit`` processes (what a user waits for), median of ``--runs``, for
``nodes drained``, ``job info ID`` and ``hostfile --jobid ID``, per backend.
Part 2, for each ``--virtual N`` (nodes defined but never started, shown down): the
in-process cost of ``query.nodes()`` and ``query.drain_reasons()`` per backend, median
of ``--runs`` after one warm-up. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from slurmkit import sandbox
from slurmkit.slurm import backend, query
from slurmkit.slurm._exec import run_slurm

DIR = Path("/tmp/slurmkit-bench-25.11")
SK = [sys.executable, "-m", "slurmkit"]


def _median_ms(action: Callable[[], object], runs: int) -> float:
    action()  # warm-up: page cache, pyslurm import, slurmctld caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _up(virtual: int) -> sandbox.SandboxSpec:
    spec = sandbox.SandboxSpec(
        dir=DIR, slurm="25.11", virtual_nodes=virtual, port_base=21400, net=30
    )
    report = sandbox.up(spec)
    for line in sandbox.env_lines(DIR):
        name, value = line.removeprefix("export ").split("=", 1)
        os.environ[name] = os.path.expandvars(shlex.split(value)[0])
    backend.reset()
    query.version.cache_clear()
    return report.spec


def _cli(args: list[str], name: str) -> Callable[[], object]:
    env = {**os.environ, "SLURMKIT_BACKEND": name}

    def run() -> object:
        return subprocess.run([*SK, *args], env=env, check=True, capture_output=True)

    return run


def part_one(runs: int) -> list[str]:
    _up(0)
    job = run_slurm(
        ["sbatch", "--parsable", "-N2", "-o", "/dev/null", "--wrap", "srun sleep 600"]
    ).stdout.strip()
    run_slurm(["scontrol", "update", "nodename=node-[3-4]", "state=drain", "reason=bench"])
    try:
        deadline = time.monotonic() + 60
        while not any(j.is_running for j in query.jobs(job_ids=job)):
            if time.monotonic() > deadline:
                raise SystemExit("the benchmark job did not start")
            time.sleep(0.3)
        rows = ["| command | commands (ms) | pyslurm (ms) |", "|---|---|---|"]
        for args in (["nodes", "drained"], ["job", "info", job], ["hostfile", "--jobid", job]):
            c = _median_ms(_cli(args, "commands"), runs)
            p = _median_ms(_cli(args, "pyslurm"), runs)
            rows.append(f"| `slurmkit {' '.join(args[:2])}` | {c:.0f} | {p:.0f} |")
        return rows
    finally:
        run_slurm(["scancel", job])
        run_slurm(["scontrol", "update", "nodename=node-[3-4]", "state=resume"])
        sandbox.down(DIR)


def part_two(counts: list[int], runs: int) -> list[str]:
    rows = [
        "| nodes | nodes(): commands (ms) | nodes(): pyslurm (ms) "
        "| drain_reasons(): commands (ms) | drain_reasons(): pyslurm (ms) |",
        "|---|---|---|---|---|",
    ]
    for virtual in counts:
        _up(virtual)
        try:
            cells = []
            for read in (query.nodes, query.drain_reasons):
                for name in ("commands", "pyslurm"):
                    backend.choose(name)
                    cells.append(f"{_median_ms(read, runs):.1f}")
            total = len(query.nodes())
            rows.append(f"| {total} | " + " | ".join(cells) + " |")
        finally:
            backend.choose(None)
            sandbox.down(DIR)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--virtual", default="0,1000,10000", help="virtual node counts")
    parser.add_argument("--skip-cli", action="store_true", help="part 2 only")
    args = parser.parse_args()
    if backend.pyslurm_version() is None:
        raise SystemExit("pyslurm is not installed (scripts/test installs it for 25.11)")
    if not args.skip_cli:
        print("\n".join(part_one(args.runs)), flush=True)
        print()
    print("\n".join(part_two([int(n) for n in args.virtual.split(",")], args.runs)))


if __name__ == "__main__":
    main()
