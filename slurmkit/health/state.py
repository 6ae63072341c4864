"""The Xid check's memory: when this node's last ``slurmkit health`` run read the kernel log.

``xid`` reports events *since the last run*, so an event drains the node once and a
later run does not judge it again. The time lives in a small JSON file per node (nodes
of one host, such as the sandbox's, share the directory) in root's trusted runtime
dir, ``/run/slurmkit/health`` (cleared at boot, when the kernel log starts afresh
too); another user's directory there is refused, never adopted
(:func:`slurmkit.trust.private_dir`). A missing or unreadable file means "no last
run": every event in the kernel log counts, which can only drain more, never less.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

from slurmkit import files, trust
from slurmkit.files import write_atomic

ROOT_DIR = Path("/run/slurmkit/health")


def default_dir() -> Path:
    """Root's ``/run/slurmkit/health``; another user's runtime or state dir (tests, trials)."""
    if os.geteuid() == 0:
        return ROOT_DIR
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and runtime.startswith("/"):
        return Path(runtime) / "slurmkit" / "health"
    return files.state_path("health")


def _file(directory: Path, node: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", node).lstrip(".") or "node"
    return directory / f"{safe}.json"


def read_since(directory: Path, node: str) -> datetime | None:
    """The last run's time for ``node``, or None (no run yet, or a file that does not parse).

    Raises :class:`slurmkit.trust.UntrustedPath` for a directory or file another user
    can change: the caller reports the Xid check as unknown rather than trust it.
    """
    path = _file(directory, node)
    if not os.path.lexists(path):
        return None
    trust.check_trusted(path, what="health state file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        when = datetime.fromisoformat(data["last_run"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return when if when.tzinfo is not None else None


def write_since(directory: Path, node: str, when: datetime) -> None:
    """Record ``when`` (aware) as ``node``'s last run, creating the private dir if needed."""
    trust.private_dir(directory, mode=0o700, what="health state directory")
    text = json.dumps({"node": node, "last_run": when.isoformat()}) + "\n"
    write_atomic(_file(directory, node), text, mode=0o600)
