"""The ``slurmkit train`` commands that change a running train, each through the one
confirm flow (:func:`slurmkit.cli._train_common.gated`): hold, release, switch,
restart-run, extend, stop and settle. Options and printing only: what a change does,
and what must hold before it, is :mod:`slurmkit.train.control`'s and
:mod:`slurmkit.train.rules`'.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmkit import stderr
from slurmkit.cli._exclude_options import no_exclude_option, state_option
from slurmkit.cli._train_common import Change, acting, change_options, force_option, gated

if TYPE_CHECKING:
    from slurmkit.train.report import Report


@click.command("hold")
@change_options
def hold_command(change: Change) -> None:
    """Hold the pending runs (scontrol hold ARRAY); the running run goes on. Idempotent.

    Queue age: under priority/multifactor the hold sets the priority to 0. Whether
    `release` gives back the age depends on slurm.conf: with PriorityFlags=ACCRUE_ALWAYS,
    or without limits in AccountingStorageEnforce, AccrueTime is kept and the released
    runs keep the age from before the hold, ahead of jobs submitted meanwhile (with
    ACCRUE_ALWAYS the held time counts too); with limits enforced and no ACCRUE_ALWAYS
    (most clusters), Slurm clears AccrueTime at the hold and restarts it at the release:
    the age is lost, and this command says so on stderr (on a terminal, before it asks).
    Caveats: runs held back by %1 since run 1 started at once may never have had an
    AccrueTime (age 0: nothing to keep); under priority/basic the submit time is kept but
    the priority is recomputed as for a new job, behind jobs submitted during the hold.
    Asks on a terminal; needs --yes without one (else a dry run, exit 1).
    """
    from slurmkit.train.control import hold

    train, settled = acting(change)
    gated(_warned(lambda dry: hold(train, dry, settled)), change, "Hold these runs?")


def _warned(action: Callable[[bool], Report]) -> Callable[[bool], Report]:
    """``action``, saying once, after its first plan (so before a terminal user is asked),
    when this cluster restarts queue age at a release; never for a refused hold."""
    from slurmkit.train.queue_age import hold_warning_now

    said: list[bool] = []

    def run(dry_run: bool) -> Report:
        report = action(dry_run)
        if not said and report.would_change:
            said.append(True)
            warning = hold_warning_now()
            if warning:
                stderr.say(f"warning: {warning}")
        return report

    return run


@click.command("release")
@change_options
def release_command(change: Change) -> None:
    """Release held runs (scontrol release ARRAY). Idempotent.

    Asks on a terminal; needs --yes without one (else a dry run, exit 1).
    """
    from slurmkit.train.control import release

    train, settled = acting(change)
    gated(lambda dry: release(train, dry, settled), change, "Release these runs?")


@click.command("switch")
@click.argument("new_script", metavar="NEWSCRIPT", type=click.Path(dir_okay=False, path_type=Path))
@force_option
@change_options
def switch_command(change: Change, new_script: Path, force: bool) -> None:
    """Make the next run source NEWSCRIPT; refused if its #SBATCH resources differ.

    Nodes, time, partition, GRES... are fixed when the array is submitted: a script
    asking for others would silently run with the old ones. NEWSCRIPT must belong to
    you (or root) and be writable by nobody else, folders above it too: every later run
    executes it as you. NEWSCRIPT must parse as bash and have no `slurmkit lint` error
    (--force lets lint errors through). Asks on a terminal; needs --yes without one.
    """
    from slurmkit.train.control import SwitchRefused, switch

    train, settled = acting(change)

    def action(dry: bool) -> Report:
        try:
            return switch(train, new_script, dry, force, settled)
        except SwitchRefused as exc:
            for line in exc.diff:
                stderr.line(line)
            raise

    gated(action, change, "Switch the script?")


@click.command("restart-run")
@force_option
@change_options
def restart_run_command(change: Change, force: bool) -> None:
    """Cancel only the running run (scancel ARRAY_N): the next run starts with the script now.

    After editing the script (or `train switch`), so the change takes effect without
    waiting for the running run to end. Never `scancel ARRAY`: that would cancel the
    whole train. The script `current` points to must parse and lint without errors
    (--force lets lint errors through). No run running: one line, exit 1, nothing
    cancelled. Asks on a terminal; needs --yes without one (else a dry run, exit 1).
    """
    from slurmkit.train.control import restart_run

    train, settled = acting(change)
    gated(lambda dry: restart_run(train, dry, force, settled), change, "Cancel this run?")


@click.command("extend")
@click.option("--runs", type=click.IntRange(min=1), required=True, help="Runs to append.")
@no_exclude_option
@state_option
@change_options
def extend_command(change: Change, runs: int, no_exclude: bool, state: Path | None) -> None:
    """Append RUNS runs: a new array, same wrapper, starting after the current one ends.

    The new array's --exclude gets the exclude list's nodes (unless --no-exclude).
    Asks on a terminal; needs --yes without one (else a dry run, exit 1).
    """
    from slurmkit.cli._train_common import find, settle_open
    from slurmkit.faulty import excluded
    from slurmkit.train.control import extend
    from slurmkit.train.rules import open_extends

    exclude_list = None if no_exclude else (state or excluded.default_path())
    if exclude_list is not None:
        excluded.load(exclude_list)
    train = find(change.directory, change.name, change.lock_wait, settle=False)
    unanswered = open_extends(train)  # before settling: one settled now is a retry's answer
    settled = settle_open(train, busy_ok=False)
    gated(
        lambda dry: extend(train, runs, dry, exclude_list, settled=settled, unanswered=unanswered),
        change,
        "Append these runs?",
    )


@click.command("stop")
@click.option("--now", is_flag=True, help="Cancel the running run too.")
@change_options
def stop_command(change: Change, now: bool) -> None:
    """Cancel the pending runs (scancel --state=PENDING); with --now the running one too.

    Asks on a terminal; needs --yes without one (else a dry run, exit 1).
    """
    from slurmkit.train.control import stop
    from slurmkit.train.rules import not_stopped_yet

    train, settled = acting(change)
    gated(
        lambda dry: stop(train, now, dry, settled),
        change,
        "Cancel these runs?",
        after=lambda: not_stopped_yet(train),
    )


@click.command("settle")
@click.option(
    "--adopt",
    "adopt_id",
    metavar="ARRAY",
    help="This array is the train's: adopt it for the open start or extend it may be of.",
)
@click.option(
    "--none",
    "none_",
    is_flag=True,
    help="None of the arrays that may be the train's is: close the open start/extend.",
)
@change_options
def settle_command(change: Change, adopt_id: str | None, none_: bool) -> None:
    """Say by hand whether an array is the train's, when Slurm cannot prove it.

    A start or extend killed before it recorded its array leaves an intent; its array is
    adopted only when the token it was submitted with is read back (squeue's comment,
    accounting's comment or submit line). An array of the train's name whose token
    cannot be read back is shown as "unknown: array N may be this train's". Such an
    array has finished (Slurm has forgotten it): --adopt N records it as the train's,
    --none closes the intent as having queued nothing. Asks on a terminal; needs --yes
    without one (else a dry run, exit 1).
    """
    from slurmkit.errors import UsageError
    from slurmkit.train.control import settle

    if (adopt_id is None) == (not none_):
        raise UsageError("train settle: say --adopt ARRAY or --none")
    train, _ = acting(change)
    gated(lambda dry: settle(train, adopt_id, dry), change, "Record this answer?")


COMMANDS = (
    hold_command,
    release_command,
    switch_command,
    restart_run_command,
    extend_command,
    stop_command,
    settle_command,
)
