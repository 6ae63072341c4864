"""The one confirm rule, shared by every command that changes cluster or train state.

The rule (README, "Every state-changing command"):

* ``--dry-run`` shows the plan and changes nothing (exit 0).
* An interactive run (stdin is a terminal) shows the plan and asks, default no;
  declining changes nothing and exits 1.
* A run without a terminal (cron, a pipeline, stdin at /dev/null) acts only with
  ``--yes``. Without it the command falls back to a dry run, says so on stderr,
  and exits **1** when it skipped a change ("done with skips": nothing was done as
  asked), 0 when there was nothing to change anyway.

State-changing means: changes or removes something that exists (drain or return
nodes, hold, release, cancel or requeue jobs, raise a time limit, append runs to a
train, re-point a train's script, the kill switch, delete logs). Commands whose
only effect is to submit the new job their arguments describe (``train start``,
``cron start``, ``cron run-now``, ``template submit``, ``cpus check``, ``faulty scan``
without ``--drain``) are the request itself, like ``sbatch``: they take
``--dry-run`` where it makes sense but need no ``--yes``.
``tests/unit/test_confirm_rule.py`` walks every command of the CLI to enforce this.

The caller may pass whether stdin is a terminal, so tests decide how that is known.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import click

from slurmkit import stderr
from slurmkit.errors import EXIT_FINDINGS

# What a forced dry run that skipped a change exits with.
SKIPPED_EXIT = EXIT_FINDINGS
FORCED_NOTICE = "no terminal and no --yes: dry run only, nothing will be changed"


def notify(message: str) -> None:
    stderr.say(message)


def has_terminal() -> bool:
    return sys.stdin.isatty()


def unattended_dry_run(dry_run: bool, yes: bool, interactive: bool) -> bool:
    """The effective --dry-run: forced on, with a notice, when nobody can be asked."""
    if not dry_run and not yes and not interactive:
        notify(FORCED_NOTICE)
        return True
    return dry_run


def confirm(yes: bool, show_plan: Callable[[], None], question: str = "Proceed?") -> bool:
    """True with --yes; otherwise show the plan and ask (default no)."""
    if yes:
        return True
    show_plan()
    return click.confirm(question, default=False, err=True)


@dataclass(frozen=True)
class Gate:
    """The confirm rule applied to one invocation.

    ``dry_run`` is the effective one (given, or forced because nobody can be
    asked); ``forced`` says it was forced, so the command can exit 1 when that
    skipped a change; ``ask`` says a terminal user must still confirm.
    """

    dry_run: bool
    forced: bool
    yes: bool

    @property
    def ask(self) -> bool:
        return not self.dry_run and not self.yes

    def approve(self, show_plan: Callable[[], None], question: str = "Proceed?") -> bool:
        """True when the change may go ahead; False for a dry run or a "no" on the terminal."""
        if self.dry_run:
            return False
        return confirm(self.yes, show_plan, question)

    def exit_code(self, would_change: bool) -> int:
        """0, or 1 when a forced dry run skipped a change that was asked for."""
        return SKIPPED_EXIT if self.forced and would_change else 0


def gate(dry_run: bool, yes: bool, interactive: bool | None = None) -> Gate:
    """Apply the rule: a run without terminal and without --yes becomes a dry run, with a notice."""
    interactive = has_terminal() if interactive is None else interactive
    effective = unattended_dry_run(dry_run, yes, interactive)
    return Gate(dry_run=effective, forced=effective and not dry_run, yes=yes)


def declined() -> int:
    """A terminal user said no: nothing changed, exit 1."""
    notify("nothing changed")
    return SKIPPED_EXIT
