"""A node's ``slurmkit health`` memory: where the xid check stopped reading, and its Xid drain.

Two things outlive a run, in a small JSON file per node (nodes of one host, such as
the sandbox's, share the directory) in root's trusted runtime dir,
``/run/slurmkit/health`` (cleared at boot, when the kernel log starts afresh too);
another user's directory there is refused, never adopted
(:func:`slurmkit.trust.private_dir`):

* ``kernel_log``: the last kernel record the xid check read (a ``/dev/kmsg`` sequence
  number or a journal cursor, :class:`slurmkit.health.kernlog.Position`), so each
  Xid is judged once and none falls between two runs;
* ``xid_drain``: the Xid drain this node is in (the check and the reason). It holds
  the node out whatever its reason says later, until a person returns the node.

A missing or unreadable file means "no last run": every record of this boot is read,
which can only drain more, never less.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from slurmkit import files, trust
from slurmkit.errors import SlurmkitError
from slurmkit.files import write_atomic
from slurmkit.health.kernlog import Position

ROOT_DIR = Path("/run/slurmkit/health")
MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class XidDrain:
    """The Xid drain a node is in: which check drained it, with what reason."""

    check: str
    reason: str


@dataclass(frozen=True)
class NodeState:
    position: Position | None = None
    xid_drain: XidDrain | None = None


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


def read(directory: Path, node: str) -> NodeState:
    """``node``'s state; the empty state when there is none or it does not parse.

    Raises :class:`slurmkit.trust.UntrustedPath` for a directory or file another user
    can change: the caller reports the Xid check as unknown rather than trust it.
    """
    path = _file(directory, node)
    if not os.path.lexists(path):
        return NodeState()
    trust.check_trusted(path, what="health state file")
    try:
        text = files.read_text_bounded(
            path, what="health state file", max_bytes=MAX_BYTES, trusted_owner=True
        )
        data = json.loads(text)
    except (OSError, SlurmkitError, ValueError):
        return NodeState()
    if not isinstance(data, dict):
        return NodeState()
    return NodeState(Position.from_json(data.get("kernel_log")), _xid_drain(data.get("xid_drain")))


def _xid_drain(data: object) -> XidDrain | None:
    if not isinstance(data, dict):
        return None
    check, reason = data.get("check"), data.get("reason")
    if isinstance(check, str) and check and isinstance(reason, str):
        return XidDrain(check, reason)
    return None


def write(directory: Path, node: str, state: NodeState) -> None:
    """Record ``state`` for ``node``, creating the private dir if needed."""
    trust.private_dir(directory, mode=0o700, what="health state directory")
    data: dict[str, object] = {"node": node}
    if state.position is not None:
        data["kernel_log"] = state.position.to_json()
    if state.xid_drain is not None:
        data["xid_drain"] = {"check": state.xid_drain.check, "reason": state.xid_drain.reason}
    write_atomic(_file(directory, node), json.dumps(data) + "\n", mode=0o600)
