"""``slurmkit train``: long trainings as job-array trains (thin over :mod:`slurmkit.train`).

Every subcommand finds its train by NAME under --dir (default ./.slurmkit/trains);
NAME may be left out when only one train lives there. Commands that change a train
(hold, release, switch, extend, stop, kill-switch on|off) follow the one confirm rule of
:mod:`slurmkit.cli._confirm`: --dry-run prints what they would run, a terminal user is
shown the plan and asked, and without a terminal they act only with --yes (otherwise a
dry run that exits 1). ``start`` only submits the new array its arguments describe, like
sbatch: it needs no --yes.

Faults (issue 22): every command first settles what a killed or unanswered command left
open in the train's journal (:mod:`slurmkit.train.reconcile`), saying so in one line on
stderr; waits for the train's lock are bounded by --lock-wait. A change settles again and
plans under its own lock (issue 29); the preview shown before it is not what is acted on.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from slurmkit import stderr
from slurmkit.cli._exclude_options import no_exclude_option, state_option
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import dry_run_option, json_option, yes_option
from slurmkit.cli._output import print_json, print_table

if TYPE_CHECKING:
    from slurmkit.train.control import Report
    from slurmkit.train.state import TrainDir
    from slurmkit.train.status import TrainStatus

_dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Folder of the trains (default ./.slurmkit/trains: shared by whoever works here).",
)
_json_option = json_option()
_dry_run_option = dry_run_option("Print what would be done; change nothing.")
_yes_option = yes_option()
_name_argument = click.argument("name", required=False)
_force_option = click.option(
    "--force",
    is_flag=True,
    help="Go on although `slurmkit lint` finds errors in the script (a notice says so).",
)
_lock_wait_option = click.option(
    "--lock-wait",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for another command changing the same train, then give up.",
)


def _notify(message: str) -> None:
    stderr.say(message)


def _find(
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
    from slurmkit.train import find, root_dir
    from slurmkit.train.state import set_progress

    set_progress(_notify)
    train = replace(find(root_dir(directory), name), lock_wait=lock_wait)
    if settle:
        _settle(train, busy_ok)
    return train


def _settle(train: TrainDir, busy_ok: bool) -> frozenset[str]:
    """Settle the open intents under the lock, one line each (see :func:`_find`).

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
        _notify(line)
    return still


def _acting(
    directory: Path | None, name: str | None, lock_wait: float
) -> tuple[TrainDir, frozenset[str]]:
    """The train a change acts on, settled once; the change plans again under its lock."""
    train = _find(directory, name, lock_wait, settle=False)
    return train, _settle(train, busy_ok=False)


def _must_exist(train: TrainDir) -> None:
    """A folder left by a start that queued nothing (or is not settled yet) is no train."""
    from slurmkit.train.reconcile import must_exist

    must_exist(train)


def _gated(
    action: Callable[[bool], Report], dry_run: bool, yes: bool, as_json: bool, question: str
) -> None:
    """Run ``action`` under the one confirm rule; ``action(dry_run)`` plans or acts.

    A terminal user sees the plan (``action(True)``) and is asked first; without a
    terminal and without --yes only the plan is printed, and the exit is 1 when it
    skipped a change.
    """
    from slurmkit.cli._confirm import declined, gate

    rule = gate(dry_run, yes)
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
    _print_report(report, as_json)
    exit_with(_exit_code(rule.exit_code(report.would_change), report))


def _exit_code(code: int, report: Report) -> int:
    """1 when the change was made but could not be recorded: done, with a finding."""
    return max(code, 1) if report.unrecorded else code


def _print_report(report: Report, as_json: bool) -> None:
    for notice in report.notices:
        _notify(f"note: {notice}")
    for line in report.unrecorded:
        _notify(f"not recorded: {line}")
    if as_json:
        print_json(report.to_json())
        return
    verb = "would run" if report.dry_run else "ran"
    for argv in report.commands:
        click.echo(f"{verb}: {shlex.join(argv)}")
    for line in report.lines:
        click.echo(f"train {report.train}: {line}")


@click.group("train")
def train_group() -> None:
    """Job-array trains: one --array=1-N%1 array whose runs source an editable script.

    \b
    start SCRIPT        submit the train (SCRIPT's #SBATCH header, N runs, one at a time)
    status              running run, pending runs, held, next start, next script, failures
    hold / release      pause / resume the pending runs (the running one goes on)
    switch NEWSCRIPT    the next run sources NEWSCRIPT (same resources only)
    restart-run         cancel only the running run: the next one sources the script now
    extend --runs N     append N runs as a new array after the current one
    stop [--now]        cancel the pending runs (and the running one)
    settle              say whether an array Slurm cannot prove is the train's
    kill-switch on|off  stop a train anyone started: remaining runs exit at once
    save-switch on|off  ask the running training for a checkpoint (it goes on training)
    should-stop         exit 0 when the kill switch is on (for training loops)

    start, switch and restart-run lint the script first and refuse errors (--force).
    Changes (hold, release, switch, restart-run, extend, stop, settle, kill-switch,
    save-switch) ask on a terminal and need --yes without one (else a dry run, exit 1).
    A train folder teammates can write lets them use the kill switch; the script every
    run executes must still be yours (or root's) and writable by nobody else: the runs
    refuse anything else.
    """


@train_group.command("start")
@click.argument("script", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("extra", nargs=-1, metavar="[-- SBATCH OPTIONS...]")
@click.option(
    "--runs", type=click.IntRange(min=1), default=50, show_default=True, help="Runs in the train."
)
@click.option(
    "--name", help="Train name and Slurm job name (default: SCRIPT's job name or file name)."
)
@click.option("--after", metavar="JOBID", help="Start after this job ends (--dependency=afterany).")
@no_exclude_option
@state_option
@_dir_option
@_lock_wait_option
@_force_option
@_dry_run_option
@_json_option
def start_command(
    script: Path,
    extra: tuple[str, ...],
    runs: int,
    name: str | None,
    after: str | None,
    no_exclude: bool,
    state: Path | None,
    directory: Path | None,
    lock_wait: float,
    force: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Submit SCRIPT as a train: --array=1-RUNS%1 of a wrapper that sources it.

    The wrapper's #SBATCH header is SCRIPT's own (plus the options after --); it is
    fixed for the train's life, while SCRIPT itself may be edited between runs.
    SCRIPT must belong to you (or root) and be writable by nobody else, folders above
    it too: every run executes it as you. SCRIPT must parse as bash and have no
    `slurmkit lint` error (every run would repeat it); --force lets lint errors through.

    Needs no --yes, even without a terminal: like sbatch, it only submits the new
    array you describe and changes nothing that exists. Everything that changes a
    running train (hold, release, switch, extend, stop, kill-switch) needs --yes
    without a terminal.

    The nodes of the faulty-node exclude list (`slurmkit faulty excluded`) join the
    array's --exclude, and each run adds those listed since to the runs still pending;
    --no-exclude leaves the list out.

    Safe to retry: if an earlier start of the same name was killed or got no answer from
    sbatch, its array is looked up by its token and adopted, never submitted twice.
    """
    from slurmkit.faulty import excluded
    from slurmkit.train import root_dir
    from slurmkit.train.state import set_progress
    from slurmkit.train.submit import start

    set_progress(_notify)
    exclude_list = None if no_exclude else (state or excluded.default_path())
    if exclude_list is not None:
        excluded.load(exclude_list)  # a corrupt list: one line, exit 2, before anything

    started = start(
        script,
        root_dir(directory),
        runs=runs,
        name=name,
        after=after,
        extra=list(extra),
        dry_run=dry_run,
        exclude_list=exclude_list,
        lock_wait=lock_wait,
        force=force,
    )
    for notice in started.notices:
        _notify(f"note: {notice}")
    if started.dry_run:
        if as_json:
            print_json({"path": str(started.train.path), "dry_run": True, "argv": started.argv})
            return
        click.echo(f"would create: {started.train.path}")
        click.echo(f"would run: {shlex.join(started.argv)}  (the wrapper on stdin)")
        return
    array = started.state.arrays[0]
    if as_json:
        print_json(
            {"path": str(started.train.path), "adopted": started.adopted, **started.state.to_json()}
        )
        return
    waits = f", after job {array.after}" if array.after else ""
    click.echo(
        f"train {started.state.name}: array {array.job_id}, {array.runs} runs of "
        f"{started.state.script}{waits}"
    )
    click.echo(f"train {started.state.name}: wrapper {started.train.wrapper}")


@train_group.command("status")
@_name_argument
@_dir_option
@_lock_wait_option
@_json_option
def status_command(
    name: str | None, directory: Path | None, lock_wait: float, as_json: bool
) -> None:
    """Where the train stands: running run, pending runs, next start, next script, failures.

    It first settles what a killed or unanswered command left open (an array queued by
    an interrupted start or extend is adopted), saying so on stderr.
    """
    from slurmkit.train.status import gather

    train = _find(directory, name, lock_wait, busy_ok=True)
    _must_exist(train)
    status = gather(train)
    torn = train.torn_journal()  # issue 29: a torn line may have been an intent
    if torn:
        status.notices.append(torn)
    for notice in status.notices:
        _notify(f"note: {notice}")
    if as_json:
        print_json(status.to_json())
        return
    _print_status(status)


def _clock(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def _print_status(status: TrainStatus) -> None:
    arrays = ", ".join(
        f"{a['job_id']} ({a['runs']} runs{', after ' + a['after'] if a['after'] else ''})"
        for a in status.arrays
    )
    running = "-"
    if status.running:
        run = status.running
        running = f"{run.id} on {run.nodes or '?'} for {_clock(run.elapsed)}"
        running += f" (limit {_clock(run.time_limit)})" if run.time_limit else ""
    pending = str(status.pending)
    if status.pending:
        pending += " (held)" if status.held else f" ({status.pending_reason or 'waiting'})"
        if status.pending_priority is not None and not status.held:
            pending += f", priority {status.pending_priority}"
    start = status.next_start.isoformat() if status.next_start else ""
    next_start = f"{start} {status.next_start_note}".strip() if status.pending else "-"
    script = status.next_script or "missing"
    if status.next_script and not status.next_script_exists:
        script += " (MISSING: the next run will fail)"
    elif status.next_script_error:
        script += f" (DOES NOT PARSE: {status.next_script_error})"
    if status.next_script_trusted:
        script += f" (UNTRUSTED: runs will refuse it: {status.next_script_trusted})"
    if status.current_changed_by:
        who = status.current_changed_by
        name = who["user"] if who["user"] != f"uid {who['uid']}" else "?"
        script += f"; set by {name} (uid {who['uid']}) at {status.current_changed_at}"
    switch = status.kill_switch
    failed = status.failed
    finished = (
        f"{len(status.finished)}"
        if status.finished is not None
        else "unknown (accounting unavailable)"
    )
    if failed:
        shown = ", ".join(f"{r.id} {r.state} exit {r.exit_code}" for r in failed[:5])
        finished += f" ({len(failed)} failed: {shown}{', ...' if len(failed) > 5 else ''})"
    rows = [
        ("train", f"{status.name} ({status.path})"),
        ("state", status.state),
        ("arrays", arrays),
        ("running", running),
        ("pending", pending),
        ("next start", next_start),
        ("next script", script),
        ("kill switch", f"ON since {switch.since}" if switch.on else "off"),
        ("finished", finished),
    ]
    if status.never_ran:
        rows.append(("never ran", f"{status.never_ran} (cancelled or skipped before starting)"))
    if status.last_event:
        rows.append(("last change", status.last_event))
    width = max(len(key) for key, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")
    if status.finished:
        click.echo("")
        print_table(
            [
                (
                    r.id,
                    r.state,
                    "-" if r.exit_code is None else f"{r.exit_code}:{r.signal or 0}",
                    r.start.isoformat(timespec="seconds") if r.start else "-",
                    _clock(r.elapsed),
                    r.nodes or "-",
                )
                for r in status.finished
            ],
            headers=["RUN", "STATE", "EXIT", "START", "ELAPSED", "NODES"],
        )


@train_group.command("hold")
@_name_argument
@_dir_option
@_lock_wait_option
@_dry_run_option
@_yes_option
@_json_option
def hold_command(
    name: str | None,
    directory: Path | None,
    lock_wait: float,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Hold the pending runs (scontrol hold ARRAY); the running run goes on. Idempotent.

    Queue age: under priority/multifactor the hold sets the priority to 0 and leaves
    AccrueTime alone, so `release` gives back the age from before the hold (on 22.05 the
    held time counts too), ahead of jobs submitted meanwhile. Caveats: runs held back by
    %1 since run 1 started at once may never have had an AccrueTime (age 0: nothing to
    keep); under priority/basic the submit time is kept but the priority is recomputed as
    for a new job, behind jobs submitted during the hold. Asks on a terminal; needs --yes
    without one (else a dry run, exit 1).
    """
    from slurmkit.train.control import hold

    train, settled = _acting(directory, name, lock_wait)
    _gated(lambda dry: hold(train, dry, settled), dry_run, yes, as_json, "Hold these runs?")


@train_group.command("release")
@_name_argument
@_dir_option
@_lock_wait_option
@_dry_run_option
@_yes_option
@_json_option
def release_command(
    name: str | None,
    directory: Path | None,
    lock_wait: float,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Release held runs (scontrol release ARRAY). Idempotent.

    Asks on a terminal; needs --yes without one (else a dry run, exit 1).
    """
    from slurmkit.train.control import release

    train, settled = _acting(directory, name, lock_wait)
    _gated(lambda dry: release(train, dry, settled), dry_run, yes, as_json, "Release these runs?")


@train_group.command("switch")
@click.argument("new_script", metavar="NEWSCRIPT", type=click.Path(dir_okay=False, path_type=Path))
@_name_argument
@_dir_option
@_lock_wait_option
@_force_option
@_dry_run_option
@_yes_option
@_json_option
def switch_command(
    new_script: Path,
    name: str | None,
    directory: Path | None,
    lock_wait: float,
    force: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Make the next run source NEWSCRIPT; refused if its #SBATCH resources differ.

    Nodes, time, partition, GRES... are fixed when the array is submitted: a script
    asking for others would silently run with the old ones. NEWSCRIPT must belong to
    you (or root) and be writable by nobody else, folders above it too: every later run
    executes it as you. NEWSCRIPT must parse as bash and have no `slurmkit lint` error
    (--force lets lint errors through). Asks on a terminal; needs --yes without one.
    """
    from slurmkit.train.control import SwitchRefused, switch

    train, settled = _acting(directory, name, lock_wait)

    def action(dry: bool) -> Report:
        try:
            return switch(train, new_script, dry, force, settled)
        except SwitchRefused as exc:
            for line in exc.diff:
                stderr.line(line)
            raise

    _gated(action, dry_run, yes, as_json, "Switch the script?")


@train_group.command("restart-run")
@_name_argument
@_dir_option
@_lock_wait_option
@_force_option
@_dry_run_option
@_yes_option
@_json_option
def restart_run_command(
    name: str | None,
    directory: Path | None,
    lock_wait: float,
    force: bool,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Cancel only the running run (scancel ARRAY_N): the next run starts with the script now.

    After editing the script (or `train switch`), so the change takes effect without
    waiting for the running run to end. Never `scancel ARRAY`: that would cancel the
    whole train. The script `current` points to must parse and lint without errors
    (--force lets lint errors through). No run running: one line, exit 1, nothing
    cancelled. Asks on a terminal; needs --yes without one (else a dry run, exit 1).
    """
    from slurmkit.train.control import restart_run

    train, settled = _acting(directory, name, lock_wait)
    _gated(
        lambda dry: restart_run(train, dry, force, settled),
        dry_run,
        yes,
        as_json,
        "Cancel this run?",
    )


@train_group.command("extend")
@_name_argument
@click.option("--runs", type=click.IntRange(min=1), required=True, help="Runs to append.")
@no_exclude_option
@state_option
@_dir_option
@_lock_wait_option
@_dry_run_option
@_yes_option
@_json_option
def extend_command(
    name: str | None,
    runs: int,
    no_exclude: bool,
    state: Path | None,
    directory: Path | None,
    lock_wait: float,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Append RUNS runs: a new array, same wrapper, starting after the current one ends.

    The new array's --exclude gets the exclude list's nodes (unless --no-exclude).
    Asks on a terminal; needs --yes without one (else a dry run, exit 1).
    """
    from slurmkit.faulty import excluded
    from slurmkit.train.control import extend

    exclude_list = None if no_exclude else (state or excluded.default_path())
    if exclude_list is not None:
        excluded.load(exclude_list)
    train = _find(directory, name, lock_wait, settle=False)
    unanswered = {e.token for e in train.journal.open_intents() if e.action == "extend"}
    settled = _settle(train, busy_ok=False)
    _gated(
        lambda dry: extend(train, runs, dry, exclude_list, settled=settled, unanswered=unanswered),
        dry_run,
        yes,
        as_json,
        "Append these runs?",
    )


@train_group.command("stop")
@_name_argument
@click.option("--now", is_flag=True, help="Cancel the running run too.")
@_dir_option
@_lock_wait_option
@_dry_run_option
@_yes_option
@_json_option
def stop_command(
    name: str | None,
    now: bool,
    directory: Path | None,
    lock_wait: float,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Cancel the pending runs (scancel --state=PENDING); with --now the running one too.

    Asks on a terminal; needs --yes without one (else a dry run, exit 1).
    """
    from slurmkit.cli._confirm import declined, gate
    from slurmkit.train.control import plan_stop, stop

    train, settled = _acting(directory, name, lock_wait)
    rule = gate(dry_run, yes)
    if rule.ask:
        preview = plan_stop(train, now)  # shown, not acted on: stop plans again under the lock

        def show_plan() -> None:
            stderr.line(f"will run: {shlex.join(preview.argv)}")
            for line in preview.effects():
                stderr.line(f"train {preview.state.name}: {line}")

        if preview.live and not rule.approve(show_plan, "Cancel these runs?"):
            exit_with(declined())
    report = stop(train, now, rule.dry_run, settled)
    _print_report(report, as_json)
    for entry in train.journal.open_intents():
        if entry.action in ("start", "extend"):
            _notify(
                f"warning: the `train {entry.action}` of {entry.time} is not settled (whether it "
                f"queued an array is not known): `slurmkit train status {train.name}` says "
                "what is open; run `slurmkit train stop` again once it is settled"
            )
    exit_with(_exit_code(rule.exit_code(report.would_change), report))


@train_group.command("settle")
@_name_argument
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
@_dir_option
@_lock_wait_option
@_dry_run_option
@_yes_option
@_json_option
def settle_command(
    name: str | None,
    adopt_id: str | None,
    none_: bool,
    directory: Path | None,
    lock_wait: float,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
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
    from slurmkit.train.control import Report
    from slurmkit.train.reconcile import settle_by_hand

    if (adopt_id is None) == (not none_):
        raise UsageError("train settle: say --adopt ARRAY or --none")
    train, _ = _acting(directory, name, lock_wait)

    def action(dry: bool) -> Report:
        if dry:
            lines = settle_by_hand(train, adopt_id, dry_run=True)
        else:
            with train.locked():
                lines = settle_by_hand(train, adopt_id, dry_run=False)
        return Report(train.name, "settle", dry, lines=lines)

    _gated(action, dry_run, yes, as_json, "Record this answer?")


@train_group.command("kill-switch")
@click.argument("action", type=click.Choice(["on", "off", "status"]))
@_name_argument
@_dir_option
@_lock_wait_option
@_dry_run_option
@_yes_option
@_json_option
def kill_switch_command(
    action: str,
    name: str | None,
    directory: Path | None,
    lock_wait: float,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Turn the kill switch on or off, or show it: with it on, every remaining run exits at once.

    Anyone who can write the train folder can use it, even on a train they did not start
    (it can only stop runs; the script the runs execute must still be the owner's). On and
    off ask on a terminal and need --yes without one (else a dry run, exit 1).
    """
    from slurmkit.train import killswitch

    _flip_switch(
        _Switch("Kill switch", "kill-switch", killswitch.state, killswitch.turn_on,
                killswitch.turn_off,
                " (a running run stops only if its code checks $SLURMKIT_KILL_SWITCH)"),
        action, name, directory, lock_wait, dry_run, yes, as_json,
    )  # fmt: skip


@dataclass(frozen=True)
class _Switch:
    """A file-flag the runs of a train read (kill switch, save switch): how to show and flip it."""

    title: str
    kind: str
    state: Callable[[Any], Any]
    turn_on: Callable[[Any, bool], str]
    turn_off: Callable[[Any, bool], str]
    on_note: str = ""


def _flip_switch(
    switch: _Switch,
    action: str,
    name: str | None,
    directory: Path | None,
    lock_wait: float,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Show or turn a switch on/off under the confirm rule, then note the change in train.json.

    Never waits behind another command or for Slurm: the switches are for emergencies. Open
    changes are settled after the switch is flipped (settling asks Slurm, which may hang),
    and only if the lock is free at once; the note in train.json waits at most --lock-wait.
    """
    from slurmkit.cli._confirm import declined, gate
    from slurmkit.train import killswitch

    found = _find(directory, name, 0.0, settle=False)
    train = replace(found, lock_wait=lock_wait)
    if action == "status":
        state = switch.state(train)
        if as_json:
            print_json({"train": train.name, **state.to_json()})
        else:
            click.echo(f"{'on since ' + str(state.since) if state.on else 'off'}: {state.path}")
        return
    change = switch.turn_on if action == "on" else switch.turn_off
    would_change = switch.state(train).on != (action == "on")
    rule = gate(dry_run, yes)
    if rule.ask and would_change:
        plan = change(train, True)
        if not rule.approve(
            lambda: stderr.line(f"train {train.name}: {plan}"), f"{switch.title} {action}?"
        ):
            exit_with(declined())
    dry_run = rule.dry_run
    line = change(train, dry_run)
    if not dry_run and action == "on":
        line += switch.on_note
    if as_json:
        print_json({"train": train.name, "action": action, "dry_run": dry_run, "effect": line})
    else:
        click.echo(f"train {train.name}: {line}")
    if not dry_run and would_change:
        note = killswitch.record(train, action, switch.kind)
        if note:
            _notify(f"note: {note}")
    _settle(found, busy_ok=True)
    exit_with(rule.exit_code(would_change))


@train_group.command("save-switch")
@click.argument("action", type=click.Choice(["on", "off", "status"]))
@_name_argument
@_dir_option
@_lock_wait_option
@_dry_run_option
@_yes_option
@_json_option
def save_switch_command(
    action: str,
    name: str | None,
    directory: Path | None,
    lock_wait: float,
    dry_run: bool,
    yes: bool,
    as_json: bool,
) -> None:
    """Ask the running training for a checkpoint now, without stopping it (the seed's save switch).

    `on` creates the file $SLURMKIT_SAVE_SWITCH names in every run; a training loop that
    checks it saves a checkpoint, removes the file and trains on (see the train-wrapper
    template's notes). `off` withdraws a request not acted on yet. Like the kill switch,
    anyone who can write the train folder can use it. On and off ask on a terminal and
    need --yes without one (else a dry run, exit 1).
    """
    from slurmkit.train import killswitch

    _flip_switch(
        _Switch("Save switch", "save-switch", killswitch.save_state, killswitch.save_on,
                killswitch.save_off),
        action, name, directory, lock_wait, dry_run, yes, as_json,
    )  # fmt: skip


@train_group.command("should-stop")
@_name_argument
@_dir_option
def should_stop_command(name: str | None, directory: Path | None) -> None:
    """Exit 0 when the kill switch is on, 1 when not: `slurmkit train should-stop && exit 0`.

    Inside a train's run, $SLURMKIT_KILL_SWITCH names the file and NAME is not needed.
    """
    from slurmkit.train.killswitch import ENV_VAR, should_stop

    env_path = os.environ.get(ENV_VAR)
    if name is None and directory is None and env_path:
        path = Path(env_path)
    else:
        path = _find(directory, name).kill_switch
    exit_with(0 if should_stop(path) else 1)
