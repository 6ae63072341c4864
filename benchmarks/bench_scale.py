"""Output and speed at 10,000 nodes: ``undrain --dry-run`` and ``nodes drained`` (run by hand).

Needs a sandbox with virtual nodes (defined, never started, shown down). Bring one up
in a directory, ports and node addresses of its own (beside any other sandbox):

    .venv/bin/slurmkit sandbox up --dir /tmp/sk-virtual --virtual-nodes 10000 \
        --port-base 21800 --net 31
    .venv/bin/python benchmarks/bench_scale.py --dir /tmp/sk-virtual
    .venv/bin/slurmkit sandbox down --dir /tmp/sk-virtual

``--up N`` brings the sandbox up (and down at the end) itself instead. The script drains
the virtual nodes as issue 20 describes them, each group in one ``scontrol update``:
``vnode-[1-5000]`` "Kill task failed" (undrain's candidates: all down, so all skipped),
``vnode-[5001-8000]`` another reason; the rest stay down with the sandbox's reason. Then
it times whole processes (median of ``--runs`` after one warm-up) and counts the lines
each prints to stdout:

- ``slurmkit undrain --dry-run`` (grouped table) and with ``-v`` (one line per node);
- ``slurmkit nodes drained`` and raw ``sinfo -R``, and ``slurmkit nodes expand n[1-2]``
  as slurmkit's start-up, for the "within 1.5x of sinfo -R plus start-up" goal.

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from slurmkit import sandbox
from slurmkit.slurm._exec import run_slurm

SK = [sys.executable, "-m", "slurmkit"]
CANDIDATES = "vnode-[1-5000]"
OTHERS = "vnode-[5001-8000]"


def _env(directory: Path) -> None:
    """The sandbox's SLURM_CONF (and PATH for a non-host version) in this process."""
    for line in sandbox.env_lines(directory):
        name, value = line.removeprefix("export ").split("=", 1)
        os.environ[name] = os.path.expandvars(shlex.split(value)[0])


def _measure(argv: list[str], runs: int) -> tuple[float, int]:
    """(median wall ms, lines on stdout) of a whole process."""
    subprocess.run(argv, capture_output=True, check=False)  # warm-up
    times = []
    lines = 0
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, check=False, text=True)
        times.append((time.perf_counter() - start) * 1000)
        lines = len(done.stdout.splitlines())
    return statistics.median(times), lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/sk-virtual"))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--up", type=int, metavar="N", help="bring up N virtual nodes first")
    args = parser.parse_args()
    if args.up:
        spec = sandbox.SandboxSpec(dir=args.dir, virtual_nodes=args.up, port_base=21800, net=31)
        sandbox.up(spec)
    try:
        _env(args.dir)
        update = ["scontrol", "update", f"nodename={CANDIDATES}", "state=drain"]
        run_slurm([*update, "reason=Kill task failed"])
        run_slurm(["scontrol", "update", f"nodename={OTHERS}", "state=drain", "reason=bench"])
        cases = [
            ("`slurmkit undrain --dry-run`", [*SK, "undrain", "--dry-run"]),
            ("`slurmkit undrain --dry-run -v`", [*SK, "undrain", "--dry-run", "-v"]),
            ("`slurmkit nodes drained`", [*SK, "nodes", "drained"]),
            ("`slurmkit nodes drained -v`", [*SK, "nodes", "drained", "-v"]),
            ("`sinfo -R` (raw)", ["sinfo", "-R"]),
            ("`slurmkit nodes expand n[1-2]` (start-up)", [*SK, "nodes", "expand", "n[1-2]"]),
        ]
        print("| command | median ms | lines printed |")
        print("|---|---|---|")
        for label, argv in cases:
            ms, lines = _measure(argv, args.runs)
            print(f"| {label} | {ms:.0f} | {lines} |", flush=True)
    finally:
        if args.up:
            sandbox.down(args.dir)


if __name__ == "__main__":
    main()
