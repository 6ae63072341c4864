"""``slurmkit node drain|resume|reboot|show``: one node's lifecycle, for admins.

Thin over :mod:`slurmkit.node`. The changing commands follow the one confirm rule
(:mod:`slurmkit.cli._confirm`): ``--dry-run`` shows the plan, a terminal is asked,
and without a terminal only ``--yes`` acts (otherwise a dry run, exit 1).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from slurmkit import stderr
from slurmkit.cli import _confirm
from slurmkit.cli._group import LazyGroup, exit_with
from slurmkit.cli._options import (
    audit_log_options,
    check_dir_option,
    confirm_options,
    exclude_option,
    json_option,
    lock_options,
    node_timeout_option,
    via_option,
)
from slurmkit.cli._output import per_node_option
from slurmkit.cli._ssh_options import ssh_transport_options
from slurmkit.errors import SlurmkitError
from slurmkit.node.change import ChangeOptions
from slurmkit.nodechange.leftovers import DEFAULT_CHECK_TIMEOUT, VIA_CHOICES
from slurmkit.nodesel import Selection

if TYPE_CHECKING:
    from slurmkit.hostlist import HostSet
    from slurmkit.node import NodeReport
    from slurmkit.remote import RemoteOptions


@click.group("node", cls=LazyGroup)
def node_group() -> None:
    """Node lifecycle: drain with a reason, resume after a leftover check, reboot, show."""


def _change_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--dry-run, --yes, --log, --lock, --lock-wait, --json, -v: the same on every change."""
    options = [
        confirm_options(),
        audit_log_options(
            "Audit log (JSON lines, shared with undrain): a record before the change, its "
            "outcome after; checked before anything is done, settled by the next run of any "
            "node command if a run was killed (slurmkit log show reads it)."
        ),
        lock_options(
            ChangeOptions.lock_wait,
            lock_help="Lock serialising node changes (default: root's in /run/slurmkit).",
            wait_help="How long to wait for another node change to finish.",
        ),
        json_option(),
        per_node_option,
    ]

    @functools.wraps(command)
    def packed(**kwargs: Any) -> Any:
        flags = {field.name: kwargs.pop(field.name) for field in fields(_ChangeFlags)}
        return command(change=_ChangeFlags(**flags), **kwargs)

    return functools.reduce(lambda f, option: option(f), reversed(options), packed)


@dataclass(frozen=True)
class _ChangeFlags:
    """The options of _change_options, as one value: every change reads them alike."""

    dry_run: bool
    yes: bool
    log_path: Path | None
    keep_log: bool
    lock_path: Path | None
    lock_wait: float
    as_json: bool

    def begin(self) -> tuple[_confirm.Gate, ChangeOptions]:
        """The confirm rule and the change's options; called after the node list is
        parsed, so bad input is reported before any dry-run notice."""
        rule = _confirm.gate(self.dry_run, self.yes, interactive=sys.stdin.isatty())
        return rule, _options(
            rule.dry_run, self.log_path, self.keep_log, self.lock_path, self.lock_wait
        )

    def run(
        self,
        question: str,
        act: Callable[[ChangeOptions, Callable[[NodeReport], bool]], NodeReport],
    ) -> None:
        """Begin, let ``act`` change the nodes (asking ``question``), print, exit by the report."""
        rule, options = self.begin()
        report = act(options, _asker(self.yes, question))
        _finish(report, self.as_json, rule)


def _targets(nodes: str, exclude: str | None) -> HostSet:
    """NODES with groups resolved and -x removed, before any lock, question or change: the
    one parse; the library takes the node set, never the text."""
    return Selection(nodes, exclude, what="NODES").resolve()


def _options(
    dry_run: bool, log: Path | None, keep_log: bool, lock: Path | None, wait: float
) -> ChangeOptions:
    from slurmkit.nodechange import auditlog

    chosen = auditlog.chosen(log, keep=keep_log, dry_run=dry_run)
    return ChangeOptions(
        dry_run=dry_run, log=chosen, lock=lock, lock_wait=wait, notify=_confirm.notify
    )


def _finish(report: NodeReport, as_json: bool, rule: _confirm.Gate) -> None:
    from slurmkit.cli._output import print_json, print_nodes_table
    from slurmkit.node import TABLE_HEADERS

    if as_json:
        print_json(report.to_json())
    else:
        print_nodes_table([r.as_row() for r in report.rows], TABLE_HEADERS)
        for note in report.notes:
            stderr.say(f"{note}")
        if report.declined:
            _confirm.notify("nothing changed")
    if report.error:
        raise SlurmkitError(report.error)
    exit_with(max(report.exit_code, rule.exit_code(report.would_change)))


def _asker(yes: bool, question: str) -> Callable[[NodeReport], bool]:
    def ask(report: NodeReport) -> bool:
        from slurmkit.cli._output import print_nodes_table
        from slurmkit.node import TABLE_HEADERS

        return _confirm.confirm(
            yes,
            lambda: print_nodes_table([r.as_row() for r in report.rows], TABLE_HEADERS),
            question,
        )

    return ask


@node_group.command("drain")
@click.argument("nodes")
@exclude_option()
@click.option("--reason", required=True, metavar="R", help="Why (required: Slurm shows it).")
@_change_options
def drain_command(
    nodes: str,
    exclude: str | None,
    reason: str,
    change: _ChangeFlags,
) -> None:
    """Drain NODES with a reason, in one scontrol update.

    A node already drained keeps its reason. Exit 0 all drained, 1 some not, 2 error.
    """
    from slurmkit.node.drain import check_reason, drain

    check_reason(reason)  # bad input before the dry-run notice
    hosts = _targets(nodes, exclude)
    change.run("Drain these nodes?", lambda options, ask: drain(hosts, reason, options, ask))


@node_group.command("resume")
@click.argument("nodes")
@exclude_option()
@click.option(
    "--no-check", is_flag=True, help="Skip the leftover check (the node is returned as it is)."
)
@via_option(VIA_CHOICES, "Transport for the leftover check.")
@node_timeout_option(DEFAULT_CHECK_TIMEOUT, "Limit for the check on each node.")
@ssh_transport_options("the leftover check")
@_change_options
def resume_command(
    nodes: str,
    exclude: str | None,
    no_check: bool,
    via: str,
    timeout: float,
    ssh: RemoteOptions,
    change: _ChangeFlags,
) -> None:
    """Return NODES (drained or down for any reason) to service, in one scontrol update.

    Unless --no-check, each node is first checked, as by undrain, for processes left
    by Slurm jobs; a node with leftovers is skipped with the process list, a node that
    cannot be checked is skipped too. Exit 0 all returned, 1 some skipped, 2 error.
    """
    from dataclasses import replace

    from slurmkit.node import ResumeOptions
    from slurmkit.node.resume import resume

    hosts = _targets(nodes, exclude)
    remote = replace(ssh, timeout=timeout, notify=_confirm.notify)
    checks = ResumeOptions(check=not no_check, via=via, remote=remote)
    change.run("Resume these nodes?", lambda options, ask: resume(hosts, options, checks, ask))


@node_group.command("reboot")
@click.argument("nodes")
@exclude_option()
@click.option("--asap", is_flag=True, help="Drain now, reboot as soon as the jobs end.")
@click.option("--reason", metavar="R", help="Reason shown while the reboot is pending.")
@click.option(
    "--timeout",
    type=float,
    default=600.0,
    show_default=True,
    metavar="S",
    help="How long to wait for the nodes to come back; later is reported (exit 1).",
)
@click.option(
    "--poll",
    type=float,
    default=2.0,
    show_default=True,
    metavar="S",
    help="Seconds between two reads of the nodes' state.",
)
@click.option(
    "--no-wait", is_flag=True, help="Issue the reboot and return; do not follow the nodes."
)
@click.option(
    "--validate",
    "validate_checks",
    metavar="CHECKS",
    help="Run faulty scan --checks CHECKS on the nodes once back; drain those that fail.",
)
@check_dir_option(
    "--check-dir", "check_dir", "With --validate: faulty scan's work folder (job script and log)."
)
@_change_options
def reboot_command(
    nodes: str,
    exclude: str | None,
    asap: bool,
    reason: str | None,
    timeout: float,
    poll: float,
    no_wait: bool,
    validate_checks: str | None,
    check_dir: Path,
    change: _ChangeFlags,
) -> None:
    """Reboot NODES with one scontrol reboot and follow them back to idle.

    Refused (exit 2, nothing issued) when RebootProgram is not set. Progress goes to
    stderr. Exit 0 all back (and valid), 1 some not back within --timeout or failing
    --validate (drained), 2 error.
    """
    from slurmkit.faulty import parse_checks
    from slurmkit.node import RebootOptions
    from slurmkit.node.reboot import reboot
    from slurmkit.node.validate import validator

    if no_wait and validate_checks:
        raise click.UsageError("--validate needs the nodes back: it cannot go with --no-wait")
    checks = parse_checks(validate_checks) if validate_checks else ()
    hosts = _targets(nodes, exclude)
    rebooting = RebootOptions(
        asap=asap,
        reason=reason,
        timeout=timeout,
        poll=poll,
        validate=checks,
        follow=not no_wait,
    )
    check = validator(checks, _confirm.notify, work_dir=check_dir) if checks else None
    question = "Reboot these nodes" + (f", then validate ({validate_checks})?" if checks else "?")
    change.run(question, lambda options, ask: reboot(hosts, options, rebooting, ask, check))


@node_group.command("show")
@click.argument("node")
@click.option(
    "--days",
    type=click.IntRange(min=0),
    default=7,
    show_default=True,
    metavar="N",
    help="History from accounting over the last N days.",
)
@json_option()
def show_command(node: str, days: int, as_json: bool) -> None:
    """One node: state, reason, who and when, jobs on it, recent history (sacct)."""
    from slurmkit.cli._output import print_json, print_table
    from slurmkit.node.show import show
    from slurmkit.printable import printable

    view = show(node, days)
    data = view.to_json()
    if as_json:
        print_json(data)
        return
    for key in ("node", "state", "reason", "reason_user", "reason_time", "boot_time"):
        click.echo(f"{key:12} {printable(str(data[key] if data[key] is not None else '-'))}")
    click.echo(f"{'partitions':12} {','.join(view.node.partitions) or '-'}")
    jobs = data["jobs"]
    if not isinstance(jobs, list):
        jobs = []
    click.echo(f"{'jobs':12} {len(jobs)}")
    headers = ["job", "name", "user", "state", "start", "end", "exit_code"]
    if view.jobs:
        print_table([[printable(str(j[h] or "")) for h in headers] for j in jobs], headers)
    click.echo(f"history since {data['history_since']}:")
    if view.history_error:
        stderr.say(f"{view.history_error}")
    elif view.history:
        history = data["history"]
        if not isinstance(history, list):
            history = []
        print_table([[printable(str(j[h] or "")) for h in headers] for j in history], headers)
    else:
        click.echo("  no job ran on it")
