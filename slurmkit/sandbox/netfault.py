"""A real network fault on one sandbox node: its data traffic dropped or slowed.

Why nftables and not ``tc netem``: the sandbox's nodes share the host's network
namespace (node-N is the loopback address 127.0.1.N), and the kernels it runs on
(a firecracker 6.18 here) have nf_tables but neither netem nor the prio qdisc, so
there is no per-address delay or loss to be had from ``tc``. An nftables rule on
the ``output`` hook sees every loopback packet once, so dropping or policing the
packets to and from one address breaks exactly that node's traffic, for real.

What breaks is the node's *data network*: TCP and UDP with a fixed port in
1024-32767 at either end, to or from the node's address. Its *management
network* (its slurmd port and the sandbox's ssh port) is left alone, so the node
stays up in Slurm, ``srun`` still launches on it and ssh/pdsh still reach it,
while anything else with a fixed port (a rendezvous, an all-reduce, a benchmark
listener) to or from the node fails: as a node with a dead data NIC does.

The node is known by its address alone: a process on a node that connects out
from an unbound socket leaves from 127.0.0.1 (the nodes share the host's routing
table) and is not faulted. A check that is to see the fault listens on, or binds
its client sockets to, its node's address, as it would pick the data NIC of a real
node; the node's processes share no cgroup or namespace nft could match instead.

One table per sandbox (``inet slurmkit_<hash of its dir>``, chain ``output``), so
``down`` removes it whole and two sandboxes never touch each other's rules. Each
rule's comment names its node and fault, so ``clear`` removes exactly that
node's rules. The nft program is built only from validated integers and
addresses and goes to ``nft -f -`` on stdin: never a shell string.
"""

from __future__ import annotations

import hashlib
import json
import re
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.locks import default_lock_path, hold
from slurmkit.sandbox.requirements import find_program
from slurmkit.sandbox.spec import SandboxSpec

FAULTS = ("net-down", "net-slow")
# 16 MB take 3-4 s under it where loopback moves them in ~10 ms (measured on the
# 2-core development VM: ~4-5 MB/s, against ~1.9 GB/s unfaulted): clearly slow, still finishes.
DEFAULT_RATE = "4mbytes"
DATA_PORTS = (1024, 32767)  # fixed (listening) ports; Linux's ephemeral ones start at 32768
CHAIN = "output"
_COMMENT_PREFIX = "slurmkit-fault"
_COMMENT = re.compile(
    rf"^{_COMMENT_PREFIX} node=(node-[0-9]+) fault=(net-down|net-slow)"
    r"(?: rate=([0-9]+(?:k|m)?bytes))?$"
)
_NODE = re.compile(r"^node-([1-9][0-9]{0,2})$")
_RATE = re.compile(r"^([1-9][0-9]{0,8})\s*(bytes|kbytes|mbytes)(?:/s(?:econd)?)?$")
_NFT_TIMEOUT = 30.0


@dataclass(frozen=True)
class ActiveFault:
    """A fault that is in force now, as read back from the kernel's rules."""

    node: str
    fault: str
    rate: str = ""  # net-slow only, e.g. "4mbytes"


def table_name(directory: Path | str) -> str:
    """The sandbox's own nft table: stable for a directory, distinct between directories."""
    digest = hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:12]
    return f"slurmkit_{digest}"


def node_index(spec: SandboxSpec, node: str) -> int:
    """``node-N`` of this sandbox -> N; anything else is a usage error naming the nodes."""
    match = _NODE.match(node)
    if match is None or not 1 <= int(match.group(1)) <= spec.nodes:
        raise UsageError(
            f"{node!r} is not a node of the sandbox in {spec.dir} (its nodes: {spec.nodelist})"
        )
    return int(match.group(1))


def parse_rate(text: str) -> str:
    """``4mbytes`` / ``256kbytes`` / ``512 kbytes/second`` -> the canonical ``4mbytes``."""
    match = _RATE.match(text.strip().lower())
    if match is None:
        raise UsageError(
            f"--rate {text!r} is not a rate: give a whole number of bytes, kbytes or mbytes "
            f"per second, e.g. {DEFAULT_RATE}"
        )
    return f"{int(match.group(1))}{match.group(2)}"


def _nft_rate(rate: str) -> str:
    match = _RATE.match(rate)
    if match is None:  # only canonical rates from parse_rate get here
        raise UsageError(f"bad rate {rate!r}")
    return f"{int(match.group(1))} {match.group(2)}/second"


def comment(node: str, fault: str, rate: str = "") -> str:
    text = f"{_COMMENT_PREFIX} node={node} fault={fault}"
    return f"{text} rate={rate}" if fault == "net-slow" else text


def rules(spec: SandboxSpec, index: int, fault: str, rate: str = "") -> list[str]:
    """The nft rule bodies (without ``add rule``) that make ``fault`` on node ``index``.

    Four directions of the data network: to a service on the node and its replies,
    from the node to a service elsewhere and its replies. The node's slurmd port and
    the ssh port are excepted at the service end of each, so a connection to them
    (or from them, on another node) never matches.
    """
    if fault not in FAULTS:
        raise UsageError(f"unknown fault {fault!r}: one of {', '.join(FAULTS)} or clear")
    if not 1 <= index <= spec.nodes:
        raise UsageError(f"node-{index} is not a node of the sandbox in {spec.dir}")
    addr = spec.node_addr(index)
    low, high = DATA_PORTS
    keep = sorted({spec.slurmd_port(index), spec.ssh_port})
    except_ports = "{ " + ", ".join(str(int(p)) for p in keep) + " }"
    if fault == "net-down":
        verdict = "drop"
    else:
        verdict = f"limit rate over {_nft_rate(parse_rate(rate or DEFAULT_RATE))} drop"
    note = comment(f"node-{index}", fault, parse_rate(rate or DEFAULT_RATE))
    bodies = []
    for ip_dir, port_dir in (
        ("daddr", "dport"),
        ("saddr", "sport"),
        ("saddr", "dport"),
        ("daddr", "sport"),
    ):
        bodies.append(
            f"meta l4proto {{ tcp, udp }} ip {ip_dir} {addr} th {port_dir} {low}-{high} "
            f'th {port_dir} != {except_ports} {verdict} comment "{note}"'
        )
    return bodies


def program(
    table: str, add: list[str] | None = None, delete_handles: list[int] | None = None
) -> str:
    """One nft transaction: make sure the table and chain exist, delete, then add rules.

    ``add table``/``add chain`` are no-ops when they exist; the whole file is applied
    atomically, so a node never sits between its old fault and its new one.
    """
    if not re.fullmatch(r"slurmkit_[0-9a-f]{12}", table):
        raise UsageError(f"bad table name {table!r}")
    lines = [
        f"add table inet {table}",
        f"add chain inet {table} {CHAIN} {{ type filter hook output priority 0; policy accept; }}",
    ]
    lines += [f"delete rule inet {table} {CHAIN} handle {int(h)}" for h in delete_handles or []]
    lines += [f"add rule inet {table} {CHAIN} {body}" for body in add or []]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------- talking to nft
def _nft() -> str:
    path = find_program("nft")
    if path is None:
        raise EnvironmentProblem(
            "sandbox fault needs nft (Debian package nftables): apt-get install nftables"
        )
    return path


def _run_nft(args: list[str], input: str | None = None) -> _proc.Completed:
    result = _proc.run([_nft(), *args], input=input, timeout=_NFT_TIMEOUT)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[:1] or ["no output"]
        raise EnvironmentProblem(
            f"nft {' '.join(args)} failed (exit {result.returncode}): {tail[0]}"
        )
    return result


def _table_exists(table: str) -> bool:
    data = json.loads(_run_nft(["-j", "list", "tables", "inet"]).stdout or "{}")
    return any(item.get("table", {}).get("name") == table for item in data.get("nftables", []))


def _our_rules(table: str) -> list[tuple[int, ActiveFault]]:
    """(handle, fault) of every rule in the table's chain that this module wrote."""
    if not _table_exists(table):
        return []
    out = _run_nft(["-j", "list", "chain", "inet", table, CHAIN]).stdout
    found = []
    for item in json.loads(out).get("nftables", []):
        rule = item.get("rule")
        if not isinstance(rule, dict):
            continue
        match = _COMMENT.match(str(rule.get("comment", "")))
        if match and type(rule.get("handle")) is int:
            found.append((rule["handle"], ActiveFault(match[1], match[2], match[3] or "")))
    return found


def _locked(spec: SandboxSpec) -> AbstractContextManager[Path]:
    """Read-then-change of the rules is one step for concurrent callers on one sandbox."""
    return hold(
        default_lock_path(f"sandbox-fault-{table_name(spec.dir)}"),
        wait=60,
        what=f"the network faults of the sandbox in {spec.dir}",
    )


# ------------------------------------------------------------------- the operations
def set_fault(spec: SandboxSpec, node: str, fault: str, rate: str = "") -> ActiveFault:
    """Put ``fault`` on ``node``, replacing any fault it had (one atomic nft transaction)."""
    index = node_index(spec, node)
    if fault == "net-slow":
        rate = parse_rate(rate or DEFAULT_RATE)
    elif rate:
        raise UsageError("--rate goes with net-slow only")
    table = table_name(spec.dir)
    bodies = rules(spec, index, fault, rate)
    with _locked(spec):
        old = [h for h, f in _our_rules(table) if f.node == node]
        _run_nft(["-f", "-"], input=program(table, bodies, old))
    return ActiveFault(node, fault, rate)


def clear(spec: SandboxSpec, node: str) -> list[ActiveFault]:
    """Remove ``node``'s fault rules (and only those); returns the faults removed."""
    node_index(spec, node)
    table = table_name(spec.dir)
    with _locked(spec):
        mine = [(h, f) for h, f in _our_rules(table) if f.node == node]
        if mine:
            _run_nft(["-f", "-"], input=program(table, [], [h for h, _ in mine]))
    return sorted({f for _, f in mine}, key=lambda f: f.fault)


def active(spec: SandboxSpec) -> list[ActiveFault]:
    """The faults in force, one per node, in node order."""
    seen = {f for _, f in _our_rules(table_name(spec.dir))}
    return sorted(seen, key=lambda f: (int(f.node.split("-")[1]), f.fault))


def remove_table(directory: Path | str) -> bool:
    """Delete the sandbox's table (``down``, and a stale one at ``up``); True if one existed.

    Lenient by design: without nft, or on a kernel without nf_tables, no table can
    exist, and ``up``/``down`` must not fail for a feature they did not use.
    """
    if find_program("nft") is None:
        return False
    table = table_name(directory)
    try:
        if not _table_exists(table):
            return False
    except (EnvironmentProblem, ValueError):
        return False
    _run_nft(["delete", "table", "inet", table])
    return True
