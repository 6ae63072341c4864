"""Whole-process start-up time of the slurmkit CLI (run by hand, not in tests).

Usage: .venv/bin/python benchmarks/bench_startup.py [--runs 30]
Prints a markdown table of medians; `python -X importtime` tells what to cut when it grows.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
COMMANDS = {
    "python -c pass (interpreter floor)": [sys.executable, "-c", "pass"],
    "slurmkit --help": [str(VENV_BIN / "slurmkit"), "--help"],
    "slurmkit nodes expand n[1-2]": [str(VENV_BIN / "slurmkit"), "nodes", "expand", "n[1-2]"],
    "slurmkit sandbox --help": [str(VENV_BIN / "slurmkit"), "sandbox", "--help"],
}


def median_ms(argv: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    commands = dict(COMMANDS)
    if shutil.which("scontrol"):
        # even --version reads a slurm.conf; a two-line one serves
        conf = Path(tempfile.mkdtemp()) / "slurm.conf"
        conf.write_text("ClusterName=bench\nSlurmctldHost=localhost\n")
        os.environ["SLURM_CONF"] = str(conf)
        commands["scontrol --version (C floor)"] = ["scontrol", "--version"]
    print(f"| command | median of {args.runs} (ms) |\n|---|---|")
    for label, argv in commands.items():
        median_ms(argv, 2)  # warm the page cache
        print(f"| `{label}` | {median_ms(argv, args.runs):.1f} |")


if __name__ == "__main__":
    main()
