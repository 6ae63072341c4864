"""Hostfiles in the formats launchers read, and writing them atomically.

The formats and where they are documented:

- ``deepspeed``: ``<host> slots=<n>`` per line. DeepSpeed "Getting Started",
  Resource Configuration (multi-node) (``worker-1 slots=4``); its runner
  (``deepspeed/launcher/runner.py``, ``_parse_hostfile``) matches
  ``^(\\S+)\\s+slots=(\\d+)``, skips blank and ``#`` lines and rejects a host
  listed twice. Also what ``ds_ssh -f`` reads.
- ``openmpi``: ``<host> slots=<n>`` per line. Open MPI ``mpirun(1)``,
  "Specifying Host Nodes" / ``--hostfile`` (``slots=N`` clauses; a host
  without one gets one slot per core).
- ``mpich``: ``<host>:<n>`` per line. MPICH wiki "Using the Hydra Process
  Manager" (``mpiexec -f hosts``; ``donner:2``); Intel MPI's Hydra reads the same.
- ``plain``: one host per line (pdsh ``-w ^file``, ``mpiexec -f`` with one
  process per host round robin, clush ``--hostfile``).
- ``json``: ``[{"host": ..., "slots": n}, ...]`` for scripts.

Hosts are written in Slurm's order (``scontrol show hostnames``), so line 1
is the node launchers treat as rank 0 / MASTER_ADDR.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from slurmkit.errors import UsageError

FORMATS = ("deepspeed", "openmpi", "mpich", "plain", "json")


def _check_host(host: str) -> None:
    """Refuse a name a launcher would read as something else.

    Launchers hand each hostfile name to ssh or pdsh as an argument: a name starting
    with ``-`` (``-oProxyCommand=...``) becomes an option, a blank splits a line in
    two, and a control character corrupts the file. No Slurm node name has any of these.
    """
    if not host or host.startswith("-") or any(c.isspace() or ord(c) < 32 for c in host):
        raise UsageError(
            f"refusing node name {host!r} in a hostfile: a launcher would read it as an "
            "option or split it (names must not start with '-' or hold blanks)"
        )


def render(hosts: Sequence[str], slots: Sequence[int], fmt: str = "deepspeed") -> str:
    """The hostfile text for ``hosts`` with ``slots[i]`` processes on ``hosts[i]``."""
    if len(hosts) != len(slots):
        raise ValueError(f"{len(hosts)} hosts but {len(slots)} slot counts")
    for host in hosts:
        _check_host(host)
    pairs = list(zip(hosts, slots, strict=True))
    if fmt in ("deepspeed", "openmpi"):
        lines = [f"{host} slots={n}" for host, n in pairs]
    elif fmt == "mpich":
        lines = [f"{host}:{n}" for host, n in pairs]
    elif fmt == "plain":
        lines = list(hosts)
    elif fmt == "json":
        return json.dumps([{"host": host, "slots": n} for host, n in pairs], indent=2) + "\n"
    else:
        raise UsageError(f"unknown hostfile format {fmt!r} (one of {', '.join(FORMATS)})")
    return "".join(f"{line}\n" for line in lines)
