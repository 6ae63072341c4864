"""``slurmkit watch``: watchdogs for cron jobs. Exit 0 healthy, 1 alerting, 2 usage error.

Thin over :mod:`slurmkit.watch`. Every watchdog prints one ``OK``/``ALERT`` line per
thing checked (append them to the training log with ``| tee -a``) and sends alerts
to the ``--notify`` targets, rate-limited: the first alert at once, reminders every
``--realert``, one message on recovery. A target that is down is reported on
stderr; the exit code still says what the check found.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import click

from slurmkit import stderr
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import file_option, json_option
from slurmkit.cli._output import print_json


def _common(func: Callable[..., Any]) -> Callable[..., Any]:
    """--notify, --realert, --state, --json, passed as one ``alerting``, checked first."""
    options: list[Callable[[Any], Any]] = [
        click.option(
            "--notify",
            "notify",
            multiple=True,
            metavar="TARGET",
            help="email:ADDR, webhook:URL (Slack-compatible; or webhook:env:VAR, "
            "webhook:file:PATH to keep the URL out of ps), or cmd:COMMAND; repeatable.",
        ),
        click.option(
            "--realert",
            default="6h",
            show_default=True,
            metavar="DURATION",
            help="Remind about a still-failing check this often (0s: every run).",
        ),
        file_option(
            "--state",
            "state_path",
            help="Rate-limit state (default $XDG_STATE_HOME/slurmkit/watch-state.json).",
        ),
        json_option(),
    ]

    @functools.wraps(func)
    def packed(**kwargs: Any) -> Any:
        alerting = _Alerting(**{field.name: kwargs.pop(field.name) for field in fields(_Alerting)})
        alerting.validate()
        return func(alerting=alerting, **kwargs)

    return functools.reduce(lambda f, option: option(f), reversed(options), packed)


@dataclass(frozen=True)
class _Alerting:
    """The options of _common, as one value: every watchdog checks and sends alike."""

    notify: tuple[str, ...]
    realert: str
    state_path: Path | None
    as_json: bool

    def validate(self) -> None:
        """Before anything is checked (``_common`` calls it first)."""
        _validate_early(self.notify, self.realert)

    def finish(self, findings: Sequence[Any]) -> None:
        _finish(findings, self.notify, self.realert, self.state_path, self.as_json)


def _stat_timeout_option(help_text: str) -> Callable[[Any], Any]:
    """The --timeout of the checks that stat a path: a hung mount must not hang cron."""
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0.1),
        default=30.0,
        show_default=True,
        metavar="S",
        help=help_text,
    )


def _finish(
    findings: Sequence[Any],
    notify: tuple[str, ...],
    realert: str,
    state_path: Path | None,
    as_json: bool,
) -> None:
    """Send what is due, print the findings, exit 0/1 from the findings alone."""
    from slurmkit.grammar.duration import parse_duration
    from slurmkit.notify import deliver, parse_target
    from slurmkit.watch.alerting import process
    from slurmkit.watch.ratelimit import default_state_path

    targets = [parse_target(t) for t in notify]
    realert_seconds = parse_duration(realert, "--realert", minimum=0)
    smtp = None
    if any(t.kind == "email" for t in targets):
        from slurmkit.notify.email import load_smtp_config

        smtp = load_smtp_config()
    report = process(
        findings,
        targets,
        state_path=state_path or default_state_path(),
        realert=realert_seconds,
        send=lambda notification, chosen: deliver(notification, chosen, smtp),
    )
    from slurmkit.printable import printable  # lines name paths and job names: shown, not obeyed

    if as_json:
        print_json(report.to_json())
    else:
        for finding in report.findings:
            click.echo(printable(finding.line))
    for sent in report.sent:
        for delivery in sent.deliveries:
            if delivery.ok:
                text = f"sent {sent.kind} for {sent.key} to {delivery.target}"
            else:
                text = f"notify {delivery.target} failed: {delivery.error}"
            stderr.say(f"{printable(text)}")
    if report.state_notice:
        stderr.say(f"{printable(report.state_notice)}")
    exit_with(report.exit_code)


def _validate_early(notify: tuple[str, ...], realert: str) -> None:
    """Bad targets, durations or SMTP settings are errors before anything is checked."""
    from slurmkit.grammar.duration import parse_duration
    from slurmkit.notify import parse_target

    targets = [parse_target(target) for target in notify]
    parse_duration(realert, "--realert", minimum=0)
    if any(t.kind == "email" for t in targets):
        from slurmkit.notify.email import load_smtp_config

        load_smtp_config()  # a login without TLS, or a password file others can read: exit 2


@click.group("watch")
def watch_group() -> None:
    """Watchdogs: job alive, cron chains on time, disk space and inodes, stale logs.

    Run them from a cron job (slurmkit cron) or any scheduler. Exit 0 healthy,
    1 alerting, 2 usage error.
    """


@watch_group.command("job")
@click.option("--name", "name", required=True, help="Job name to watch (exact).")
@click.option("--user", "user", help="Owner of the job (default: you).")
@click.option("--any-user", is_flag=True, help="Jobs of that name of any user.")
@_common
def job_command(
    name: str,
    user: str | None,
    any_user: bool,
    alerting: _Alerting,
) -> None:
    """Alert when no job NAME is running, or pending and able to run.

    Held jobs and jobs whose dependency can never be satisfied are not alive. The
    watchdog's own job (and its array) never counts, even with the same name. A
    failing squeue is an alert.
    """
    from slurmkit.errors import UsageError
    from slurmkit.slurm.submit import current_user
    from slurmkit.watch.job import check_job

    if "," in name or not name.strip():
        raise UsageError(f"--name {name!r}: one job name, without commas")
    if any_user and user:
        raise UsageError("--user and --any-user exclude each other")
    owner = None if any_user else (user or current_user())
    alerting.finish([check_job(name, owner)])


@watch_group.command("cron")
@click.argument("directory", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option("--period", "periods", multiple=True, metavar="PERIOD", help="Only this period.")
@click.option(
    "--grace",
    metavar="DURATION",
    help="How late a run may be (default: a tenth of the period, at least 5m).",
)
@_common
def cron_command(
    directory: Path | None,
    periods: tuple[str, ...],
    grace: str | None,
    alerting: _Alerting,
) -> None:
    """Alert when a scheduler chain of cron dir DIR is gone, stuck, late or failing.

    DIR defaults to $SLURMKIT_CRON_DIR, else $WORK/cron.
    """
    from slurmkit.cron import CronDir, resolve_dir
    from slurmkit.grammar.duration import parse_duration
    from slurmkit.watch.cron import check_cron

    grace_seconds = parse_duration(grace, "--grace", minimum=0) if grace else None
    findings = check_cron(CronDir(resolve_dir(directory)), periods, grace_seconds)
    alerting.finish(findings)


@watch_group.command("fs")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--min-free", metavar="SIZE", help="Alert below this free space (2T, 500G, 10%).")
@click.option(
    "--min-free-inodes", metavar="COUNT", help="Alert below this many free inodes (1M, 5%)."
)
@click.option(
    "--usable",
    default="100%",
    show_default=True,
    metavar="PCT",
    help="Share of the capacity that is really usable (80% on some distributed FS).",
)
@_stat_timeout_option("A path that does not answer in time (hung mount) is an alert.")
@_common
def fs_command(
    paths: tuple[str, ...],
    min_free: str | None,
    min_free_inodes: str | None,
    usable: str,
    timeout: float,
    alerting: _Alerting,
) -> None:
    """Alert when a file system at PATH runs low on space or inodes."""
    from slurmkit.errors import UsageError
    from slurmkit.watch.fs import check_fs, parse_count, parse_percent, parse_size

    if min_free is None and min_free_inodes is None:
        raise UsageError("give --min-free and/or --min-free-inodes")
    space = parse_size(min_free) if min_free else None
    inodes = parse_count(min_free_inodes) if min_free_inodes else None
    share = parse_percent(usable, "--usable")
    findings = [check_fs(p, space, inodes, share, timeout) for p in paths]
    alerting.finish(findings)


@watch_group.command("log")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option(
    "--stale",
    required=True,
    metavar="DURATION",
    help="Alert when FILE was last written longer ago than this (30m).",
)
@_stat_timeout_option("A file that cannot be stat'ed in time (hung mount) is an alert.")
@_common
def log_command(
    files: tuple[str, ...],
    stale: str,
    timeout: float,
    alerting: _Alerting,
) -> None:
    """Alert when a log FILE has not been written for --stale (a hung training)."""
    import time

    from slurmkit.grammar.duration import parse_duration
    from slurmkit.watch.log import check_log

    stale_seconds = parse_duration(stale, "--stale")
    now = time.time()
    findings = [check_log(f, stale_seconds, now, timeout) for f in files]
    alerting.finish(findings)
