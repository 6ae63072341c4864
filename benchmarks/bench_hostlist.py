"""Benchmark slurmkit's hostlist engine against ClusterShell, python-hostlist and Slurm.

Run by hand (never from the test suite):

    .venv/bin/pip install ClusterShell python-hostlist   # optional, benchmark only
    .venv/bin/python benchmarks/bench_hostlist.py [--runs 15] [--quick]

It prints markdown tables of medians in milliseconds. A tool that is not
installed is skipped with a note. What is measured:

* in-process, Python tools: the library call alone, in this interpreter,
  median of ``--runs`` timed calls after one warm-up call;
* in-process, Slurm: Slurm's C library cannot be called from here, so the
  column is the ``scontrol`` process running the workload *minus* the same
  process on a one-name input (start-up and config reading cancel out) --
  an estimate of the hostlist work, labelled as such;
* whole-process: the command as a user runs it, through hyperfine if it is
  installed (``-N``, or a shell for stdin redirection, hyperfine subtracting
  the shell), else a Python timing loop around subprocess.run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from slurmkit import hostlist  # noqa: E402

BIN = Path(sys.executable).parent
NOTES: list[str] = []


# -- timing -----------------------------------------------------------------------------


def median_ms(call: Callable[[], object], runs: int) -> str:
    """Median wall time of ``call`` (formatted), after one warm-up call.

    A call slower than 3 s is timed once (the warm-up) and marked so: the
    quadratic cases of other tools would otherwise take minutes.
    """
    gc.collect()  # each cell starts from the same heap, whatever ran before it
    start = time.perf_counter()
    call()
    first = time.perf_counter() - start
    if first > 3:
        return f"{first * 1000:.0f} (1 run)"
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    ms = statistics.median(times) * 1000
    return f"{ms:.1f}" if ms >= 1 else f"{ms:.3f}"


def process_ms(commands: list[str], runs: int, shell: bool) -> list[float]:
    """Median wall time of each shell command line, via hyperfine when available."""
    if shutil.which("hyperfine"):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            argv = ["hyperfine", "--warmup", "3", "--runs", str(runs), "--export-json", out.name]
            argv += ([] if shell else ["-N"]) + ["--style", "none", *commands]
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            subprocess.run(argv, check=True, **quiet)
            results = json.loads(Path(out.name).read_text())["results"]
        return [r["median"] * 1000 for r in results]
    medians = []
    for command in commands:
        times = []
        for i in range(runs + 3):
            start = time.perf_counter()
            subprocess.run(command, shell=True, stdout=subprocess.DEVNULL, check=True)
            if i >= 3:
                times.append(time.perf_counter() - start)
        medians.append(statistics.median(times) * 1000)
    return medians


# -- the tools ------------------------------------------------------------------------


def load_clustershell() -> object | None:
    try:
        from ClusterShell.NodeSet import NodeSet
    except ImportError:
        NOTES.append("ClusterShell not installed: its columns are skipped.")
        return None
    return NodeSet


def load_python_hostlist() -> object | None:
    try:
        import hostlist as python_hostlist
    except ImportError:
        NOTES.append("python-hostlist not installed: its columns are skipped.")
        return None
    return python_hostlist


def slurm_env(tmp: Path) -> dict[str, str] | None:
    if shutil.which("scontrol") is None:
        NOTES.append("scontrol not found: the Slurm columns are skipped.")
        return None
    conf = tmp / "slurm.conf"
    conf.write_text("ClusterName=bench\nSlurmctldHost=localhost\n")
    return {**os.environ, "SLURM_CONF": str(conf)}


# -- workloads ---------------------------------------------------------------------------


def workloads(size: int) -> dict[str, object]:
    rnd = random.Random(42)
    shuffled = [f"node-{i}" for i in range(1, size + 1)]
    rnd.shuffle(shuffled)
    return {
        "expand_text": f"node-[1-{size // 2},{size // 2 + 1}-{size}]",
        "shuffled": shuffled,
        "gaps": [f"node-{i}" for i in range(1, size // 5 + 1, 2)],  # 10k names, 10k ranges
        "comma_list": ",".join(f"n{i}" for i in rnd.sample(range(3 * size), 2 * size)),
        "diagonal": [f"rack{i}-n{i}" for i in range(4000)],
    }


def in_process_rows(w: dict, runs: int, cs, ph, env, tmp: Path) -> list[list[str]]:
    shuffled, gaps = w["shuffled"], w["gaps"]
    comma = w["comma_list"]
    rows: list[tuple[str, Callable, Callable | None, Callable | None, tuple | None]] = [
        (
            f"expand `{w['expand_text']}` ({len(shuffled) // 1000}k names)",
            lambda: hostlist.expand(w["expand_text"]),
            cs and (lambda: list(cs(w["expand_text"]))),
            ph and (lambda: ph.expand_hostlist(w["expand_text"])),
            ("hostnames", w["expand_text"]),
        ),
        (
            f"fold {len(shuffled) // 1000}k shuffled names",
            lambda: hostlist.fold(shuffled),
            cs and (lambda: str(cs.fromlist(shuffled))),
            ph and (lambda: ph.collect_hostlist(shuffled)),
            ("hostlistsorted", _file(tmp, "shuffled", shuffled)),
        ),
        (
            f"fold {len(gaps) // 1000}k names with gaps (every other number)",
            lambda: hostlist.fold(gaps),
            cs and (lambda: str(cs.fromlist(gaps))),
            ph and (lambda: ph.collect_hostlist(gaps)),
            ("hostlistsorted", _file(tmp, "gaps", gaps)),
        ),
        (
            f"fold a {comma.count(',') // 1000 + 1}k-name comma list (one string)",
            lambda: hostlist.fold(comma),
            cs and (lambda: str(cs(comma))),
            ph and (lambda: ph.collect_hostlist(ph.expand_hostlist(comma))),
            ("hostlistsorted", _file(tmp, "comma", comma.split(","))),
        ),
        (
            f"expand a {comma.count(',') // 1000 + 1}k-name comma list",
            lambda: hostlist.expand(comma),
            cs and (lambda: list(cs(comma))),
            ph and (lambda: ph.expand_hostlist(comma)),
            None,  # too long for one scontrol argument; hostnames reads no file
        ),
        (
            "fold 4k-name 2-D diagonal `rack{i}-n{i}` (multi-dim)",
            lambda: hostlist.fold(w["diagonal"], multi_dim=True),
            cs and (lambda: str(cs.fromlist(w["diagonal"]))),
            None,
            None,
        ),
    ]
    table = []
    for label, ours, theirs_cs, theirs_ph, slurm in rows:
        cells = [label, median_ms(ours, runs)]
        for other in (theirs_cs, theirs_ph):
            cells.append(median_ms(other, runs) if other else "–")
        cells.append(_slurm_estimate(slurm, env, runs) if slurm and env else "–")
        table.append(cells)
    return table


def _file(tmp: Path, name: str, names: list[str]) -> str:
    path = tmp / f"{name}.txt"
    path.write_text("\n".join(names) + "\n")
    return str(path)


def _slurm_estimate(slurm: tuple[str, str], env: dict[str, str], runs: int) -> str:
    mode, arg = slurm
    trivial = "n1" if mode == "hostnames" else _trivial_file(arg)
    os.environ.update(env)
    work, base = process_ms(
        [f"scontrol show {mode} {arg}", f"scontrol show {mode} {trivial}"], runs, shell=False
    )
    return f"{max(work - base, 0):.1f} ({work:.1f} − {base:.1f})"


def _trivial_file(path: str) -> str:
    one = Path(path).with_name("one.txt")
    one.write_text("n1\n")
    return str(one)


def whole_process_rows(w: dict, runs: int, cs, ph, env, tmp: Path) -> list[list[str]]:
    if env:
        os.environ.update(env)
    shuffled_file = _file(tmp, "shuffled", w["shuffled"])
    expand_cmds = [
        f"{BIN}/slurmkit nodes expand n[1-2]",
        f"{BIN}/nodeset -e n[1-2]" if cs else None,
        f"{BIN}/hostlist -e n[1-2]" if ph else None,
        "scontrol show hostnames n[1-2]" if env else None,
    ]
    fold_cmds = [
        f"{BIN}/slurmkit nodes fold - < {shuffled_file}",
        f"{BIN}/nodeset -f < {shuffled_file}" if cs else None,
        f"{BIN}/hostlist -c - < {shuffled_file}" if ph else None,
        f"scontrol show hostlistsorted {shuffled_file}" if env else None,
    ]
    library_only = (
        f'{sys.executable} -c "import sys; from slurmkit.hostlist import expand; '
        "sys.stdout.write(chr(10).join(expand('n[1-2]')) + chr(10))\""
    )
    rows = []
    for label, commands, shell in (
        ("CLI expand `n[1-2]`", expand_cmds, False),
        ("no click: `python -c` + slurmkit.hostlist, expand `n[1-2]`", [library_only], True),
        (f"CLI fold {len(w['shuffled']) // 1000}k shuffled names from stdin/file", fold_cmds, True),
    ):
        present = [c for c in commands if c]
        times = iter(process_ms(present, runs, shell))
        cells = [f"{next(times):.1f}" if c else "–" for c in commands]
        rows.append([label, *cells, *["–"] * (4 - len(cells))])
    return rows


def scaling_rows(runs: int, cs) -> list[list[str]]:
    """Time at n and 2n: a ratio near 2 means linear (n log n shows as slightly above 2)."""
    rnd = random.Random(7)

    def shuffled(n: int) -> list[str]:
        names = [f"node-{i}" for i in range(n)]
        rnd.shuffle(names)
        return names

    def comma(n: int) -> str:
        return ",".join(f"n{i}" for i in rnd.sample(range(3 * n), n))

    def diagonal(n: int) -> list[str]:
        return [f"rack{i}-n{i}" for i in range(n)]

    cases = [
        ("slurmkit fold, shuffled names", 100_000, shuffled, hostlist.fold),
        ("slurmkit fold, comma-list string", 100_000, comma, hostlist.fold),
        (
            "slurmkit fold --keep-order, comma list",
            100_000,
            comma,
            lambda x: hostlist.fold(x, sort=False),
        ),
        ("slurmkit expand, comma-list string", 100_000, comma, hostlist.expand),
        (
            "slurmkit fold --multi-dim, 2-D diagonal",
            4_000,
            diagonal,
            lambda x: hostlist.fold(x, multi_dim=True),
        ),
    ]
    if cs:
        cases.append(
            ("ClusterShell fold, 2-D diagonal", 1_000, diagonal, lambda x: str(cs.fromlist(x)))
        )
    rows = []
    for label, n, make, call in cases:
        t1 = _timed(call, make(n), runs)
        t2 = _timed(call, make(2 * n), runs)
        rows.append([label, f"{n:,}", f"{t1:.1f}", f"{2 * n:,}", f"{t2:.1f}", f"{t2 / t1:.2f}"])
    return rows


def _timed(call: Callable[[object], object], arg: object, runs: int) -> float:
    return float(median_ms(lambda: call(arg), runs).split()[0])


def range_rows(runs: int) -> list[list[str]]:
    cases = {
        "`count('n[1-1000000000]')`": lambda: hostlist.count("n[1-1000000000]"),
        "`str(difference('n[1-10000000]', 'n[5-6]'))`": lambda: str(
            hostlist.difference("n[1-10000000]", "n[5-6]")
        ),
        "`len(union('n[1-1000000000]', 'm[1-1000000000]'))`": lambda: len(
            hostlist.union("n[1-1000000000]", "m[1-1000000000]")
        ),
    }
    return [[label, median_ms(call, runs)] for label, call in cases.items()]


# -- output ---------------------------------------------------------------------------


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def versions(cs, ph) -> str:
    parts = [f"Python {platform.python_version()}"]
    if cs:
        import ClusterShell

        parts.append(f"ClusterShell {ClusterShell.__version__}")
    if ph:
        parts.append(f"python-hostlist {getattr(ph, '__version__', '?')}")
    if shutil.which("scontrol"):
        parts.append(
            subprocess.run(
                ["scontrol", "--version"], capture_output=True, text=True, env=os.environ
            ).stdout.strip()
        )
    if shutil.which("hyperfine"):
        parts.append(
            subprocess.run(
                ["hyperfine", "--version"], capture_output=True, text=True
            ).stdout.strip()
        )
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    return f"{cpu}, {os.cpu_count()} CPUs; " + ", ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per cell (median)")
    parser.add_argument("--quick", action="store_true", help="10k names instead of 100k")
    args = parser.parse_args()
    cs, ph = load_clustershell(), load_python_hostlist()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = slurm_env(tmp)
        if env:
            os.environ.update(env)
        w = workloads(10_000 if args.quick else 100_000)
        tools = ["slurmkit", "ClusterShell", "python-hostlist"]
        print(f"Machine: {versions(cs, ph)}\n")
        print("### In-process (median ms)\n")
        print(
            table(
                ["workload", *tools, "Slurm: scontrol work (run − 1-name run)"],
                in_process_rows(w, args.runs, cs, ph, env, tmp),
            )
        )
        print("\n### Whole process (median ms)\n")
        print(
            table(
                ["command", *tools, "Slurm scontrol"],
                whole_process_rows(w, args.runs, cs, ph, env, tmp),
            )
        )
    print("\n### Scaling (median ms; ratio ≈ 2 is linear)\n")
    print(table(["case", "n", "ms", "2n", "ms", "ratio"], scaling_rows(args.runs, cs)))
    print("\n### Range operations, slurmkit (median ms; nothing is expanded)\n")
    print(table(["operation", "ms"], range_rows(args.runs)))
    for note in NOTES:
        print(f"\nNote: {note}")


if __name__ == "__main__":
    main()
