"""The sandboxes running on this machine, by their ports and node addresses.

Two sandboxes may run at once (a test session per Slurm version does) when they share
nothing: not a port (--port-base), not a node address (--net). ``up`` records each running
sandbox here (root-owned) so a second ``up`` that would collide names the one that runs
instead of failing on a busy port half-way.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.files import write_atomic
from slurmkit.locks import default_lock_dir
from slurmkit.sandbox.daemons import is_alive, load_daemons
from slurmkit.sandbox.spec import SandboxSpec, read_json_object
from slurmkit.trust import private_dir


def _registry() -> Path:
    return private_dir(default_lock_dir() / "sandboxes", mode=0o755, what="sandbox registry")


def dir_key(directory: Path) -> str:
    """A short name for a sandbox directory (its registry entry, its lock)."""
    return hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:16]


def _registry_entry(directory: Path) -> Path:
    return _registry() / f"{dir_key(directory)}.json"


def register(spec: SandboxSpec) -> None:
    data = {
        "dir": str(spec.dir),
        "slurm": spec.slurm,
        "port_base": spec.port_base,
        "net": spec.net,
    }
    write_atomic(_registry_entry(spec.dir), json.dumps(data) + "\n")


def unregister(directory: Path) -> None:
    with contextlib.suppress(OSError, EnvironmentProblem):
        _registry_entry(directory).unlink(missing_ok=True)


def collision(spec: SandboxSpec, other: SandboxSpec) -> str:
    """What two sandboxes would share ("" for nothing): ports, or node addresses."""
    ours, theirs = spec.port_range, other.port_range
    if ours.start < theirs.stop and theirs.start < ours.stop:
        return f"ports {theirs.start}-{theirs.stop - 1}"
    if spec.net == other.net:
        return f"node addresses 127.0.{other.net}.1-{other.nodes}"
    return ""


def running_sandboxes() -> list[SandboxSpec]:
    """The sandboxes ``up`` registered whose every recorded daemon is alive."""
    found = []
    for entry in sorted(_registry().glob("*.json")):
        try:
            data = read_json_object(entry)
            other = SandboxSpec.load(Path(str(data.get("dir", ""))))
            daemons = load_daemons(other) if other is not None else []
        except EnvironmentProblem:
            continue  # a damaged or foreign entry names nothing we can stop anyway
        if other is not None and daemons and all(is_alive(d) for d in daemons):
            found.append(other)
    return found


def refuse_if_another_runs(spec: SandboxSpec) -> None:
    for other in running_sandboxes():
        shared = "" if other.dir == spec.dir else collision(spec, other)
        if shared:
            raise UsageError(
                f"a Slurm {other.slurm} sandbox is already running in {other.dir} with "
                f"{shared} (choose another --port-base/--net, or stop it with "
                f"'slurmkit sandbox down --dir {other.dir}')"
            )
