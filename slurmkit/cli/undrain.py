"""``slurmkit undrain``: return nodes drained by "Kill task failed" to service, safely.

Thin over :mod:`slurmkit.undrain`. Interactive runs show the plan and ask; a
run without a terminal on stdin needs ``--yes`` (cron) or only reports what
it would do.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmkit.cli import _confirm
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import (
    audit_log_options,
    confirm_options,
    json_option,
    lock_options,
    node_timeout_option,
    selection_options,
    via_option,
)
from slurmkit.cli._output import per_node_option
from slurmkit.cli._ssh_options import ssh_transport_options
from slurmkit.errors import SlurmkitError
from slurmkit.nodechange.leftovers import DEFAULT_CHECK_TIMEOUT, VIA_CHOICES
from slurmkit.nodesel import Selection
from slurmkit.remote.base import RemoteOptions
from slurmkit.undrain.flow import UndrainOptions
from slurmkit.undrain.select import DEFAULT_REASON

if TYPE_CHECKING:
    from slurmkit.undrain import Plan, UndrainReport


@click.command("undrain")
@click.option(
    "--reason",
    default=DEFAULT_REASON,
    show_default=True,
    metavar="REGEX",
    help="Select drained nodes whose full reason text matches this regex.",
)
@selection_options(
    "Only consider these nodes; selection is still by reason.", deprecated_alias=True
)
@click.option(
    "--kill", is_flag=True, help="End leftovers (TERM, then KILL after --grace) and check again."
)
@click.option(
    "--grace",
    type=click.IntRange(min=0),
    default=30,
    show_default=True,
    metavar="S",
    help="Seconds between TERM and KILL.",
)
@click.option(
    "--uid-min",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    metavar="UID",
    help="Below this UID (system users), a process named a job's only by SLURM_JOB_ID "
    "in its environment is reported but never signalled.",
)
@confirm_options(dry_run_help="Check and report; change nothing.")
@audit_log_options(
    "Audit log, checked before anything is done: a line before each action and its "
    "outcome after (appended, fsynced); the next run settles what a killed one left open."
)
@lock_options(
    UndrainOptions.lock_wait,
    lock_help="Lock file serialising runs (default: root's in /run/slurmkit, else private).",
    wait_help="How long to wait for another run to finish.",
)
@via_option(VIA_CHOICES, "Transport for the checks on the nodes.")
@node_timeout_option(DEFAULT_CHECK_TIMEOUT, "Limit for the check on each node.")
@ssh_transport_options("the checks")
@json_option()
@per_node_option
def undrain_command(
    reason: str,
    selection: Selection,
    kill: bool,
    grace: int,
    uid_min: int,
    dry_run: bool,
    yes: bool,
    log_path: Path | None,
    keep_log: bool,
    lock_path: Path | None,
    lock_wait: float,
    via: str,
    timeout: float,
    ssh: RemoteOptions,
    as_json: bool,
) -> None:
    """Return drained nodes to service when no job left anything behind on them.

    \b
    1. select nodes drained with a reason matching --reason (never by name);
       nodes with jobs, DOWN or NOT_RESPONDING nodes are left alone;
    2. check each node in parallel (as root) for processes of Slurm jobs: a
       job_<id> cgroup, slurmstepd or its descendants, SLURM_JOB_ID in the
       environment; GPU processes (nvidia-smi) count only when they are a
       job's. Other processes (an admin's ssh shell, tmux, daemons) are never
       leftovers. A node that cannot be checked is unknown and skipped;
    3. with --kill, end the leftovers and check again; otherwise skip the node;
    4. read the nodes again (a node drained meanwhile for another reason is
       left alone), return the clean ones with one scontrol update
       state=undrain, read back;
    5. print node, old state and reason, what was found, action, new state.

    Exit 0 every selected node returned, 1 some skipped, 2 error.
    """
    from dataclasses import replace

    from slurmkit.undrain import undrain

    if selection.include is None and selection.exclude is not None:
        selection = replace(selection, include="@all")  # -x alone: every node but those
    options = UndrainOptions(
        reason=reason,
        nodes=None if selection.include is None else selection.resolve(),  # the one parse
        kill=kill,
        grace=grace,
        uid_min=uid_min,
        dry_run=dry_run,
        via=via,
        remote=replace(ssh, timeout=timeout, notify=_confirm.notify),
        log=log_path,
        lock=lock_path,
        lock_wait=lock_wait,
        notify=_confirm.notify,
    )  # validates every input before the dry-run notice or anything else
    rule = _confirm.gate(dry_run, yes, interactive=sys.stdin.isatty())
    dry_run = rule.dry_run
    from slurmkit.nodechange import auditlog

    log = auditlog.chosen(log_path, keep=keep_log, dry_run=dry_run)
    options = replace(options, dry_run=dry_run, log=log)
    report = undrain(options, confirm=lambda plan: _ask(plan, yes))
    if as_json:
        from slurmkit.cli._output import print_json

        print_json(report.to_json())
    else:
        _print(report)
    if report.error:
        raise SlurmkitError(report.error)
    # The one confirm rule: a dry run forced by the missing terminal skipped what it found.
    exit_with(max(report.exit_code, rule.exit_code(bool(report.outcomes))))


def _print(report: UndrainReport) -> None:
    from slurmkit.cli._output import print_nodes_table
    from slurmkit.undrain import TABLE_HEADERS

    if not report.outcomes:
        _confirm.notify("no drained node matches the reason: nothing to do")
        return
    print_nodes_table([o.as_row() for o in report.outcomes], TABLE_HEADERS)


def _ask(plan: Plan, yes: bool) -> bool:
    """Show the plan (grouped, or per node with -v) and ask, unless --yes."""
    from slurmkit.cli._output import print_nodes_table
    from slurmkit.undrain import TABLE_HEADERS

    return _confirm.confirm(
        yes, lambda: print_nodes_table([o.as_row() for o in plan.outcomes], TABLE_HEADERS)
    )
