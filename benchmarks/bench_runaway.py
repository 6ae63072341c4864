"""Time the node-list runaway inputs of issue 21 item 6 (run by hand, never from the tests).

    .venv/bin/python benchmarks/bench_runaway.py [--runs 15]

Each line is the median of ``--runs`` in-process library calls (after one warm-up)
and the answer: a refusal must come before anything is listed, so its time does not
grow with the number of names the input stands for. The peak resident memory of
the whole run is printed last (the 4,000,000-entry input once took 1 GiB).
Whole-process times are measured from outside with ``farm-bench``, e.g.

    farm-bench -n 10 -- .venv/bin/slurmkit nodes fold --keep-order --max 1000 \
        'a[1-2000]b[1-2000]c[1-2]'
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from slurmkit.errors import HostlistParseError
from slurmkit.hostlist import expand, fold
from slurmkit.hostlist._canonical import classify

LONG_NAME = "n" + "7" * 40_000 + "a1b"

CASES: list[tuple[str, Callable[[], object]]] = [
    (
        "fold --keep-order --max 1000 a[1-200]b[1-200]c[1-2]",
        lambda: fold("a[1-200]b[1-200]c[1-2]", sort=False, limit=1000),
    ),
    (
        "fold --keep-order --max 1000 a[1-2000]b[1-2000]c[1-2]",
        lambda: fold("a[1-2000]b[1-2000]c[1-2]", sort=False, limit=1000),
    ),
    (
        "fold --max 1000 a[1-2000]b[1-2000]c[1-2] (sorted)",
        lambda: fold("a[1-2000]b[1-2000]c[1-2]", limit=1000),
    ),
    ("classify(n + 40,000 digits + a1b)", lambda: classify(LONG_NAME)),
    ("fold n + 40,000 digits + a1b", lambda: fold([LONG_NAME])),
    ("fold --keep-order n + 40,000 digits + a1b", lambda: fold([LONG_NAME], sort=False)),
    ("expand --max 2 a,b,a", lambda: expand("a,b,a", limit=2)),
]


def answer(work: Callable[[], object]) -> str:
    try:
        value = work()
    except HostlistParseError as exc:
        return f"refused at position {exc.pos}: {str(exc)[:70]}"
    text = str(value)
    return f"ok ({len(text)} chars)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    print("| input | median ms | answer |\n|---|---:|---|")
    for label, work in CASES:
        said = answer(work)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            answer(work)
            times.append((time.perf_counter() - start) * 1000)
        print(f"| `{label}` | {statistics.median(times):.3f} | {said} |")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of this whole run: {peak:.1f} MiB")


if __name__ == "__main__":
    main()
