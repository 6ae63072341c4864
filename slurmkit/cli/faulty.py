"""``slurmkit faulty``: find faulty nodes (scan), drain them, and rank repeat offenders (history).

Thin over :mod:`slurmkit.faulty`. ``scan --drain`` changes node state, so it follows
undrain's safety rules: ``--dry-run`` changes nothing, a terminal run shows the plan
and asks, and a run without a terminal needs ``--yes`` (otherwise it only reports).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from slurmkit import stderr
from slurmkit.cli import _confirm
from slurmkit.cli._exclude_options import state_option
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import (
    check_dir_option,
    check_timeout_option,
    confirm_options,
    json_option,
    node_count_option,
    selection_options,
)
from slurmkit.cli._output import (
    per_node_option,
    print_json,
    print_nodes_table,
    print_table,
    progress,
)

if TYPE_CHECKING:
    from slurmkit.faulty import DrainOutcome, ScanReport
    from slurmkit.faulty.excluded import ExcludedNode
    from slurmkit.gpu import Verdict
    from slurmkit.hostlist import HostSet
    from slurmkit.nodesel import Selection

_json_option = json_option()


@click.group("faulty")
def faulty_group() -> None:
    """Faulty nodes: scan them with checks in one job, drain them, rank past failures."""


@faulty_group.command("scan")
@click.option("-p", "--partition", metavar="P", help="Partition to scan (default: the default).")
@node_count_option("Let Slurm pick K nodes to scan.")
@selection_options("Scan these nodes (a hostlist).")
@click.option(
    "--checks",
    default="python,cuda,gpu-count,gpu-mem,nccl,disk",
    show_default=True,
    metavar="LIST",
    help="Comma-separated: python, cuda, gpu-count, gpu-mem, nccl, disk, dcgmi, gpu-health, "
    "xid, cmd:COMMAND; across nodes: net, nccl-multi.",
)
@check_timeout_option(900.0)
@click.option("--drain", is_flag=True, help="Drain failing nodes (reason: slurmkit: CHECK failed).")
@confirm_options(dry_run_help="With --drain: show what would be drained.")
@check_dir_option()
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="A faulty-node-check template parameter (e.g. disk_min_gb=50, python=/opt/py/bin/python).",
)
@click.option(
    "--xid-since",
    "xid_since",
    metavar="WHEN",
    help="xid: only Xid events since then: 7d, 12h, or a date (default: since boot).",
)
@click.option(
    "--net-rounds",
    metavar="N|all",
    help="net/nccl-multi: rounds of pairs, each node meeting a new partner per round "
    "[default: min(nodes-1, 3)].",
)
@click.option(
    "--net-port",
    type=click.IntRange(1024, 65535),
    default=29600,
    show_default=True,
    metavar="PORT",
    help="net/nccl-multi: port of a round's first pair (the next pairs: PORT+1, ...).",
)
@click.option(
    "--net-size",
    type=click.IntRange(1, 4096),
    default=16,
    show_default=True,
    metavar="MB",
    help="net/nccl-multi: MB each node of a pair sends per iteration.",
)
@click.option(
    "--net-slow-ratio",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.5,
    show_default=True,
    metavar="R",
    help="net/nccl-multi: a node whose median pair bandwidth is below R x the median of "
    "all pairs is slow.",
)
@click.option(
    "--net-timeout",
    type=click.FloatRange(min=1),
    metavar="S",
    help="net/nccl-multi: seconds each pair may take [default: --timeout shared among the "
    "rounds, at most 60].",
)
@state_option
@click.option("--no-record", is_flag=True, help="Do not add failing nodes to the exclude list.")
@click.option(
    "--expire",
    default="7d",
    show_default=True,
    metavar="DURATION",
    help="How long a recorded node stays in the exclude list.",
)
@_json_option
@per_node_option
def scan_command(
    partition: str | None,
    nodes: int | None,
    selection: Selection,
    checks: str,
    timeout: float,
    drain: bool,
    dry_run: bool,
    yes: bool,
    work_dir: Path,
    assignments: tuple[str, ...],
    xid_since: str | None,
    net_rounds: str | None,
    net_port: int,
    net_size: int,
    net_slow_ratio: float,
    net_timeout: float | None,
    state: Path | None,
    no_record: bool,
    expire: str,
    as_json: bool,
) -> None:
    """Run checks on every node in one job (one task per node) and report each node.

    \b
    Per node: pass, FAIL (with the error), slow (net/nccl-multi bandwidth far below
    the others'), skipped (a GPU check where no GPU driver is: never "pass"), unknown
    (no result: the node died or the scan timed out), or unavailable (drained/down:
    not scanned). Prints --exclude=<failing, slow and unknown nodes> for sbatch.
    With --drain, failing nodes are drained in one scontrol call per reason; nodes
    already drained or down keep their reason.

    \b
    gpu-health reads nvidia-smi -q (ECC, retired pages, remapped rows, clock
    slowdowns) and xid the kernel log's Xid events; each finding carries NVIDIA's
    action (reset, replace, investigate the application). Failing nodes are added
    to the exclude list (see `faulty excluded`) for --expire, unless --no-record
    or --dry-run; train start and template render/submit then keep them out.

    \b
    net runs a 2-node TCP all-reduce over pairs of nodes (python3 standard
    library), in rounds where each node meets a new partner; nccl-multi does the
    same with torch's NCCL where torch has CUDA (skipped elsewhere). A node whose
    pairs all fail while the others succeed is FAIL, naming its partners; one whose
    median bandwidth is below --net-slow-ratio x the median is slow (excluded and
    recorded, not drained). They need at least 2 nodes.

    Exit 0 every node passed every check, 1 some node did not, 2 error.
    """
    from slurmkit.faulty import ScanOptions, excluded, parse_checks, scan
    from slurmkit.faulty import drain as drainer
    from slurmkit.faulty.history import since
    from slurmkit.faulty.scan import NetOptions
    from slurmkit.templating.values import parse_assignments

    ttl = _duration(expire, "--expire")
    path = state or excluded.default_path()
    if not no_record:
        excluded.load(path)  # a corrupt list is refused before the scan, not after it
    options = ScanOptions(
        xid_since=since(xid_since) if xid_since else None,
        checks=parse_checks(checks),
        partition=partition,
        nodes=nodes,
        nodelist=_scan_nodes(selection, partition, nodes),
        timeout=timeout,
        work_dir=work_dir,
        sets=parse_assignments(assignments),
        net=NetOptions(
            port=net_port,
            size_mb=net_size,
            rounds=_rounds(net_rounds),
            slow_ratio=net_slow_ratio,
            pair_timeout=net_timeout,
        ),
    )
    if drain:  # before the scan: a run without a terminal says so up front
        dry_run = _confirm.unattended_dry_run(dry_run, yes, interactive=sys.stdin.isatty())
    report = scan(options, progress)
    if report.ignored:
        _warn_ignored(report)
    if drain:
        outcome = drainer.plan(report, dry_run)
        report.drain = drainer.execute(outcome, lambda o: _ask(o, yes))
    failing = excluded.failures(report) + report.slow_entries()
    if not no_record and failing:
        if dry_run:
            stderr.say(f"dry run: would add to the exclude list {path}:")
        else:
            entries = excluded.record(path, failing, ttl=ttl)
            report.recorded = [e.to_json() for e in entries]
            report.exclude_list = str(path)
            stderr.say(f"added {len(entries)} entry(ies) to {path}")
    if as_json:
        print_json(report.to_json())
    else:
        _print_scan(report)
    exit_with(report.exit_code)


def _scan_nodes(selection: Selection, partition: str | None, count: int | None) -> HostSet | None:
    """-w with groups resolved and -x applied; -x alone narrows -p (or the default partition)."""
    from dataclasses import replace

    from slurmkit.errors import UsageError

    if selection.include is None and selection.exclude is None:
        return None
    if count is not None:
        raise UsageError("-N/--nodes (a count) and -w/--nodelist, -x/--exclude exclude each other")
    if selection.include is None:
        selection = replace(selection, include=f"@partition:{partition or _default_partition()}")
    return selection.resolve()  # the one parse


def _default_partition() -> str:
    from slurmkit.errors import UsageError
    from slurmkit.slurm import query

    default = next((p.name for p in query.partitions() if p.default), None)
    if default is None:
        raise UsageError("-x/--exclude without -w or -p needs a default partition; give -p")
    return default


def _rounds(text: str | None) -> int | None:
    """``--net-rounds``: None (the default), 0 for ``all``, else a count of at least 1."""
    from slurmkit.errors import UsageError

    if text is None:
        return None
    if text.strip().lower() == "all":
        return 0
    if not text.strip().isdigit() or int(text) < 1:
        raise UsageError(f"--net-rounds {text!r}: expected a number of rounds (1 or more) or all")
    return int(text)


def _warn_ignored(report: ScanReport) -> None:
    """Result lines for nodes the job never ran on: shown, never counted or drained."""
    from slurmkit.printable import printable

    names = printable(",".join(report.ignored))
    where = f"job {report.job_id}'s allocation ({report.allocation or 'unknown'})"
    stderr.say(f"warning: ignoring result lines for {names}: not in {where}")


def _ask(outcome: DrainOutcome, yes: bool) -> bool:
    return _confirm.confirm(yes, lambda: _print_drain_plan(outcome), "Drain these nodes?")


def _print_drain_plan(outcome: DrainOutcome) -> None:
    for reason, names in outcome.groups.items():
        stderr.line(f"drain {','.join(names)}: reason {reason!r}")


def _print_scan(report: ScanReport) -> None:
    from slurmkit.printable import printable

    rows = [[printable(str(cell)) for cell in row] for row in report.rows()]
    print_nodes_table(rows, [printable(h) for h in report.headers()])
    state = f"job {report.job_id} {report.job_state}" + (
        " (cancelled at the timeout)" if report.timed_out else ""
    )
    stderr.say(f"{state}; log {report.log}")
    if report.drain is not None:
        _print_drain(report.drain, report.named("slow"))
    if report.exclude:
        click.echo(f"--exclude={report.exclude}")
    else:
        stderr.say("no failing or unknown node: nothing to exclude")


def _print_drain(outcome: DrainOutcome, slow: Sequence[str] = ()) -> None:
    from slurmkit.hostlist import fold

    if slow:
        stderr.say(f"not draining {fold(slow)}: slow, not broken (excluded)")
    for name, why in outcome.left_alone:
        stderr.say(f"not draining {name}: {why}")
    if not outcome.groups:
        stderr.say("no failing node to drain")
        return
    for reason, names in outcome.groups.items():
        if outcome.done:
            states = ", ".join(f"{n} {outcome.states.get(n, '?')}" for n in names)
            stderr.say(f"drained {fold(names)} ({reason}): {states}")
        elif outcome.declined:
            stderr.say(f"not drained (declined): {fold(names)}")
        else:
            stderr.say(f"dry run: would drain {fold(names)} ({reason})")


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
    stderr.say(f"{report.jobs} job(s) since {report.start.isoformat(timespec='minutes')}")
    if not report.nodes:
        stderr.say("no node ran a FAILED or NODE_FAIL job")
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


def _duration(text: str, option: str) -> timedelta:
    from slurmkit.grammar.duration import parse_duration

    return timedelta(seconds=parse_duration(text, option, minimum=1, maximum=3650 * 86400))


@faulty_group.command("excluded")
@state_option
@click.option("--clear", "clear", metavar="NODES", help="Remove these nodes (a hostlist).")
@click.option("--expired", is_flag=True, help="Remove the entries whose time is up.")
@click.option("--all", "show_all", is_flag=True, help="Also show expired entries.")
@confirm_options(dry_run_help="Show what would be removed; change nothing.")
@_json_option
def excluded_command(
    state: Path | None,
    clear: str | None,
    expired: bool,
    show_all: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Show or edit the exclude list: nodes a scan found failing, kept out until they expire.

    \b
    train start, template render and template submit add the nodes still listed to
    --exclude (unless --no-exclude). A corrupt list is an error naming the file
    (exit 2); slurmkit never resets it.

    Exit 0 done (or nothing to do), 1 a change was skipped (declined, or no terminal
    and no --yes), 2 error.
    """
    from slurmkit.faulty import excluded

    path = state or excluded.default_path()
    entries = excluded.load(path)
    if clear is None and not expired:
        _show_excluded(path, entries, show_all, as_json)
        return
    now = excluded.now_utc()
    from slurmkit.hostlist import HostSet

    nodes = HostSet(clear) if clear is not None else None  # the one parse
    going = excluded.remove(path, nodes, expired, now, dry_run=True)
    gate = _confirm.gate(dry_run, yes)
    if going and gate.approve(lambda: _show_removal(going, "remove"), "Remove these entries?"):
        going = excluded.remove(path, nodes, expired, now)
        done = True
    else:
        done = False
    if as_json:
        print_json(
            {"path": str(path), "removed" if done else "would_remove": [e.to_json() for e in going]}
        )
    elif not going:
        stderr.say("nothing to remove")
    else:
        _show_removal(going, "removed" if done else "dry run: would remove")
    if going and not done and not gate.dry_run:
        exit_with(_confirm.declined())
    exit_with(gate.exit_code(bool(going)) if not done else 0)


def _show_excluded(path: Path, entries: list[ExcludedNode], show_all: bool, as_json: bool) -> None:
    from slurmkit.faulty import excluded
    from slurmkit.hostlist import fold
    from slurmkit.printable import printable

    now = excluded.now_utc()
    shown = entries if show_all else excluded.active(entries, now)
    nodes = sorted({e.node for e in excluded.active(entries, now)})
    if as_json:
        print_json(
            {
                "path": str(path),
                "exclude": fold(nodes) if nodes else "",
                "entries": [{**e.to_json(), "expired": e.expired(now)} for e in shown],
            }
        )
        return
    if not shown:
        stderr.say(f"the exclude list {path} is empty")
        return
    print_table(
        [
            [
                e.node,
                e.check,
                e.time.isoformat(timespec="minutes"),
                e.expires.isoformat(timespec="minutes") + (" (expired)" if e.expired(now) else ""),
                printable(e.error),
            ]
            for e in shown
        ],
        ["NODE", "CHECK", "SINCE", "EXPIRES", "ERROR"],
    )
    if nodes:
        click.echo(f"--exclude={fold(nodes)}")


def _show_removal(entries: list[ExcludedNode], verb: str) -> None:
    from slurmkit.printable import printable

    for e in entries:
        stderr.say(f"{verb}: {e.node} ({e.check}: {printable(e.error)[:80]})")


def _from_file_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--from FILE``: a saved output to parse (``-`` for stdin), for each parsing command."""
    return click.option(
        "--from",
        "source",
        type=click.Path(allow_dash=True),  # read by _read_input: bounded, never blocking
        required=True,
        metavar="FILE",
        help=f"{what}; - for stdin.",
    )


@faulty_group.command("gpu-health")
@_from_file_option("nvidia-smi -q (text) or nvidia-smi -q -x (XML) output")
@_json_option
def gpu_health_command(source: str, as_json: bool) -> None:
    """Read one node's nvidia-smi -q output: ECC, retired pages, remapped rows, slowdowns.

    Each finding carries NVIDIA's action (reset, replace, check cooling). Output that
    does not parse is "unknown", never "pass"; no GPU is "skipped".

    Exit 0 pass, 1 fail, skipped or unknown, 2 error.
    """
    from slurmkit.gpu import smi

    _print_verdict(smi.parse(_read_input(source)), as_json)


@faulty_group.command("xid")
@_from_file_option("dmesg / journalctl -k output")
@click.option("--since", "since_text", metavar="WHEN", help="Only events since: 7d, 12h, a date.")
@_json_option
def xid_command(source: str, since_text: str | None, as_json: bool) -> None:
    """Read a kernel log's NVRM Xid events: meaning and NVIDIA's action per GPU and code.

    Xid 13/31/43 (the application's own fault) only warn; memory, bus and GSP errors fail.

    Exit 0 pass, 1 fail, 2 error.
    """
    from slurmkit.faulty.history import since
    from slurmkit.gpu import xid

    when = since(since_text) if since_text else None  # a bad --since before any read
    _print_verdict(xid.parse(_read_input(source), when), as_json)


MAX_INPUT = 64 * 2**20


def _read_input(source: str) -> str:
    """The saved output's text, at most MAX_INPUT bytes: a FIFO or /dev/zero must not hang us."""
    from slurmkit.errors import UsageError
    from slurmkit.files import read_text_bounded

    if source != "-":
        try:
            return read_text_bounded(
                source, what="--from", max_bytes=MAX_INPUT, follow_links=True, errors="replace"
            )
        except FileNotFoundError:
            raise UsageError(f"--from {source}: no such file") from None
    data = sys.stdin.buffer.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        raise UsageError(f"--from -: more than {MAX_INPUT} bytes on stdin")
    return data.decode("utf-8", errors="replace")


def _print_verdict(verdict: Verdict, as_json: bool) -> None:
    from slurmkit.printable import printable

    if as_json:
        print_json(verdict.to_json())
    else:
        click.echo(f"{verdict.check}: {verdict.status}: {printable(verdict.reason)}")
        for f in verdict.findings:
            kind = "FAIL" if f.fatal else "warn"
            click.echo(f"  {kind} {printable(f.line())}")
        if verdict.findings:
            click.echo(f"action: {verdict.action.name.lower()}: {verdict.action.text}")
    exit_with(0 if verdict.status == "pass" else 1)
