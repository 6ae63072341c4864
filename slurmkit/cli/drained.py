"""``slurmkit nodes drained``: why nodes are out of service, folded per reason."""

from __future__ import annotations

import click

from slurmkit.cli._group import exit_with
from slurmkit.cli._options import json_option
from slurmkit.cli._output import per_node_option
from slurmkit.errors import EXIT_OK


@click.command("drained")
@click.option("--reason", metavar="REGEX", help="Only reasons matching this regex (full text).")
@json_option()
@per_node_option
def drained_command(reason: str | None, as_json: bool) -> None:
    """Drained, draining and down nodes with reason, who set it, when, and state.

    The sinfo -R -o "%50E %12U %19H %6t %N" view without truncated reasons: one
    line per reason, author, time and state, with the nodes folded and counted
    (-v: one line per node). Exit 0 whether or not nodes are listed; 2 on errors.
    """
    from slurmkit.drained import drained

    groups = drained(reason)
    if as_json:
        from slurmkit.cli._output import print_json

        print_json(groups)
    elif groups:
        from slurmkit.cli._output import print_nodes_table

        print_nodes_table(
            [[g.nodes, g.reason, g.user or "", g.time or "", g.state] for g in groups],
            ["node", "reason", "user", "time", "state"],
        )
    exit_with(EXIT_OK)
