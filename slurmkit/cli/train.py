"""``slurmkit train``: long trainings as job-array trains (thin over :mod:`slurmkit.train`).

Every subcommand finds its train by NAME under --dir (default ./.slurmkit/trains);
NAME may be left out when only one train lives there. Commands that change a train
(hold, release, switch, extend, stop, kill-switch on|off) follow the one confirm rule of
:mod:`slurmkit.cli._confirm`: --dry-run prints what they would run, a terminal user is
shown the plan and asked, and without a terminal they act only with --yes (otherwise a
dry run that exits 1). ``start`` only submits the new array its arguments describe, like
sbatch: it needs no --yes.

The changes live in :mod:`._train_changes`, the file switches in :mod:`._train_switches`,
what they share (options, finding and settling a train, the confirm flow) in
:mod:`._train_common`, and the status as text in :mod:`._train_status`.

Faults (issue 22): every command first settles what a killed or unanswered command left
open in the train's journal (:mod:`slurmkit.train.reconcile`), saying so in one line on
stderr; waits for the train's lock are bounded by --lock-wait. A change settles again and
plans under its own lock (issue 29); the preview shown before it is not what is acted on.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from slurmkit.cli import _train_changes, _train_switches
from slurmkit.cli._exclude_options import no_exclude_option, state_option
from slurmkit.cli._output import print_json
from slurmkit.cli._train_common import (
    dir_option,
    dry_run_flag,
    find,
    force_option,
    json_flag,
    lock_wait_option,
    name_argument,
    notify,
)


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
@dir_option
@lock_wait_option
@force_option
@dry_run_flag
@json_flag
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

    set_progress(notify)
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
        notify(f"note: {notice}")
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
@name_argument
@dir_option
@lock_wait_option
@json_flag
def status_command(
    name: str | None, directory: Path | None, lock_wait: float, as_json: bool
) -> None:
    """Where the train stands: running run, pending runs, next start, next script, failures.

    It first settles what a killed or unanswered command left open (an array queued by
    an interrupted start or extend is adopted), saying so on stderr.
    """
    from slurmkit.cli._train_status import print_status
    from slurmkit.train.rules import must_exist
    from slurmkit.train.status import gather

    train = find(directory, name, lock_wait, busy_ok=True)
    must_exist(train)
    status = gather(train)
    torn = train.torn_journal()  # issue 29: a torn line may have been an intent
    if torn:
        status.notices.append(torn)
    for notice in status.notices:
        notify(f"note: {notice}")
    if as_json:
        print_json(status.to_json())
        return
    print_status(status)


for _command in (*_train_changes.COMMANDS, *_train_switches.COMMANDS):
    train_group.add_command(_command)
