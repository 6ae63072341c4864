"""What every ``slurmkit train`` command shares: the options, finding and settling the
train, and the one confirm flow a change goes through.

A change is one library call, ``action(dry_run) -> Report``: a terminal user is shown
the dry run's report as the plan and asked, then the call is made again for real
(planned again under the train's lock: the preview is never what is acted on).
"""

from __future__ import annotations

import contextlib
import functools
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from slurmkit import stderr
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import dry_run_option, json_option, yes_option
from slurmkit.cli._output import print_json

if TYPE_CHECKING:
    from slurmkit.train.report import Report
    from slurmkit.train.state import TrainDir

dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Folder of the trains (default ./.slurmkit/trains: shared by whoever works here).",
)
json_flag = json_option()
dry_run_flag = dry_run_option("Print what would be done; change nothing.")
name_argument = click.argument("name", required=False)
force_option = click.option(
    "--force",
    is_flag=True,
    help="Go on although `slurmkit lint` finds errors in the script (a notice says so).",
)
lock_wait_option = click.option(
    "--lock-wait",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for another command changing the same train, then give up.",
)


@dataclass(frozen=True)
class Change:
    """The arguments every change takes: which train, how long to wait, how to confirm."""

    name: str | None
    directory: Path | None
    lock_wait: float
    dry_run: bool
    yes: bool
    as_json: bool


def change_options(command: Callable[..., None]) -> Callable[..., None]:
    """NAME, --dir, --lock-wait, --dry-run, --yes and --json, handed over as one :class:`Change`."""

    @functools.wraps(command)
    def run(**kw: Any) -> None:
        fields = ("name", "directory", "lock_wait", "dry_run", "yes", "as_json")
        change = Change(**{f: kw.pop(f) for f in fields})
        command(change, **kw)

    decorated: Callable[..., None] = run
    for option in (json_flag, yes_option(), dry_run_flag, lock_wait_option, dir_option):
        decorated = option(decorated)
    return name_argument(decorated)


def notify(message: str) -> None:
    stderr.say(message)


def find(
    directory: Path | None,
    name: str | None,
    lock_wait: float = 5.0,
    *,
    settle: bool = True,
    busy_ok: bool = False,
) -> TrainDir:
    """The train, after settling what killed or unanswered commands left open (one line each).

    The lock is needed to settle (a command holding it is alive). When another command
    holds it for longer than ``lock_wait``, a command that changes the train stops there
    (exit 2: it could not act either); with ``busy_ok`` (status, the kill switch) the
    open intents are left for the next command and this one goes on.
    """
    from slurmkit.train import find as find_train
    from slurmkit.train import root_dir
    from slurmkit.train.state import set_progress

    set_progress(notify)
    train = replace(find_train(root_dir(directory), name), lock_wait=lock_wait)
    if settle:
        settle_open(train, busy_ok)
    return train


def settle_open(train: TrainDir, busy_ok: bool) -> frozenset[str]:
    """Settle the open intents under the lock, one line each (see :func:`find`).

    Returns the tokens of the intents still open: asked about, and not settled (Slurm
    silent, or an array that cannot be proven). A change settles again under its own
    lock, skipping these, so a hung controller costs one timeout per intent, not two.
    """
    from slurmkit.errors import EnvironmentProblem
    from slurmkit.locks import LockBusy
    from slurmkit.train.reconcile import reconcile

    still: frozenset[str] = frozenset()
    try:
        with train.locked():
            lines = reconcile(train)
            with contextlib.suppress(EnvironmentProblem):
                still = frozenset(e.token for e in train.journal.open_intents())
    except LockBusy as exc:
        if not busy_ok:
            raise
        lines = [f"open changes not checked now: {exc}"]
    for line in lines:
        notify(line)
    return still


def acting(change: Change) -> tuple[TrainDir, frozenset[str]]:
    """The train a change acts on, settled once; the change plans again under its lock."""
    train = find(change.directory, change.name, change.lock_wait, settle=False)
    return train, settle_open(train, busy_ok=False)


def gated(
    action: Callable[[bool], Report],
    change: Change,
    question: str,
    after: Callable[[], list[str]] = list,
) -> None:
    """Run ``action`` under the one confirm rule; ``action(dry_run)`` plans or acts.

    A terminal user sees the plan (``action(True)``) and is asked first; without a
    terminal and without --yes only the plan is printed, and the exit is 1 when it
    skipped a change. ``after``: warnings to say once the report is printed.
    """
    from slurmkit.cli._confirm import declined, gate

    rule = gate(change.dry_run, change.yes)
    preview = action(True) if rule.ask else None
    if preview is not None and preview.would_change:

        def show_plan() -> None:
            for argv in preview.commands:
                stderr.line(f"will run: {shlex.join(argv)}")
            for line in preview.lines:
                stderr.line(f"train {preview.train}: {line.replace('would ', 'will ')}")

        if not rule.approve(show_plan, question):
            exit_with(declined())
    report = action(rule.dry_run)
    _print_report(report, change.as_json)
    for line in after():
        notify(f"warning: {line}")
    code = rule.exit_code(report.would_change)
    exit_with(max(code, 1) if report.unrecorded else code)  # done, but not recorded: 1


def _print_report(report: Report, as_json: bool) -> None:
    for notice in report.notices:
        notify(f"note: {notice}")
    for line in report.unrecorded:
        notify(f"not recorded: {line}")
    if as_json:
        print_json(report.to_json())
        return
    verb = "would run" if report.dry_run else "ran"
    for argv in report.commands:
        click.echo(f"{verb}: {shlex.join(argv)}")
    for line in report.lines:
        click.echo(f"train {report.train}: {line}")
