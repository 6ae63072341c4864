"""``slurmkit health``: Slurm's HealthCheckProgram; drains its own node when a check fails.

Thin over :mod:`slurmkit.health`. Exit codes (README, "Slurm drains bad nodes itself"):

* drain mode (the default) and ``--dry-run``: **0** whatever the checks found and
  whatever Slurm answered, so that slurmd's own handling stays sane; a controller that
  fails or hangs is one line on stderr. A bad or missing config is one line on stderr
  and exit 0 when Slurm runs it (``SLURMD_NODENAME`` or ``SLURM_JOB_ID`` in the
  environment: slurmd sets them for HealthCheckProgram, Prolog and Epilog), exit 2
  when a person does.
* ``--no-drain``: 0 every check passed or was skipped, 1 one failed or is unknown,
  2 bad config (a person). Slurm is not asked anything.

Why no ``--yes``: slurmd runs it with no terminal and no arguments, and it changes only
the node it runs on, only with its own reason, never an admin's drain; ``--dry-run``
shows what it would do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmkit import stderr
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import dry_run_option, file_option, json_option
from slurmkit.errors import SlurmkitError

if TYPE_CHECKING:
    from slurmkit.health import HealthReport


def run_by_slurm(env: Mapping[str, str]) -> bool:
    """slurmd sets SLURMD_NODENAME for HealthCheckProgram (and Prolog/Epilog, with SLURM_JOB_ID)."""
    return bool(env.get("SLURMD_NODENAME") or env.get("SLURM_JOB_ID"))


@click.command("health")
@file_option(
    "--config",
    "config_path",
    metavar="PATH",
    # The variable undrain's health gate passes on (undrain/healthgate.py): one name, so
    # the file the gate names is the file health reads.
    envvar="SLURMKIT_HEALTH_CONFIG",
    help="Checks to run (TOML; root-owned, writable by nobody else). "
    "Default: $SLURMKIT_HEALTH_CONFIG, else /etc/slurmkit/health.toml.",
)
@dry_run_option("Run the checks, read the node, change nothing.")
@click.option(
    "--no-drain",
    is_flag=True,
    help="Only run the checks (no Slurm call); exit 1 when one fails or is unknown.",
)
@json_option()
def health_command(config_path: Path | None, dry_run: bool, no_drain: bool, as_json: bool) -> None:
    """Check this node quickly; drain it in Slurm when a check fails (HealthCheckProgram).

    \b
    Checks (health.toml): disk (free bytes, percent, inodes), gpu-count,
    gpu-health (nvidia-smi -q), xid (kernel log since the last run), cmd (a
    command that must exit 0). A failure drains this node (SLURMD_NODENAME,
    else the short host name) with reason 'slurmkit health: <check>: <detail>';
    a node drained that way is resumed once every check passes (an Xid drain
    waits for 'slurmkit undrain --reason "slurmkit health"'); an admin's drain
    is never touched. Prints nothing on success.

    Exit 0 (always, so slurmd's handling stays sane; Slurm errors go to stderr);
    with --no-drain 0 passed, 1 failed; 2 bad config when run by a person.
    """
    from slurmkit import health

    mode = "no-drain" if no_drain else "dry-run" if dry_run else "drain"
    try:
        config = health.load(config_path or health.DEFAULT_PATH)
    except SlurmkitError as exc:
        if run_by_slurm(os.environ):
            _note(str(exc))
            exit_with(0)
        raise
    report = health.run(config, mode=mode)
    if as_json:
        from slurmkit.cli._output import print_json

        print_json(report.to_json())
    elif mode != "drain":
        _print(report)
    _stderr(report)
    if mode == "no-drain":
        exit_with(0 if report.passed else 1)
    exit_with(0)


def _note(message: str) -> None:
    stderr.say(f"health: {message}")


def _print(report: HealthReport) -> None:
    from slurmkit.printable import printable

    for r in report.results:
        click.echo(f"{r.label:<12} {r.status:<8} {printable(r.detail)}")
    if report.mode == "dry-run" and not report.error:
        click.echo(f"{report.node}: {_would(report)}")


def _would(report: HealthReport) -> str:
    from slurmkit.health import node as nd

    return {
        nd.DRAIN: f"would drain, reason: {report.reason}",
        nd.RESUME: f"would resume (drained with: {report.reason})",
        nd.KEEP: f"stays drained: {report.why}",
        nd.ADMIN: f"left alone: {report.why} ({report.reason})",
        nd.WAIT: f"stays drained: {report.why}",
        nd.NONE: "nothing to do",
    }.get(report.action, report.action)


def _stderr(report: HealthReport) -> None:
    """What a person (or slurmd's log) should know: unknown checks, actions, Slurm errors."""
    from slurmkit.gpu.findings import UNKNOWN
    from slurmkit.health import node as nd
    from slurmkit.printable import printable

    for r in report.results:
        if r.status == UNKNOWN:
            _note(f"{report.node}: {r.label}: unknown: {printable(r.detail)}")
    if report.error:
        _note(f"{report.node}: scontrol failed, this node left as it was: {report.error}")
    elif report.mode == "drain" and report.action == nd.DRAIN:
        _note(f"{report.node}: drained: {report.reason}")
    elif report.mode == "drain" and report.action == nd.RESUME:
        _note(f"{report.node}: resumed (was drained with: {report.reason})")
    for note in report.notes:
        _note(f"{report.node}: {note}")
