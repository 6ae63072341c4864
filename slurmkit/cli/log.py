"""``slurmkit log show``: what slurmkit did to the nodes, from the one audit log.

Every node change (``node drain|resume|reboot``, ``undrain`` and its kills) is written to
the same JSON-lines log (:mod:`slurmkit.nodechange.auditlog`), old ``key=value`` lines of
``undrain --log`` included; this reads it for an admin: "what did slurmkit do to node-7 last
night", and whether something was left half done (an open intent, settled by the next run).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmkit.cli._group import exit_with
from slurmkit.cli._options import file_option, json_option
from slurmkit.errors import EXIT_FINDINGS, EXIT_OK

if TYPE_CHECKING:
    from slurmkit.nodechange.auditlog import Shown

_SHOWN = ("kind", "token", "time", "node", "action", "open")


@click.group("log")
def log_group() -> None:
    """The audit log of node changes (node drain/resume/reboot, undrain)."""


@log_group.command("show")
@file_option(
    "--log",
    "log_path",
    help="The log to read (default: $XDG_STATE_HOME/slurmkit/actions.log, the commands' own).",
)
@click.option("--node", "node_text", metavar="NODES", help="Only these nodes (a hostlist).")
@click.option(
    "--since", "since_text", metavar="AGE", help="Only records this recent: 1d, 12h, 30m."
)
@json_option()
def show_command(
    log_path: Path | None, node_text: str | None, since_text: str | None, as_json: bool
) -> None:
    """List what was done to nodes, oldest first; an intent still open is marked.

    Exit 0 records shown, 1 none matched (or no log yet), 2 error (unreadable log, bad option).
    """
    from slurmkit import stderr
    from slurmkit.grammar.duration import parse_duration
    from slurmkit.hostlist import targets
    from slurmkit.nodechange import auditlog

    nodes = list(targets(node_text, what="--node")) if node_text is not None else None
    since = None
    if since_text is not None:
        since = datetime.now().astimezone() - timedelta(
            seconds=parse_duration(since_text, "--since")
        )
    path = log_path or auditlog.default_path()
    shown = auditlog.history(path, nodes=nodes, since=since)
    if as_json:
        from slurmkit.cli._output import print_json

        print_json({"log": str(path), "records": [s.to_json() for s in shown]})
    else:
        _print(shown)
    if not shown:
        stderr.say(f"{path}: no record matched" if path.exists() else f"{path}: no log yet")
    exit_with(EXIT_OK if shown else EXIT_FINDINGS)


def _print(shown: list[Shown]) -> None:
    from slurmkit.cli._output import print_table
    from slurmkit.printable import printable

    rows = []
    for s in shown:
        r = s.record
        action = f"{r.action} (open)" if s.open else r.action
        details = " ".join(f"{k}={v}" for k, v in r.fields.items() if k not in _SHOWN)
        rows.append([printable(x) for x in (r.time, r.node, action, r.token or "-", details)])
    if rows:
        print_table(rows, ["time", "node", "action", "token", "details"])
