"""``slurmkit job info`` and ``slurmkit job extend``: a job's time left, and more time for it.

Thin over :mod:`slurmkit.jobenv.timelimit`. ``extend`` changes cluster state:
it shows the change and asks on a terminal, needs ``--yes`` without one (or
only reports), and ``--dry-run`` changes nothing. Each change is journaled
(:func:`slurmkit.jobenv.timelimit.journal_path`) and an earlier one left open is
settled first, in one line on stderr.
"""

from __future__ import annotations

import os
import shlex

import click

from slurmkit import stderr
from slurmkit.cli._confirm import declined, gate, notify
from slurmkit.cli._group import exit_with
from slurmkit.cli._options import confirm_options, json_option
from slurmkit.errors import EXIT_FINDINGS, UsageError


def _job_id(jobid: str | None) -> str:
    if jobid and jobid.strip():
        return jobid.strip()
    own = os.environ.get("SLURM_JOB_ID", "").strip()
    if not own:
        raise UsageError("no job id: give JOBID, or run inside a Slurm job (SLURM_JOB_ID)")
    return own


@click.group("job")
def job_group() -> None:
    """A job's time: how much is left, and raising its limit."""


@job_group.command("info")
@click.argument("jobid", required=False, metavar="[JOBID]")
@json_option()
@click.option(
    "--seconds-left",
    is_flag=True,
    help="Print only the seconds until the time limit (2147483647 when UNLIMITED); "
    "exit 2 for a pending or ended job.",
)
def info_command(jobid: str | None, as_json: bool, seconds_left: bool) -> None:
    """Show a job's nodes, state, start, end, time limit and time left (default: $SLURM_JOB_ID).

    For a training loop planning a graceful exit: read --seconds-left once at
    start and keep the deadline; each call is one RPC to slurmctld.
    """
    from slurmkit.jobenv import timelimit
    from slurmkit.slurm import query

    if as_json and seconds_left:
        raise UsageError("--json and --seconds-left cannot be combined")
    job = query.job(_job_id(jobid))
    if seconds_left:
        click.echo(timelimit.seconds_left(job))
        return
    info = timelimit.job_time(job)
    if as_json:
        from slurmkit.cli._output import print_json

        print_json(info.to_json())
        return
    from slurmkit.cli._output import print_table

    print_table(info.rows(), ["job", info.job_id])


@job_group.command("extend")
@click.argument("jobid", metavar="JOBID")
@click.argument("time", metavar="TIME")
@confirm_options(dry_run_help="Show the change and the command; change nothing.")
def extend_command(jobid: str, time: str, dry_run: bool, yes: bool) -> None:
    """Raise JOBID's time limit: TIME is +3h, +90m, +1d, +1d12h, +1:30:00 (add) or
    D-HH:MM:SS, HH:MM:SS, MM, UNLIMITED (set).

    Runs `scontrol update JobId=JOBID TimeLimit+=MINUTES` (or TimeLimit=...),
    then reads the limit back. Only Slurm operators, administrators and root
    can raise a running job's limit. Exit 0 changed, 1 not applied (declined,
    or no terminal and no --yes), 2 error.
    """
    from slurmkit.jobenv import timelimit
    from slurmkit.slurm import query

    change = timelimit.parse_change(time)
    rule = gate(dry_run, yes)
    journal = timelimit.open_journal()
    timelimit.settle(journal, notify, record=not rule.dry_run)  # what a killed run left open
    plan = timelimit.plan_extend(query.job(jobid.strip()), change)
    command = shlex.join(plan.argv)
    if rule.dry_run:
        click.echo(f"{plan.describe()}\nwould run: {command}")
        exit_with(rule.exit_code(True))

    def show_plan() -> None:
        stderr.line(f"{plan.describe()}\nwill run: {command}")

    if not rule.approve(show_plan):
        exit_with(declined())
    job = timelimit.apply_extend(plan, journal, notify)
    now = timelimit.format_limit(job.time_limit)
    if job.time_limit != plan.after:
        notify(
            f"job {job.job_id}: Slurm reports time limit {now}, expected "
            f"{timelimit.format_limit(plan.after)}"
        )
        exit_with(EXIT_FINDINGS)
    click.echo(f"job {job.job_id}: time limit {timelimit.format_limit(plan.before)} -> {now}")
