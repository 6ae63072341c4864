"""The faulty-node exclude-list options, defined once for every command that applies the list.

``faulty scan``/``faulty excluded`` write and edit the list; ``train start``/``extend`` and
``template render``/``submit`` add it to ``--exclude``. One definition keeps the path's
name, default and help the same everywhere a user meets it.
"""

from __future__ import annotations

import click

from slurmkit.cli._options import file_option

state_option = file_option(
    "--state",
    "state",
    metavar="PATH",
    help="The exclude list file (default: $XDG_STATE_HOME/slurmkit/excluded.json, "
    "else ~/.local/state/slurmkit/excluded.json).",
)
no_exclude_option = click.option(
    "--no-exclude",
    is_flag=True,
    help="Do not add the faulty-node exclude list (slurmkit faulty excluded) to --exclude.",
)
