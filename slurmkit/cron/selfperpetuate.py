"""``cron selfperpetuate``: turn a script into a job that queues its own next run, then runs it.

Rendered from the shipped ``self-perpetuating`` template (next run queued first, so a
failing script never ends the chain; ``--dependency=singleton``; a run that finds its
next run already queued queues nothing). Before submitting, the queue is checked:
when a job of that name (and user) is pending or running, nothing is submitted.

The script runs from where it is at each run, so edits take effect at the next run;
an executable script runs directly, any other through bash. The wrapper is written
next to the script as ``<name>.self-perpetuating.sbatch`` (not ``.slurm``: a cron
folder must not pick it up).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from slurmkit.cron.chain import chain_jobs
from slurmkit.cron.period import Period, begin_value, next_at
from slurmkit.cron.setup import check_time_limit
from slurmkit.errors import UsageError
from slurmkit.slurm.submit import current_user

TEMPLATE = "self-perpetuating"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")


@dataclass
class PerpetualOutcome:
    name: str
    action: str  # submitted, running, dry-run
    wrapper: str
    argv: list[str] = field(default_factory=list)
    job_id: str | None = None
    existing: list[str] = field(default_factory=list)
    begin: str | None = None

    def to_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def job_name_for(script: Path, name: str | None) -> str:
    chosen = name or script.name.split(".")[0]
    if not _NAME.fullmatch(chosen):
        raise UsageError(
            f"job name {chosen!r}: use letters, digits, '.', '_', '+' and '-' (give --name)"
        )
    return chosen


def command_for(script: Path, args: Sequence[str]) -> str:
    """The shell command each run executes: the script itself if executable, else via bash."""
    runner = [str(script)] if os.access(script, os.X_OK) else ["bash", str(script)]
    return shlex.join([*runner, *args])


def selfperpetuate(
    script: Path,
    *,
    period: Period,
    args: Sequence[str] = (),
    name: str | None = None,
    partition: str | None = None,
    account: str | None = None,
    time: str | None = None,
    at: str | None = None,
    log_dir: Path | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> PerpetualOutcome:
    from slurmkit.files import write_atomic
    from slurmkit.slurm.submit import sbatch_argv, submit
    from slurmkit.templating import config as site_config
    from slurmkit.templating import render_template

    script = Path(os.path.abspath(script))
    if not script.is_file():
        raise UsageError(f"{script} is not a file")
    if time:
        time = check_time_limit(time)
    job_name = job_name_for(script, name)
    overrides: dict[str, object] = {
        "job_name": job_name,
        "period": period.spelled,
        "command": command_for(script, args),
        "log_dir": str(log_dir.absolute() if log_dir else script.parent),
        "at": at or "",
    }
    for key, value in (("partition", partition), ("account", account), ("time", time)):
        if value:
            overrides[key] = value
    text = render_template(TEMPLATE, overrides=overrides, site=site_config.load()).text
    wrapper = script.parent / f"{job_name}.self-perpetuating.sbatch"
    extra = [f"--chdir={script.parent}"]
    begin = begin_value(next_at(at, now or datetime.now())) if at else None
    if begin:
        extra.append(f"--begin={begin}")
    outcome = PerpetualOutcome(
        job_name, "dry-run", str(wrapper), argv=sbatch_argv(wrapper, extra), begin=begin
    )
    live = chain_jobs([job_name], current_user())[job_name]
    if live:
        outcome.action = "running"
        outcome.existing = [j.job_id for j in live]
        return outcome
    if dry_run:
        return outcome
    write_atomic(wrapper, text)  # a refusal is its one line (exit 2)
    outcome.job_id = submit(wrapper, extra)
    outcome.action = "submitted"
    return outcome
