"""The Slurm calls of ``slurmkit node``: the controller's config, reboots, a node's history.

Kept apart from :mod:`.query` so the node commands add no lines to a module every
feature touches. Same shape: a pure argv builder per call, a parser, one call each,
whatever the number of nodes (a reboot of 64 nodes is one ``scontrol reboot``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from slurmkit.slurm import _exec
from slurmkit.slurm.backend import NodeNames
from slurmkit.slurm.parse_text import DELIMITER, SACCT_COLUMNS, field_list, parse_sacct
from slurmkit.slurm.query import _when, hostlist_word
from slurmkit.slurm.records import Job

# "RebootProgram           = /sbin/reboot"; values may hold " = " themselves.
_CONFIG_LINE = re.compile(r"^(?P<key>[A-Za-z][\w/-]*)\s*=\s?(?P<value>.*)$")
UNSET = frozenset({"", "(null)", "none", "n/a"})


def show_config_argv() -> list[str]:
    return ["scontrol", "show", "config"]


def parse_config(text: str) -> dict[str, str]:
    """``scontrol show config`` as a dict; the first value of a key wins (plugin sections
    later in the output repeat some keys)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _CONFIG_LINE.match(line.strip())
        if match and match["key"] not in found:
            found[match["key"]] = match["value"].strip()
    return found


def show_config() -> dict[str, str]:
    """The running controller's configuration (one ``scontrol show config``)."""
    return parse_config(_exec.run_slurm(show_config_argv()).stdout)


def reboot_program(config: Mapping[str, str]) -> str | None:
    """``RebootProgram`` when set, else None (Slurm prints ``(null)``)."""
    value = config.get("RebootProgram", "").strip().strip('"')
    return None if value.lower() in UNSET else value


def reboot_argv(nodelist: NodeNames, *, asap: bool = False, reason: str | None = None) -> list[str]:
    """``scontrol reboot [ASAP] [reason=R] NODES``: one RPC for every node.

    The node list is always given: ``scontrol reboot`` with none means ALL nodes.
    """
    names = hostlist_word(nodelist)
    if not names.strip():
        raise ValueError("reboot needs a node list (an empty one would mean ALL)")
    argv = ["scontrol", "reboot"]
    argv += ["ASAP"] if asap else []
    argv += [f"reason={reason}"] if reason else []
    return [*argv, names]


def reboot(nodelist: NodeNames, *, asap: bool = False, reason: str | None = None) -> None:
    """Ask slurmctld to reboot ``nodelist`` (idle nodes now, busy ones when their jobs end
    with ``asap``); raises the classified SlurmError on failure."""
    _exec.run_slurm(reboot_argv(nodelist, asap=asap, reason=reason))


def node_history_argv(node: str, since: datetime | str) -> list[str]:
    """sacct of every user's allocations that ran on ``node`` since ``since``."""
    argv = ["sacct", "--allocations", "--parsable2", "--noheader", f"--delimiter={DELIMITER}"]
    argv += [f"--format={field_list(SACCT_COLUMNS)}", "--allusers"]
    return [*argv, f"--nodelist={node}", f"--starttime={_when(since)}"]


def node_history(node: str, since: datetime | str) -> list[Job]:
    """Jobs accounting saw on ``node`` since ``since`` (one sacct)."""
    return parse_sacct(_exec.run_slurm(node_history_argv(node, since)).stdout)
