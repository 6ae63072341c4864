"""The train's file switches, which anyone who can write its folder may use: ``kill-switch``,
``save-switch``, and ``should-stop`` for a training loop to ask.

Their confirm flow is their own: a switch never waits behind another command or for
Slurm (they are for emergencies), so it is flipped first and open changes are settled
after, only when the lock is free at once.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from slurmkit import stderr
from slurmkit.cli._group import exit_with
from slurmkit.cli._output import print_json
from slurmkit.cli._train_common import (
    Change,
    change_options,
    dir_option,
    find,
    name_argument,
    notify,
    settle_open,
)

_action_argument = click.argument("action", type=click.Choice(["on", "off", "status"]))


@click.command("kill-switch")
@_action_argument
@change_options
def kill_switch_command(change: Change, action: str) -> None:
    """Turn the kill switch on or off, or show it: with it on, every remaining run exits at once.

    Anyone who can write the train folder can use it, even on a train they did not start
    (it can only stop runs; the script the runs execute must still be the owner's). On and
    off ask on a terminal and need --yes without one (else a dry run, exit 1).
    """
    from slurmkit.train import killswitch

    _flip(
        _Switch("Kill switch", "kill-switch", killswitch.state, killswitch.turn_on,
                killswitch.turn_off,
                " (a running run stops only if its code checks $SLURMKIT_KILL_SWITCH)"),
        action, change,
    )  # fmt: skip


@click.command("save-switch")
@_action_argument
@change_options
def save_switch_command(change: Change, action: str) -> None:
    """Ask the running training for a checkpoint now, without stopping it (the seed's save switch).

    `on` creates the file $SLURMKIT_SAVE_SWITCH names in every run; a training loop that
    checks it saves a checkpoint, removes the file and trains on (see the train-wrapper
    template's notes). `off` withdraws a request not acted on yet. Like the kill switch,
    anyone who can write the train folder can use it. On and off ask on a terminal and
    need --yes without one (else a dry run, exit 1).
    """
    from slurmkit.train import killswitch

    _flip(
        _Switch("Save switch", "save-switch", killswitch.save_state, killswitch.save_on,
                killswitch.save_off),
        action, change,
    )  # fmt: skip


@click.command("should-stop")
@name_argument
@dir_option
def should_stop_command(name: str | None, directory: Path | None) -> None:
    """Exit 0 when the kill switch is on, 1 when not: `slurmkit train should-stop && exit 0`.

    Inside a train's run, $SLURMKIT_KILL_SWITCH names the file and NAME is not needed.
    """
    from slurmkit.train.killswitch import ENV_VAR, should_stop

    env_path = os.environ.get(ENV_VAR)
    if name is None and directory is None and env_path:
        path = Path(env_path)
    else:
        path = find(directory, name).kill_switch
    exit_with(0 if should_stop(path) else 1)


@dataclass(frozen=True)
class _Switch:
    """A file-flag the runs of a train read (kill switch, save switch): how to show and flip it."""

    title: str
    kind: str
    state: Callable[[Any], Any]
    turn_on: Callable[[Any, bool], str]
    turn_off: Callable[[Any, bool], str]
    on_note: str = ""


def _flip(switch: _Switch, action: str, change: Change) -> None:
    """Show or turn a switch on/off under the confirm rule, then note the change in train.json.

    Open changes are settled after the switch is flipped (settling asks Slurm, which may
    hang), and only if the lock is free at once; the note in train.json waits at most
    --lock-wait.
    """
    from slurmkit.cli._confirm import declined, gate
    from slurmkit.train import killswitch

    found = find(change.directory, change.name, 0.0, settle=False)
    train = replace(found, lock_wait=change.lock_wait)
    if action == "status":
        _show(switch, train, change.as_json)
        return
    turn = switch.turn_on if action == "on" else switch.turn_off
    would_change = switch.state(train).on != (action == "on")
    rule = gate(change.dry_run, change.yes)
    if rule.ask and would_change:
        plan = turn(train, True)
        if not rule.approve(
            lambda: stderr.line(f"train {train.name}: {plan}"), f"{switch.title} {action}?"
        ):
            exit_with(declined())
    dry_run = rule.dry_run
    line = turn(train, dry_run)
    if not dry_run and action == "on":
        line += switch.on_note
    if change.as_json:
        print_json({"train": train.name, "action": action, "dry_run": dry_run, "effect": line})
    else:
        click.echo(f"train {train.name}: {line}")
    if not dry_run and would_change:
        note = killswitch.record(train, action, switch.kind)
        if note:
            notify(f"note: {note}")
    settle_open(found, busy_ok=True)
    exit_with(rule.exit_code(would_change))


def _show(switch: _Switch, train: Any, as_json: bool) -> None:
    state = switch.state(train)
    if as_json:
        print_json({"train": train.name, **state.to_json()})
    else:
        click.echo(f"{'on since ' + str(state.since) if state.on else 'off'}: {state.path}")


COMMANDS = (kill_switch_command, save_switch_command, should_stop_command)
