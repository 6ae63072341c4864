"""The option families, defined once for every command that takes them.

Why one module: each family used to be restated per command, and the copies
drifted (``undrain --fanout`` without ``--connect-timeout``, ``run -w/--nodes``
taking a list where Slurm's ``-N/--nodes`` is a count, ``--via`` choices typed
as literals). Here each family has one spelling, one help text and defaults
read from the library's constants; the ssh-transport family lives beside it in
:mod:`slurmkit.cli._ssh_options`.

Node selection follows Slurm: ``-w/--nodelist LIST`` and ``-x/--exclude LIST``
(both taking node groups, see :mod:`slurmkit.nodesel`), ``-N/--nodes K`` only as
a count. ``run`` and ``undrain`` keep a hidden ``--nodes LIST`` that warns.

This module is imported by ``slurmkit nodes`` at start-up: it imports only click
and :mod:`slurmkit.nodesel` (itself light; Slurm is imported when a group is used).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from slurmkit import stderr
from slurmkit.cli._types import SECONDS, Seconds
from slurmkit.errors import UsageError
from slurmkit.nodesel import KINDS_TEXT, Selection

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

GROUPS_HELP = f"Node groups resolved by Slurm may be mixed in: {KINDS_TEXT}."
DEPRECATED_NODES = (
    "--nodes LIST is deprecated: use -w/--nodelist LIST (-N/--nodes is a count in Slurm)"
)


def _stack(options: Sequence[Decorator]) -> Decorator:
    """Apply ``options`` so that help lists them in the given order."""
    return lambda command: functools.reduce(lambda f, o: o(f), reversed(options), command)


# ---------------------------------------------------------------- --json


def json_option(help: str = "Print JSON for scripts.") -> Decorator:
    return click.option("--json", "as_json", is_flag=True, help=help)


# ---------------------------------------------------------------- --dry-run / --yes


def dry_run_option(help: str = "Show what would be done; change nothing.") -> Decorator:
    return click.option("--dry-run", is_flag=True, help=help)


def yes_option() -> Decorator:
    return click.option("-y", "--yes", is_flag=True, help="Do not ask (needed without a terminal).")


def confirm_options(dry_run_help: str = "Show what would be done; change nothing.") -> Decorator:
    """``--dry-run`` and ``-y/--yes``: the two flags of the one confirm rule (:mod:`._confirm`)."""
    return _stack([dry_run_option(dry_run_help), yes_option()])


# ---------------------------------------------------------------- --via, --timeout


def via_option(choices: Sequence[str], help: str, default: str | None = None) -> Decorator:
    """``--via`` with the library's transport names; the default is the first choice."""
    return click.option(
        "--via",
        type=click.Choice(list(choices)),
        default=default or choices[0],
        show_default=True,
        help=help,
    )


def node_timeout_option(default: float, help: str) -> Decorator:
    """``--timeout S``: the limit for the work on each node (a positive, finite number)."""
    return click.option(
        "--timeout", type=SECONDS, default=default, show_default=True, metavar="S", help=help
    )


# ---------------------------------------------------------------- FILE


def file_option(*decls: str, help: str, metavar: str = "FILE", **extra: Any) -> Decorator:
    """A path naming one file: click refuses a folder with one usage line, before the
    command opens anything."""
    return click.option(
        *decls,
        type=click.Path(dir_okay=False, path_type=Path),
        metavar=metavar,
        help=help,
        **extra,
    )


# ---------------------------------------------------------------- a check job's --timeout, --dir


def check_timeout_option(default: float) -> Decorator:
    """``--timeout S`` of a check job (:mod:`slurmkit.checkjob`): its wait and its time limit,
    so finite (``nan`` and ``inf`` once reached the time limit's arithmetic: a traceback)."""
    return click.option(
        "--timeout",
        type=Seconds(at_least=1),
        default=default,
        show_default=True,
        metavar="S",
        help="Seconds to wait for the job to start and finish (also its time limit).",
    )


# checkjob.DEFAULT_WORK_DIR, spelled here so that help loads no Slurm code (a unit test
# holds the two equal).
CHECK_DIR = Path("slurmkit-checks")


def check_dir_option(
    name: str = "--dir",
    dest: str = "work_dir",
    help: str = "Folder for the job script and log; the nodes must see it (shared file system).",
) -> Decorator:
    """The folder a check job's script and log go to (:mod:`slurmkit.checkjob`)."""
    return click.option(
        name,
        dest,
        type=click.Path(path_type=Path, file_okay=False),
        default=CHECK_DIR,
        show_default=True,
        metavar="DIR",
        help=help,
    )


# ---------------------------------------------------------------- --lock, --lock-wait


def lock_options(default_wait: float, lock_help: str, wait_help: str) -> Decorator:
    """``--lock FILE`` and ``--lock-wait S`` of the commands that serialise their runs."""
    return _stack(
        [
            file_option("--lock", "lock_path", help=lock_help),
            click.option(
                "--lock-wait",
                type=click.FloatRange(min=0),
                default=default_wait,
                show_default=True,
                metavar="S",
                help=wait_help,
            ),
        ]
    )


def audit_log_options(log_help: str) -> Decorator:
    """``--log FILE`` and ``--no-log`` of the commands that change nodes (undrain, node)."""
    return _stack(
        [
            file_option(
                "--log",
                "log_path",
                help=f"{log_help} Default: $XDG_STATE_HOME/slurmkit/actions.log "
                "(~/.local/state/slurmkit/actions.log).",
            ),
            click.option(
                "--no-log",
                "keep_log",
                is_flag=True,
                flag_value=False,
                default=True,
                help="Keep no audit log: a run killed mid-change leaves no intent to settle.",
            ),
        ]
    )


# ---------------------------------------------------------------- node selection


def nodelist_option(help: str) -> Decorator:
    """``-w/--nodelist LIST``: nodes by name or group."""
    return click.option(
        "-w", "--nodelist", "nodelist", metavar="LIST", help=f"{help} {GROUPS_HELP}"
    )


def exclude_option(
    help: str = "Leave out these nodes (a hostlist; groups too; a group with no node "
    "removes nothing).",
) -> Decorator:
    """``-x/--exclude LIST``: nodes left out of the selection."""
    return click.option("-x", "--exclude", "exclude", metavar="LIST", help=help)


def node_count_option(help: str) -> Decorator:
    """``-N/--nodes K``: a number of nodes, as in sbatch/srun."""
    return click.option(
        "-N", "--nodes", "nodes", type=click.IntRange(min=1), metavar="K", help=help
    )


def _warn_deprecated(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        stderr.say(f"warning: {DEPRECATED_NODES}")
    return value


def deprecated_nodes_option() -> Decorator:
    """Hidden ``--nodes LIST`` of ``run`` and ``undrain``: old cron lines work, warned once."""
    return click.option(
        "--nodes",
        "nodes_alias",
        metavar="LIST",
        hidden=True,
        expose_value=True,
        callback=_warn_deprecated,
    )


def selection_options(help: str, *, deprecated_alias: bool = False) -> Decorator:
    """``-w/--nodelist`` and ``-x/--exclude`` (and the hidden ``--nodes`` alias), handed to the
    command as one ``selection: Selection``; nothing is resolved until the command asks."""
    options = [nodelist_option(help), exclude_option()]
    if deprecated_alias:
        options.append(deprecated_nodes_option())

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def with_selection(
            *args: Any, nodelist: str | None, exclude: str | None, **kwargs: Any
        ) -> Any:
            alias = kwargs.pop("nodes_alias", None)
            if alias is not None and nodelist is not None:
                raise UsageError("give the nodes once: -w/--nodelist (--nodes is its old name)")
            chosen = nodelist if nodelist is not None else alias
            selection = Selection(chosen, exclude, "--nodelist" if alias is None else "--nodes")
            return command(*args, selection=selection, **kwargs)

        return _stack(options)(with_selection)

    return decorate


def node_set(selection: Selection) -> str:
    """The folded hostlist a command acts on: groups resolved, exclusions removed, never empty."""
    return str(selection.resolve())
