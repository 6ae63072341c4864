"""Wall time and Slurm RPCs of one undrain run for 4, 16 and 32 drained nodes (run by hand).

Needs a sandbox big enough, started apart from the shared one, e.g.:

    slurmkit sandbox up --nodes 32 --port-base 19800 --dir /tmp/sk-bench
    .venv/bin/python benchmarks/bench_undrain.py --dir /tmp/sk-bench [--via pdsh|ssh]
    slurmkit sandbox down --dir /tmp/sk-bench

For each size the script drains that many idle nodes with "Kill task failed",
times ``undrain --yes`` (selection, parallel checks, one batched scontrol
update, read-back) and counts Slurm calls twice: client side
(``_exec.call_log``) and server side (``sdiag`` RPC counters by message type,
so the count does not rely on slurmkit's own bookkeeping). It uses the
sandbox's own ssh config (``--ssh-config``), so results do not depend on
which sandbox ``~/.ssh/config`` includes first. Nodes it drained and did not
return are resumed before it exits. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections import Counter
from pathlib import Path

from slurmkit.hostlist import HostSet, fold
from slurmkit.remote import RemoteOptions
from slurmkit.sandbox.spec import SandboxSpec
from slurmkit.slurm import _exec, query
from slurmkit.slurm._exec import run_slurm
from slurmkit.undrain import UndrainOptions, undrain

REASON = "Kill task failed"
_RPC = re.compile(r"^\s+(REQUEST_\w+)\s+\(\s*\d+\)\s+count:(\d+)", re.M)


def rpc_counts() -> Counter[str]:
    """slurmctld's per-message-type RPC counters (``sdiag``), requests only."""
    text = run_slurm(["sdiag"]).stdout
    return Counter({name: int(count) for name, count in _RPC.findall(text)})


def idle_nodes(count: int, timeout: float = 120) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        idle = [n.name for n in query.nodes() if n.state == "IDLE" and not n.flags]
        if len(idle) >= count:
            return idle[:count]
        if time.monotonic() > deadline:
            raise SystemExit(
                f"only {len(idle)} idle nodes, {count} needed: is the sandbox big enough?"
            )
        time.sleep(0.5)


def drain(nodes: list[str]) -> None:
    run_slurm(["scontrol", "update", f"nodename={fold(nodes)}", "state=drain", f"reason={REASON}"])
    deadline = time.monotonic() + 60
    while not all(n.is_drained for n in query.nodes(HostSet(nodes))):
        if time.monotonic() > deadline:
            raise SystemExit("nodes did not become drained")
        time.sleep(0.2)


def restore(nodes: list[str]) -> None:
    left = [
        n.name for n in query.nodes(HostSet(nodes)) if "DRAIN" in n.flags and n.reason == REASON
    ]
    if left:
        run_slurm(["scontrol", "update", f"nodename={fold(left)}", "state=undrain"])


def measure(size: int, spec: SandboxSpec, via: str) -> tuple[float, int, int, int]:
    nodes = idle_nodes(size)
    drain(nodes)
    try:
        options = UndrainOptions(
            nodes=fold(nodes),
            via=via,
            remote=RemoteOptions(timeout=30, ssh_config=spec.ssh_config, fanout=64),
            lock=Path(f"/tmp/slurmkit-bench-undrain-{os.getpid()}.lock"),
        )
        rpcs_before, calls_before = rpc_counts(), len(_exec.call_log)
        start = time.perf_counter()
        report = undrain(options, confirm=lambda plan: True)
        wall = time.perf_counter() - start
        calls = len(_exec.call_log) - calls_before
        rpcs = sum((rpc_counts() - rpcs_before).values()) - 1  # minus the first sdiag itself
        returned = sum(o.returned for o in report.outcomes)
        return wall, calls, rpcs, returned
    finally:
        restore(nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="directory of a running sandbox")
    parser.add_argument("--sizes", default="4,16,32")
    parser.add_argument("--via", choices=["pdsh", "ssh"], default="pdsh")
    args = parser.parse_args()
    spec = SandboxSpec.load(args.dir)
    if spec is None:
        raise SystemExit(f"no sandbox in {args.dir}")
    os.environ["SLURM_CONF"] = str(spec.slurm_conf)
    sizes = [int(s) for s in args.sizes.split(",")]
    if max(sizes) > spec.nodes:
        raise SystemExit(
            f"the sandbox in {args.dir} has {spec.nodes} nodes, sizes need {max(sizes)}"
        )
    print(
        "| drained nodes | via | wall (s) | slurmkit Slurm calls | slurmctld RPCs (sdiag) "
        "| returned |\n|---|---|---|---|---|---|"
    )
    for size in sizes:
        wall, calls, rpcs, returned = measure(size, spec, args.via)
        print(
            f"| {size} | {args.via} | {wall:.2f} | {calls} | {rpcs} | {returned}/{size} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
