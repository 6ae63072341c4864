"""Lines of the node-change audit log for tests: as written now (JSON) and as before (key=value)."""

from __future__ import annotations

import shlex
from datetime import datetime
from pathlib import Path

from slurmkit.nodechange import auditlog


def new_line(node: str, action: str, **fields: str) -> str:
    """One record as the core writes it (JSON with its checksum), newline-terminated."""
    token = fields.pop("token", "")
    return auditlog.entry(node, action, token=token, **fields).to_line().decode()


def old_line(node: str, action: str, *, stamp: datetime | None = None, **fields: str) -> str:
    """One line as ``undrain --log`` wrote it before the JSON log (key=value, shell-quoted)."""
    when = (stamp or datetime.now().astimezone()).isoformat(timespec="seconds")
    words = [when, f"node={node}", f"action={action}"]
    words += [f"{k}={shlex.quote(v)}" for k, v in fields.items()]
    return " ".join(words) + "\n"


def records(path: Path) -> list[dict[str, object]]:
    """Every record of the log at ``path``, old or new, as a dict (action, node, fields)."""
    return [r.to_json() for r in auditlog.read(path)]


def actions(path: Path) -> list[str]:
    return [str(r["action"]) for r in records(path)]


def fields(line: str) -> dict[str, str]:
    """One line's record as text fields (node, action, token, before, ...), old or new."""
    import json

    if line.startswith("{"):
        return {k: str(v) for k, v in json.loads(line).items()}
    words = shlex.split(line)
    return dict(w.split("=", 1) for w in words[1:] if "=" in w)


def node_actions(lines: list[str]) -> list[list[str]]:
    """[node, action] of each line."""
    return [[fields(ln)["node"], fields(ln)["action"]] for ln in lines]
