"""``slurmkit cron``: crontab emulation with self-perpetuating scheduler jobs.

Thin over :mod:`slurmkit.cron`. Every command but ``init`` finds the cron dir in
``--dir``, else ``$SLURMKIT_CRON_DIR``, else ``$WORK/cron``. ``stop`` and ``cleanup``
change or remove what exists and follow the one confirm rule (:mod:`slurmkit.cli._confirm`):
interactive runs show the plan and ask, runs without a terminal need ``--yes`` or only
report (exit 1 when that skipped something). ``start``, ``run-now`` and ``selfperpetuate``
only submit the new jobs their arguments name, like sbatch: they take --dry-run, not --yes
(``start`` never makes a second chain).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from slurmkit import stderr
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import dry_run_option, json_option, yes_option
from slurmkit.cli._output import print_json, print_table

if TYPE_CHECKING:
    from slurmkit.cron import CronConfig, CronDir

_json_option = json_option()
_dir_option = click.option(
    "-d",
    "--dir",
    "cron_dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="The cron dir (default $SLURMKIT_CRON_DIR, else $WORK/cron).",
)
_periods_argument = click.argument("periods", nargs=-1, metavar="[PERIOD]...")
_dry_run_option = dry_run_option("Show what would be done; do nothing.")
_yes_option = yes_option()


def _load(cron_dir: Path | None) -> tuple[CronDir, CronConfig]:
    from slurmkit.cron import CronDir, resolve_dir

    cron = CronDir(resolve_dir(cron_dir))
    return cron, cron.load()


def _unattended(dry_run: bool, yes: bool) -> tuple[bool, bool]:
    """(dry_run, forced): the one confirm rule; without a terminal and --yes, only report."""
    from slurmkit.cli._confirm import gate

    rule = gate(dry_run, yes)
    return rule.dry_run, rule.forced


@click.group("cron")
def cron_group() -> None:
    """Crontab emulation: scheduler jobs that re-submit themselves every period.

    \b
    DIR/cron.hourly/, DIR/cron.daily/, DIR/cron.<period>/  your *.slurm jobs
    DIR/scheduler/     scheduler scripts, state files, logs/
    Scheduler jobs are named cron-<period> (cron-hourly, cron-daily, cron-30m).
    Each run queues its next run first (never a second chain), then submits every
    *.slurm file of its folder. To stop running a job, move it out of its folder.
    """


@cron_group.command("init")
@click.argument("directory", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--every",
    "every",
    multiple=True,
    metavar="PERIOD",
    help="An extra period besides hourly and daily (20s, 30m, 12h, 2d); repeatable.",
)
@click.option("--partition", help="Partition of the scheduler jobs (a cheap CPU one).")
@click.option("--account", help="Account of the scheduler jobs.")
@click.option("--at", "at", metavar="HH:MM", help="Run the daily jobs at this time of day.")
@click.option(
    "--time", "time_limit", metavar="TIME", help="Time limit of each scheduler run [00:10:00]."
)
@click.option(
    "--name-prefix",
    metavar="NAME",
    help="Job names <NAME>-<period> instead of cron-<period> (a second cron dir).",
)
@_json_option
def init_command(
    directory: Path | None,
    every: tuple[str, ...],
    partition: str | None,
    account: str | None,
    at: str | None,
    time_limit: str | None,
    name_prefix: str | None,
    as_json: bool,
) -> None:
    """Create (or update) cron dir DIR and render its scheduler scripts.

    Running it again keeps the folders and their jobs, adds periods, re-renders the
    scripts and replaces the options given. Then: `slurmkit cron start`. A chain
    already running keeps the script it started with: stop and start it to apply
    a change.
    """
    from slurmkit.cron import CronDir, parse_at, parse_period, resolve_dir
    from slurmkit.cron.setup import init_cron_dir

    periods = [parse_period(text) for text in every]
    cron = CronDir(resolve_dir(directory))
    report = init_cron_dir(
        cron,
        extra_periods=periods,
        partition=partition,
        account=account,
        time=time_limit,
        at=parse_at(at) if at is not None else None,
        prefix=name_prefix,
    )
    if as_json:
        print_json({"dir": str(cron.root), **report.to_json()})
        return
    config = report.config
    rows = [
        (p.name, config.chain_name(p), str(cron.folder(p)), str(cron.script(config.chain_name(p))))
        for p in config.periods
    ]
    print_table(rows, ["PERIOD", "JOB NAME", "FOLDER", "SCHEDULER"])
    stderr.say(f"cron dir {cron.root} ready: start the schedulers with `slurmkit cron start`")


@cron_group.command("start")
@_periods_argument
@_dir_option
@_dry_run_option
@_json_option
def start_command(
    periods: tuple[str, ...], cron_dir: Path | None, dry_run: bool, as_json: bool
) -> None:
    """Start the scheduler chain of each PERIOD (default: all) that is not running.

    A chain with a pending or running job is left alone: starting twice never makes
    a second chain. The first run starts now; daily with --at starts at that time.
    Needs no --yes, even without a terminal: it only submits the chains you name and
    changes nothing that exists (so a crontab may run it to restart a lost chain).
    Each start is written to DIR/journal first; one that got no answer is settled
    here, by `cron stop` or by `cron status`.
    """
    import shlex

    from slurmkit.cron import journaling
    from slurmkit.cron.chain import start_chains

    cron, config = _load(cron_dir)
    chosen = config.select(periods)
    if dry_run:
        outcomes = start_chains(cron, config, chosen, dry_run=True)
    else:
        journal = journaling.journal_of(cron)
        with journaling.locked(cron, notify=stderr.say):
            journaling.reconcile(cron, stderr.say)
            journal.check_writable()  # no record, no submission
            outcomes = start_chains(cron, config, chosen, journal=journal, notify=stderr.say)
    if as_json:
        print_json([o.to_json() for o in outcomes])
        return
    for o in outcomes:
        if o.action == "submitted":
            when = f", first run at {o.begin}" if o.begin else ""
            click.echo(f"{o.chain}: started, job {o.job_id}{when}")
        elif o.action == "running":
            click.echo(
                f"{o.chain}: already running (job {', '.join(o.existing)}): nothing submitted"
            )
        else:
            click.echo(f"{o.chain}: would run: {shlex.join(o.argv)}")


@cron_group.command("stop")
@_periods_argument
@_dir_option
@_dry_run_option
@_yes_option
@_json_option
def stop_command(
    periods: tuple[str, ...], cron_dir: Path | None, dry_run: bool, yes: bool, as_json: bool
) -> None:
    """End the scheduler chain of each PERIOD (default: all): cancel its jobs by name and user.

    Waits until nothing of the chain is left in the queue (a run cancelled while
    queuing its successor is followed up). Jobs the schedulers already submitted are
    not touched. Exit 0 stopped, 1 dry run or something left, 2 error.
    """
    from slurmkit.cron import journaling
    from slurmkit.cron.chain import stop_chains, stop_plan

    cron, config = _load(cron_dir)
    dry_run, forced = _unattended(dry_run, yes)
    if dry_run:
        plan = stop_plan(config, config.select(periods))
        _show_stop(plan, as_json, dry_run)
        exit_with(1 if forced and any(o.jobs for o in plan) else 0)
    journal = journaling.journal_of(cron)
    with journaling.locked(cron, notify=stderr.say):
        journaling.reconcile(cron, stderr.say)
        plan = stop_plan(config, config.select(periods))
        if not any(o.jobs for o in plan):
            _show_stop(plan, as_json, False)
            exit_with(0)
        if not yes:
            print_table([(o.chain, ", ".join(o.jobs) or "-") for o in plan], ["JOB NAME", "JOBS"])
            if not click.confirm("Cancel these jobs?", default=False, err=True):
                stderr.say("nothing cancelled")
                exit_with(1)
        journal.check_writable()
        outcomes = stop_chains(plan, journal=journal, notify=stderr.say)
    _show_stop(outcomes, as_json, False)
    left = [j for o in outcomes for j in o.left]
    if left:
        stderr.say(f"still in the queue after cancelling: {', '.join(left)}")
    exit_with(1 if left else 0)


def _show_stop(outcomes: Sequence[Any], as_json: bool, dry: bool) -> None:
    if as_json:
        print_json({"dry_run": dry, "chains": [o.to_json() for o in outcomes]})
        return
    for o in outcomes:
        if not o.jobs:
            click.echo(f"{o.chain}: not running")
        elif dry:
            click.echo(f"{o.chain}: would cancel {', '.join(o.jobs)}")
        elif o.left:
            click.echo(
                f"{o.chain}: cancelled {', '.join(o.jobs)}; still queued: {', '.join(o.left)}"
            )
        else:
            click.echo(f"{o.chain}: stopped (cancelled {', '.join(o.jobs)})")


@cron_group.command("status")
@_periods_argument
@_dir_option
@click.option(
    "--grace",
    metavar="DURATION",
    help="How late a run may be (default: a tenth of the period, at least 5m).",
)
@_json_option
def status_command(
    periods: tuple[str, ...], cron_dir: Path | None, grace: str | None, as_json: bool
) -> None:
    """Each chain: its queued job and next start, its last run and what it launched.

    HEALTH: ok, gone (no job left: the chain ended), stuck (held or never-satisfied
    dependency), error (folder missing), late, failed (sbatch refused a job).
    Exit 0 all ok, 1 otherwise.
    """
    from slurmkit.cron import journaling
    from slurmkit.cron.status import chain_statuses
    from slurmkit.grammar.duration import parse_duration
    from slurmkit.locks import LockBusy

    grace_seconds = parse_duration(grace, "--grace", minimum=0) if grace else None
    cron, config = _load(cron_dir)
    try:  # settle what a killed or unanswered start/stop left open; never wait for a lock
        with journaling.locked(cron, wait=0):
            journaling.reconcile(cron, stderr.say)
    except LockBusy:
        stderr.say("another cron command is running on this dir: open intents not settled now")
    statuses = chain_statuses(cron, config, config.select(periods), grace=grace_seconds)
    if as_json:
        print_json({"dir": str(cron.root), "chains": [s.to_json() for s in statuses]})
    else:
        print_table([_status_row(s) for s in statuses], _STATUS_HEADERS)
        for s in statuses:
            if not s.healthy:
                stderr.say(f"{s.chain}: {s.health}: {s.message}")
    exit_with(0 if all(s.healthy for s in statuses) else 1)


_STATUS_HEADERS = ["PERIOD", "JOB NAME", "HEALTH", "QUEUED", "NEXT START", "LAST RUN", "LAUNCHED"]


def _status_row(status: Any) -> list[str]:
    queued, running, last = status.queued, status.running, status.last
    queued_text = "-"
    if running is not None:
        queued_text = f"{running.job_id} RUNNING"
    if queued is not None:
        reason = f" ({queued.reason})" if queued.reason else ""
        queued_text = (queued_text + ", " if running else "") + f"{queued.job_id}{reason}"
    next_start = (
        queued.start_time.strftime("%Y-%m-%d %H:%M:%S") if queued and queued.start_time else "-"
    )
    last_text = last.last_run.strftime("%Y-%m-%d %H:%M:%S") if last and last.last_run else "never"
    if last and last.job_id:
        last_text += f" (job {last.job_id})"
    launched = ", ".join(f"{x.file}={x.job_id}" for x in last.launched) if last else ""
    if last and last.failed_files:
        launched += (", " if launched else "") + "refused: " + ", ".join(last.failed_files)
    return [
        status.period,
        status.chain,
        status.health,
        queued_text,
        next_start,
        last_text,
        launched or "-",
    ]


@cron_group.command("run-now")
@_periods_argument
@_dir_option
@_dry_run_option
@_json_option
def run_now_command(
    periods: tuple[str, ...], cron_dir: Path | None, dry_run: bool, as_json: bool
) -> None:
    """Submit the jobs of each PERIOD's folder now (default: every folder); chains untouched.

    Prints the scheduler's log lines (SLURMKIT_CRON submitted job=<id> file=<name>).
    Exit 1 when a job could not be submitted. Only submits, so it needs no --yes.
    """
    from slurmkit.cron.runnow import run_now

    cron, config = _load(cron_dir)
    results = run_now(cron, config.select(periods), dry_run=dry_run)
    if as_json:
        print_json({"dry_run": dry_run, "jobs": [r.to_json() for r in results]})
    else:
        for r in results:
            if dry_run and not r.skipped and not r.error:
                click.echo(f"would submit {r.period} {r.file}")
            else:
                click.echo(r.line)
    exit_with(1 if any(r.error for r in results) else 0)


@cron_group.command("cleanup")
@_dir_option
@click.option(
    "--older-than",
    default="7d",
    show_default=True,
    metavar="DURATION",
    help="Delete *.out/*.err logs last written longer ago than this.",
)
@_dry_run_option
@_yes_option
@_json_option
def cleanup_command(
    cron_dir: Path | None, older_than: str, dry_run: bool, yes: bool, as_json: bool
) -> None:
    """Delete old job logs under the cron dir (the seed's find -mtime +7 -delete).

    Asks on a terminal; needs --yes without one. Exit 0 done (or nothing to delete),
    1 old logs left because there was no terminal and no --yes, or a file that could not
    be deleted.
    """
    import time

    from slurmkit.cron.cleanup import old_logs, remove
    from slurmkit.grammar.duration import parse_duration

    seconds = parse_duration(older_than, "--older-than", minimum=0)
    cron, _ = _load(cron_dir)
    dry_run, forced = _unattended(dry_run, yes)
    found = old_logs(cron.root, seconds, time.time())
    if found and not dry_run and not yes:
        for item in found:
            click.echo(str(item.path))
        if not click.confirm(f"Delete these {len(found)} file(s)?", default=False, err=True):
            stderr.say("nothing deleted")
            exit_with(1)
    if not dry_run:
        remove(found)
    failed = [r for r in found if r.error]
    if as_json:
        print_json(
            {
                "dry_run": dry_run,
                "files": [
                    {"path": str(r.path), "age_seconds": r.age_seconds, "error": r.error}
                    for r in found
                ],
            }
        )
    else:
        for r in found:
            verb = "would delete" if dry_run else ("failed" if r.error else "deleted")
            click.echo(f"{verb} {r.path}" + (f": {r.error}" if r.error else ""))
    exit_with(1 if (forced and found) or failed else 0)


@cron_group.command("scrontab")
@_periods_argument
@_dir_option
def scrontab_command(periods: tuple[str, ...], cron_dir: Path | None) -> None:
    """Print the scrontab lines equivalent to this cron dir (sites with scrontab enabled)."""
    from slurmkit.cron.scrontab import scrontab_lines

    cron, config = _load(cron_dir)
    for line in scrontab_lines(cron, config, config.select(periods)):
        click.echo(line)


@cron_group.command("selfperpetuate", context_settings={"ignore_unknown_options": True})
@click.argument("script", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option("--every", "every", required=True, metavar="PERIOD", help="Period (30m, 1h, 1d).")
@click.option("--name", metavar="NAME", help="Job name (default: the script's name).")
@click.option("--partition", help="Partition (a cheap CPU one).")
@click.option("--account", help="Account.")
@click.option("--time", "time_limit", metavar="TIME", help="Time limit of each run [00:10:00].")
@click.option("--at", "at", metavar="HH:MM", help="With --every 1d: run at this time of day.")
@click.option(
    "--log-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder of the logs <name>-<id>.out (default: the script's folder).",
)
@_dry_run_option
@_json_option
def selfperpetuate_command(
    script: Path,
    args: tuple[str, ...],
    every: str,
    name: str | None,
    partition: str | None,
    account: str | None,
    time_limit: str | None,
    at: str | None,
    log_dir: Path | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Run SCRIPT [ARGS] every PERIOD as a job that re-submits itself first.

    Nothing is submitted while a job of that name is pending or running. Stop it
    with `scancel --name=NAME`. Only submits, so it needs no --yes.
    """
    import shlex

    from slurmkit.cron import parse_at, parse_period
    from slurmkit.cron.selfperpetuate import selfperpetuate
    from slurmkit.errors import UsageError

    period = parse_period(every)
    at_value = parse_at(at) if at is not None else None
    if at_value and period.seconds != 86400:
        raise UsageError("--at needs --every 1d (daily)")
    outcome = selfperpetuate(
        script,
        period=period,
        args=args,
        name=name,
        partition=partition,
        account=account,
        time=time_limit,
        at=at_value,
        log_dir=log_dir,
        dry_run=dry_run,
    )
    if as_json:
        print_json(outcome.to_json())
    elif outcome.action == "submitted":
        click.echo(f"{outcome.name}: started, job {outcome.job_id} (every {period.spelled})")
    elif outcome.action == "running":
        click.echo(
            f"{outcome.name}: already running (job {', '.join(outcome.existing)}): "
            "nothing submitted"
        )
    else:
        click.echo(f"{outcome.name}: would run: {shlex.join(outcome.argv)}")
