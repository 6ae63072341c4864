"""Safety gates shared by commands that change cluster state (undrain, faulty scan --drain).

A run without a terminal on stdin (cron, a pipeline) never changes anything unless
``--yes`` was given: it falls back to a dry run and says so. An interactive run shows
its plan and asks. The caller passes whether stdin is a terminal, so tests and
callers decide how that is known.
"""

from __future__ import annotations

from collections.abc import Callable

import click


def notify(message: str) -> None:
    click.echo(f"slurmkit: {message}", err=True)


def unattended_dry_run(dry_run: bool, yes: bool, interactive: bool) -> bool:
    """The effective --dry-run: forced on, with a notice, when nobody can be asked."""
    if not dry_run and not yes and not interactive:
        notify("no terminal and no --yes: dry run only, nothing will be changed")
        return True
    return dry_run


def confirm(yes: bool, show_plan: Callable[[], None], question: str = "Proceed?") -> bool:
    """True with --yes; otherwise show the plan and ask (default no)."""
    if yes:
        return True
    show_plan()
    return click.confirm(question, default=False, err=True)
