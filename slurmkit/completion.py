"""What a shell should offer for a value being typed: nodes, groups, jobs, partitions, names.

Every function takes the text typed so far and returns the candidates that start with it.
Cluster values come from :mod:`slurmkit.slurm.quick` (one Slurm call each, about 1 s at
most, an empty answer when the controller is down); the rest is read from local files
(templates, lint rules, train and cron folders). Nothing here raises: a completion that
fails offers nothing, it never prints a traceback into the user's prompt.

The click side (which option gets which function) is ``slurmkit.cli.completion``.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable, Iterable
from pathlib import Path

from slurmkit.errors import SlurmkitError
from slurmkit.slurm import quick

# The node groups a node list takes (``@partition:gpu``), each with its values' lookup.
GROUP_KINDS: dict[str, Callable[[], list[str]]] = {
    "partition": lambda: quick.partitions(),
    "state": lambda: list(quick.STATES),
    "job": lambda: quick.jobs(_user()),
    "reservation": lambda: quick.reservations(),
    "feature": lambda: quick.features(),
}
ALL_GROUP = "@all"


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def _starting(values: Iterable[str], incomplete: str) -> list[str]:
    return [v for v in values if v.startswith(incomplete)]


def hostlist(incomplete: str) -> list[str]:
    """Node names and ``@kind:value`` groups for the last item of a comma-separated list.

    ``node-1,no`` offers ``node-1,node-2`` ...: the shell replaces the whole word, so
    each candidate carries the items already typed.
    """
    head, comma, item = incomplete.rpartition(",")
    prefix = head + comma
    if item.startswith("@"):
        kind, colon, partial = item[1:].partition(":")
        if colon and kind in GROUP_KINDS:
            values = GROUP_KINDS[kind]()
            return [f"{prefix}@{kind}:{v}" for v in _starting(values, partial)]
        kinds = [f"@{k}:" for k in GROUP_KINDS] + [ALL_GROUP]
        return [prefix + k for k in _starting(kinds, item)]
    names = _starting(quick.node_names(), item)
    return [prefix + name for name in names]


def job_ids(incomplete: str) -> list[str]:
    """Queued and running job ids: the user's own first, then everyone else's."""
    return _starting(quick.jobs(_user()), incomplete)


def partitions(incomplete: str) -> list[str]:
    return _starting(quick.partitions(), incomplete)


def templates(incomplete: str) -> list[str]:
    """Template names from the shipped and user template folders."""
    try:
        from slurmkit.templating.catalog import discover

        names = [t.name for t in discover()]
    except (SlurmkitError, OSError):
        return []
    return _starting(names, incomplete)


def lint_rules(incomplete: str) -> list[str]:
    try:
        from slurmkit.lint.rules import RULE_IDS
    except (SlurmkitError, ImportError):  # lint's parser missing: no rule ids to offer
        return []
    return _starting(sorted(RULE_IDS), incomplete)


def trains(incomplete: str, directory: str | Path | None = None) -> list[str]:
    """The trains under ``--dir`` (or the default train folder)."""
    try:
        from slurmkit.train.state import root_dir, train_names

        return _starting(train_names(root_dir(directory)), incomplete)
    except (SlurmkitError, OSError):
        return []


def cron_periods(incomplete: str, directory: str | Path | None = None) -> list[str]:
    """The periods set up in the cron dir (``--dir``, ``$SLURMKIT_CRON_DIR`` or ``$WORK/cron``)."""
    try:
        from slurmkit.cron.layout import CronDir, resolve_dir

        config = CronDir(resolve_dir(directory)).load()
    except (SlurmkitError, OSError, ValueError):
        return []
    return _starting([p.name for p in config.periods], incomplete)
