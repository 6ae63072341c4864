"""The one line ``up`` puts in the user's ``~/.ssh/config``, and ``down`` takes out again.

With it plain ``ssh node-2`` (and pdsh, and paramiko) reach the sandbox's nodes. Each
sandbox adds its own ``Include`` under a marker line, at the top, and removes exactly
that pair: another sandbox's line and the user's own text stay as they were.
"""

from __future__ import annotations

import os
from pathlib import Path

from slurmkit.sandbox.spec import SandboxSpec, optional_text

SSH_INCLUDE_MARKER = "# added by 'slurmkit sandbox up'; removed by 'slurmkit sandbox down'"


def _ssh_user_config() -> Path:
    return Path.home() / ".ssh" / "config"


def install_include(spec: SandboxSpec) -> None:
    """Make plain ``ssh node-2`` (and pdsh, and paramiko) reach the sandbox nodes."""
    cfg = _ssh_user_config()
    cfg.parent.mkdir(mode=0o700, exist_ok=True)
    include = f"Include {spec.ssh_config}"
    current = optional_text(cfg, "ssh config")
    if include in current.splitlines():
        return
    # At the top: an Include after a Host block would only apply inside that block.
    cfg.write_text(f"{SSH_INCLUDE_MARKER}\n{include}\n{current}")
    os.chmod(cfg, 0o600)


def remove_include(spec: SandboxSpec) -> None:
    """Remove this sandbox's Include and the marker just above it, and nothing else.

    Another sandbox (other --dir) has the same marker line; it must keep its own.
    """
    cfg = _ssh_user_config()
    text = optional_text(cfg, "ssh config")
    if not text:
        return
    include = f"Include {spec.ssh_config}"
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    for line in lines:
        if line.rstrip("\n") == include:
            if kept and kept[-1].rstrip("\n") == SSH_INCLUDE_MARKER:
                kept.pop()
            continue
        kept.append(line)
    if kept != lines:
        cfg.write_text("".join(kept))
