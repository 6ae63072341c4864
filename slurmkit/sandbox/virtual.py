"""Virtual nodes: defined in slurm.conf, never started, so slurmctld reports them down.

For the backend benchmark: a node query's cost against the node count (1,000 to
10,000 nodes) needs that many nodes in slurmctld's tables, not that many slurmd.
Each has a loopback address of its own in 127.2.0.0/16, where nothing listens, and
starts DOWN with a reason, so ``sinfo -R`` and ``nodes drained`` list them too. They
sit in a partition of their own (``virtual``), never the default one: no test job
can land on them.
"""

from __future__ import annotations

from slurmkit.sandbox.spec import SandboxSpec

PREFIX = "vnode-"
PARTITION = "virtual"
REASON = "virtual node (never started)"
_PER_LINE = 250  # one NodeName line per 127.2.X.0/24 block of addresses


def names(spec: SandboxSpec) -> list[str]:
    return [f"{PREFIX}{i}" for i in range(1, spec.virtual_nodes + 1)]


def slurm_conf_lines(spec: SandboxSpec) -> list[str]:
    """NodeName lines (blocks of 250 sharing a hostlist) and the ``virtual`` partition."""
    count = spec.virtual_nodes
    if not count:
        return []
    lines = []
    port = spec.port_base + 99  # unused by the sandbox: nothing answers there
    for first in range(1, count + 1, _PER_LINE):
        last = min(first + _PER_LINE - 1, count)
        block = (first - 1) // _PER_LINE
        span = f"[{first}-{last}]" if last > first else str(first)
        addrs = f"127.2.{block}.[1-{last - first + 1}]" if last > first else f"127.2.{block}.1"
        lines.append(
            f"NodeName={PREFIX}{span} NodeAddr={addrs} Port={port} CPUs={spec.cpus}"
            f' RealMemory=1000 State=DOWN Reason="{REASON}"'
        )
    hostlist = f"{PREFIX}[1-{count}]" if count > 1 else f"{PREFIX}1"
    lines.append(f"PartitionName={PARTITION} Nodes={hostlist} MaxTime=INFINITE State=UP")
    return lines
