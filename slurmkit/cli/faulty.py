"""``slurmkit faulty``: find faulty nodes (scan), drain them, and rank repeat offenders (history).

Thin over :mod:`slurmkit.faulty`. ``scan --drain`` changes node state, so it follows
undrain's safety rules: ``--dry-run`` changes nothing, a terminal run shows the plan
and asks, and a run without a terminal needs ``--yes`` (otherwise it only reports).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmkit.cli import _confirm
from slurmkit.cli._group import exit_with
from slurmkit.cli._output import print_json, print_table, progress

if TYPE_CHECKING:
    from slurmkit.faulty import DrainOutcome, ScanReport

_json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


@click.group("faulty")
def faulty_group() -> None:
    """Faulty nodes: scan them with checks in one job, drain them, rank past failures."""


@faulty_group.command("scan")
@click.option("-p", "--partition", metavar="P", help="Partition to scan (default: the default).")
@click.option("-N", "--nodes", type=int, metavar="K", help="Let Slurm pick K nodes to scan.")
@click.option("-w", "--nodelist", metavar="LIST", help="Scan these nodes (a hostlist).")
@click.option(
    "--checks",
    default="python,cuda,gpu-count,gpu-mem,nccl,disk",
    show_default=True,
    metavar="LIST",
    help="Comma-separated: python, cuda, gpu-count, gpu-mem, nccl, disk, dcgmi, cmd:COMMAND.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=900.0,
    show_default=True,
    metavar="S",
    help="Seconds to wait for the job to start and finish (also its time limit).",
)
@click.option("--drain", is_flag=True, help="Drain failing nodes (reason: slurmkit: CHECK failed).")
@click.option("--dry-run", is_flag=True, help="With --drain: show what would be drained.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask (needed without a terminal).")
@click.option(
    "--dir",
    "work_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("slurmkit-checks"),
    show_default=True,
    help="Folder for the job script and log; the nodes must see it (shared file system).",
)
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="A faulty-node-check template parameter (e.g. disk_min_gb=50, python=/opt/py/bin/python).",
)
@_json_option
def scan_command(
    partition: str | None,
    nodes: int | None,
    nodelist: str | None,
    checks: str,
    timeout: float,
    drain: bool,
    dry_run: bool,
    yes: bool,
    work_dir: Path,
    assignments: tuple[str, ...],
    as_json: bool,
) -> None:
    """Run checks on every node in one job (one task per node) and report each node.

    \b
    Per node: pass, FAIL (with the error), skipped (a GPU check where no GPU driver
    is: never "pass"), unknown (no result: the node died or the scan timed out), or
    unavailable (drained/down: not scanned). Prints --exclude=<failing and unknown
    nodes> for sbatch. With --drain, failing nodes are drained in one scontrol call
    per reason; nodes already drained or down keep their reason.

    Exit 0 every node passed every check, 1 some node did not, 2 error.
    """
    from slurmkit.faulty import ScanOptions, parse_checks, scan
    from slurmkit.faulty import drain as drainer
    from slurmkit.templating.values import parse_assignments

    options = ScanOptions(
        checks=parse_checks(checks),
        partition=partition,
        nodes=nodes,
        nodelist=nodelist,
        timeout=timeout,
        work_dir=work_dir,
        sets=parse_assignments(assignments),
    )
    if drain:  # before the scan: a run without a terminal says so up front
        dry_run = _confirm.unattended_dry_run(dry_run, yes, interactive=sys.stdin.isatty())
    report = scan(options, progress)
    if report.ignored:
        _warn_ignored(report)
    if drain:
        outcome = drainer.plan(report, dry_run)
        report.drain = drainer.execute(outcome, lambda o: _ask(o, yes))
    if as_json:
        print_json(report.to_json())
    else:
        _print_scan(report)
    exit_with(report.exit_code)


def _warn_ignored(report: ScanReport) -> None:
    """Result lines for nodes the job never ran on: shown, never counted or drained."""
    from slurmkit.printable import printable

    names = printable(",".join(report.ignored))
    where = f"job {report.job_id}'s allocation ({report.allocation or 'unknown'})"
    click.echo(f"slurmkit: warning: ignoring result lines for {names}: not in {where}", err=True)


def _ask(outcome: DrainOutcome, yes: bool) -> bool:
    return _confirm.confirm(yes, lambda: _print_drain_plan(outcome), "Drain these nodes?")


def _print_drain_plan(outcome: DrainOutcome) -> None:
    for reason, names in outcome.groups.items():
        click.echo(f"drain {','.join(names)}: reason {reason!r}", err=True)


def _print_scan(report: ScanReport) -> None:
    from slurmkit.printable import printable

    rows = [[printable(str(cell)) for cell in row] for row in report.rows()]
    print_table(rows, [printable(h) for h in report.headers()])
    state = f"job {report.job_id} {report.job_state}" + (
        " (cancelled at the timeout)" if report.timed_out else ""
    )
    click.echo(f"slurmkit: {state}; log {report.log}", err=True)
    if report.drain is not None:
        _print_drain(report.drain)
    if report.exclude:
        click.echo(f"--exclude={report.exclude}")
    else:
        click.echo("slurmkit: no failing or unknown node: nothing to exclude", err=True)


def _print_drain(outcome: DrainOutcome) -> None:
    from slurmkit.hostlist import fold

    for name, why in outcome.left_alone:
        click.echo(f"slurmkit: not draining {name}: {why}", err=True)
    if not outcome.groups:
        click.echo("slurmkit: no failing node to drain", err=True)
        return
    for reason, names in outcome.groups.items():
        if outcome.done:
            states = ", ".join(f"{n} {outcome.states.get(n, '?')}" for n in names)
            click.echo(f"slurmkit: drained {fold(names)} ({reason}): {states}", err=True)
        elif outcome.declined:
            click.echo(f"slurmkit: not drained (declined): {fold(names)}", err=True)
        else:
            click.echo(f"slurmkit: dry run: would drain {fold(names)} ({reason})", err=True)


@faulty_group.command("history")
@click.option(
    "--since",
    "since_text",
    default="7d",
    show_default=True,
    metavar="WHEN",
    help="How far back: 7d, 12h, 2w, or a date (2026-11-01).",
)
@click.option(
    "--top",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    metavar="N",
    help="Show the N worst nodes (0: all).",
)
@_json_option
def history_command(since_text: str, top: int, as_json: bool) -> None:
    """Rank nodes by the FAILED and NODE_FAIL jobs they ran (one sacct call).

    A failed job counts for every node it ran on; NODE_FAIL (the node itself failed)
    ranks first, then the share of failures among the node's jobs.
    """
    from slurmkit.faulty import history as hist

    report = hist.history(hist.since(since_text), top or None)
    if as_json:
        print_json(report.to_json())
        return
    click.echo(
        f"slurmkit: {report.jobs} job(s) since {report.start.isoformat(timespec='minutes')}",
        err=True,
    )
    if not report.nodes:
        click.echo("slurmkit: no node ran a FAILED or NODE_FAIL job", err=True)
        return
    print_table(
        [
            [
                n.node,
                n.node_fail,
                n.failed,
                n.jobs,
                f"{n.rate:.0%}",
                n.last_failure.isoformat(timespec="minutes") if n.last_failure else "",
                " ".join(n.failed_jobs[-3:]),
            ]
            for n in report.nodes
        ],
        ["NODE", "NODE_FAIL", "FAILED", "JOBS", "FAILED%", "LAST FAILURE", "LAST FAILED JOBS"],
    )
