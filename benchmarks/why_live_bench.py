"""``slurmkit why`` live: whole CLI processes against a scratch sandbox (run by hand, as root).

    .venv/bin/python benchmarks/why_live_bench.py [--slurm 24.11] [--runs 5] [--ran 2000]

The in-process figures (``benchmarks/why_bench.py``) leave out Slurm; this one runs it. It
brings up a sandbox of its own (``--dir``, ``--port-base``, ``--net``: beside any other),
``--profile test``, with ``--nodes 64`` started nodes (a job runs only on nodes whose slurmd
runs: ``--virtual-nodes`` are never started), and takes it down at the end (``--keep``
leaves it up). No ``sandbox up`` option sets MaxArraySize (1001 there) or MaxJobCount
(10,000): the script appends ``MaxArraySize=TASKS+1`` and ``MaxJobCount`` to *that
sandbox's generated* slurm.conf and runs ``scontrol reconfigure`` (Slurm allows raising
both so). Then, as root (the jobs are root's too, so ``why`` also runs its what-if):

1. a job on all 64 nodes, 8 tasks a node (512) in one srun step, while it runs;
2. an array of ``--tasks`` (10,000) tasks pending behind it (Resources/Priority);
3. the 64-node job ended (COMPLETED; the array held meanwhile, for a quiet machine);
4. the array released (``--throttle`` tasks at once) until ``--ran`` tasks ended, the rest
   held: partly run, partly pending; then cancelled, or
5. with ``--all``, the whole array ended (every task in accounting);
6. ``--also JOB ...``: jobs an earlier ``--keep`` run left in the sandbox (its whole array).

Each row: ``slurmkit why JOB`` as a whole process, wall clock, ``--runs`` runs after one
warm-up, median and max, and the CPU seconds of the process and its children (Slurm's
client commands, not the daemons). The Slurm commands each ``why`` runs are counted by
shims put first on PATH: each logs its name, then execs the real command. Prints a
markdown table and each case's headline.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SK = [sys.executable, "-m", "slurmkit"]
SHIMMED = ("sacct", "squeue", "sprio", "scontrol", "sstat", "sacctmgr", "sinfo", "sbatch")
PARTITION = "cpu"


@dataclass
class Row:
    case: str
    median: float
    worst: float
    cpu: float
    calls: Counter[str]
    headline: str


class Cluster:
    """The scratch sandbox's environment, with counting shims first on PATH for ``why``."""

    def __init__(self, directory: Path, shims: Path) -> None:
        self.env = dict(os.environ)
        out = _run([*SK, "sandbox", "env", "--dir", str(directory)], self.env)
        for line in out.splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            self.env[name] = os.path.expandvars(shlex.split(value)[0])
        self.calls = shims / "calls.log"
        self.why_env = dict(self.env, SK_WHY_CALLS=str(self.calls))
        self.why_env["PATH"] = f"{shims}:{self.env['PATH']}"
        for name in SHIMMED:
            real = shutil.which(name, path=self.env["PATH"])
            shim = shims / name
            shim.write_text(f'#!/bin/sh\necho {name} >> "$SK_WHY_CALLS"\nexec {real} "$@"\n')
            shim.chmod(0o755)

    def slurm(self, *argv: str) -> str:
        return _run(list(argv), self.env)

    def array_control(self, action: str, array: str) -> None:
        """``scontrol hold/release`` of an array: exit 1 once some tasks have ended."""
        subprocess.run(["scontrol", action, array], env=self.env, capture_output=True, check=False)

    def why(self, job: str) -> tuple[float, float, Counter[str], str]:
        """(wall s, cpu s, Slurm calls, headline) of one ``slurmkit why JOB`` process."""
        self.calls.write_text("")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [*SK, "why", job], env=self.why_env, capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        calls = Counter(self.calls.read_text().split())
        text = (done.stdout or done.stderr).strip()
        return wall, cpu, calls, text.splitlines()[0] if text else f"exit {done.returncode}"


def _run(argv: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=REPO)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def measure(cluster: Cluster, case: str, job: str, runs: int) -> Row:
    cluster.why(job)  # warm-up
    walls, cpus = [], []
    calls: Counter[str] = Counter()
    headline = ""
    for _ in range(runs):
        wall, cpu, calls, headline = cluster.why(job)
        walls.append(wall)
        cpus.append(cpu)
    row = Row(case, statistics.median(walls), max(walls), statistics.median(cpus), calls, headline)
    print(f"  {case}: {row.median:.2f} s (max {row.worst:.2f}), {dict(calls)}", flush=True)
    return row


def wait(what: str, ready: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            sys.exit(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(2)


def states(cluster: Cluster, job: str) -> Counter[str]:
    """State -> count over the job's (or array's) allocations in accounting."""
    out = cluster.slurm("sacct", "-j", job, "-X", "-n", "-P", "-o", "State")
    return Counter(line.split()[0] for line in out.splitlines() if line.strip())


def queue_reason(cluster: Cluster, job: str) -> str:
    return cluster.slurm("squeue", "-h", "-j", job, "-o", "%r").strip().splitlines()[0]


def running(cluster: Cluster, job: str) -> int:
    return len(cluster.slurm("squeue", "-h", "-j", job, "-t", "R,CG", "-o", "%i").split())


def raise_limits(cluster: Cluster, tasks: int) -> None:
    """MaxArraySize and MaxJobCount up, in this scratch sandbox's generated slurm.conf."""
    conf = Path(cluster.env["SLURM_CONF"])
    if "\nMaxArraySize=" not in conf.read_text():  # a kept sandbox has them already
        with conf.open("a") as handle:  # the sandbox's own generated file, not a user's
            handle.write(f"MaxArraySize={tasks + 1}\nMaxJobCount={4 * tasks + 10000}\n")
    cluster.slurm("scontrol", "reconfigure")
    wanted = f"MaxArraySize            = {tasks + 1}"
    wait("the new MaxArraySize", lambda: wanted in cluster.slurm("scontrol", "show", "config"), 60)


def submit(cluster: Cluster, *args: str) -> str:
    return cluster.slurm("sbatch", "--parsable", "-p", PARTITION, *args).strip().split(";")[0]


def step_started(cluster: Cluster, job: str) -> bool:
    return f"{job}.0" in cluster.slurm("squeue", "-h", "-s", "-j", job)


def ended(cluster: Cluster, job: str) -> bool:
    return not states(cluster, job).keys() & {"RUNNING", "PENDING"}


def completed(cluster: Cluster, job: str) -> int:
    return states(cluster, job)["COMPLETED"]


def bench(cluster: Cluster, args: argparse.Namespace, out_dir: Path) -> list[Row]:
    rows = []
    wide_case = f"job on {args.nodes} nodes, {8 * args.nodes} tasks"
    wide = submit(
        cluster,
        f"-N{args.nodes}",
        "--ntasks-per-node=8",
        f"-o{out_dir}/wide-%j.out",
        f"--wrap=srun sleep {args.hold}",
    )
    wait("the wide job's srun step", lambda: step_started(cluster, wide), 120)
    # else why answers from slurmctld alone while slurmdbd catches up (a busy machine)
    wait("accounting to see it run", lambda: states(cluster, wide)["RUNNING"] > 0, 60)
    # at most --throttle tasks at once: 512 at once put the 2-core machine's load at 90
    array = submit(
        cluster, f"--array=0-{args.tasks - 1}%{args.throttle}", "-o/dev/null", "--wrap=true"
    )
    in_line = ("Resources", "Priority")
    wait("the array to wait for nodes", lambda: queue_reason(cluster, array) in in_line, 60)
    rows.append(measure(cluster, f"{wide_case}, running", wide, args.runs))
    rows.append(measure(cluster, f"array of {args.tasks} tasks, pending", array, args.runs))
    cluster.array_control("hold", array)
    wait("the wide job to end", lambda: ended(cluster, wide), args.hold + 120)
    rows.append(measure(cluster, f"{wide_case}, ended", wide, args.runs))
    cluster.array_control("release", array)
    wait(f"{args.ran} array tasks to end", lambda: completed(cluster, array) >= args.ran, 1800)
    cluster.array_control("hold", array)
    wait("the array's running tasks to end", lambda: running(cluster, array) == 0, 120)
    done = completed(cluster, array)
    rows.append(measure(cluster, f"array: {done} tasks ended, the rest held", array, args.runs))
    if args.all:
        cluster.array_control("release", array)
        wait("every array task to end", lambda: completed(cluster, array) >= args.tasks, 3600)
        rows.append(measure(cluster, f"array: all {args.tasks} tasks ended", array, args.runs))
    else:
        cluster.slurm("scancel", array)
    for job in args.also:
        rows.append(measure(cluster, f"job {job} (already in the sandbox)", job, args.runs))
    return rows


def table(rows: Sequence[Row]) -> None:
    print("\n| case | median s | max s | cpu s | Slurm calls |")
    print("|---|---:|---:|---:|---|")
    for row in rows:
        calls = ", ".join(f"{count} {name}" for name, count in sorted(row.calls.items()))
        print(f"| {row.case} | {row.median:.2f} | {row.worst:.2f} | {row.cpu:.2f} | {calls} |")
    print()
    for row in rows:
        print(f"- {row.case}: {row.headline}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/sk-why-bench"))
    parser.add_argument("--slurm", default="24.11")
    parser.add_argument("--port-base", type=int, default=21400)
    parser.add_argument("--net", type=int, default=64)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--ran", type=int, default=2000, help="array tasks to end before the hold")
    parser.add_argument("--all", action="store_true", help="then run the whole array to its end")
    parser.add_argument("--hold", type=int, default=90, help="seconds the 64-node step runs")
    parser.add_argument("--throttle", type=int, default=32, help="array tasks running at once")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--also", nargs="*", default=[], metavar="JOB", help="jobs a --keep'd sandbox holds"
    )
    parser.add_argument("--keep", action="store_true", help="leave the sandbox up")
    args = parser.parse_args(argv)
    where = ["--dir", str(args.dir)]
    up = [*where, "--port-base", str(args.port_base), "--net", str(args.net), "--profile", "test"]
    up += ["--nodes", str(args.nodes), "--gpus", "0", "--slurm", args.slurm]
    _run([*SK, "sandbox", "up", *up], dict(os.environ))
    try:
        with tempfile.TemporaryDirectory(prefix="sk-why-shims-") as shims:
            cluster = Cluster(args.dir, Path(shims))
            print(cluster.slurm("scontrol", "--version").strip(), flush=True)
            raise_limits(cluster, args.tasks)
            table(bench(cluster, args, args.dir))
    finally:
        if not args.keep:
            _run([*SK, "sandbox", "down", *where], dict(os.environ))


if __name__ == "__main__":
    main()
