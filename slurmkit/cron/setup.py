"""``cron init``: make the folders, render one scheduler script per period, write the manifest.

Running it again is safe: folders and the jobs in them are kept, periods are added
(never dropped: a period whose chain may still run must stay known to ``stop`` and
``status``), scripts are re-rendered from the current template, and options given
again (partition, account, --at, time) replace the recorded ones. A chain already
running keeps the script it was started with (each run resubmits Slurm's copy of
itself): ``cron stop`` and ``cron start`` it to apply a change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from slurmkit.cron.layout import DEFAULT_PREFIX, CronConfig, CronDir, check_prefix
from slurmkit.cron.period import NAMED, Period
from slurmkit.errors import UsageError
from slurmkit.files import refused

SCHEDULER_TEMPLATE = "cron-scheduler"


@dataclass
class InitReport:
    config: CronConfig
    created: list[Path] = field(default_factory=list)
    scripts: list[Path] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            **self.config.to_json(),
            "created": [str(p) for p in self.created],
            "scripts": [str(p) for p in self.scripts],
        }


def init_cron_dir(
    cron: CronDir,
    *,
    extra_periods: Sequence[Period] = (),
    partition: str | None = None,
    account: str | None = None,
    time: str | None = None,
    at: str | None = None,
    prefix: str | None = None,
) -> InitReport:
    """Create or update the cron dir ``cron``; every OS fault is one usage-error line."""
    config = _merged(cron, extra_periods, partition, account, time, at, prefix)
    report = InitReport(config=config)
    folders = [cron.root, cron.scheduler, cron.logs, *(cron.folder(p) for p in config.periods)]
    for folder in folders:
        if _make_dir(folder):
            report.created.append(folder)
    scripts = {config.chain_name(p): render_scheduler(cron, config, p) for p in config.periods}
    for chain, text in scripts.items():
        report.scripts.append(_write(cron.script(chain), text))
    _write(cron.manifest, json.dumps(config.to_json(), indent=2) + "\n")
    return report


def _merged(
    cron: CronDir,
    extra: Sequence[Period],
    partition: str | None,
    account: str | None,
    time: str | None,
    at: str | None,
    prefix: str | None,
) -> CronConfig:
    seen: dict[int, Period] = {}
    for period in extra:
        if period.name in NAMED:
            raise UsageError(f"--every {period.spelled} is the {period.name} period: always set up")
        if period.seconds in seen:
            raise UsageError(f"--every {period.spelled} is given twice")
        seen[period.seconds] = period
    base = (
        cron.load()
        if cron.manifest.exists()
        else CronConfig(periods=(Period.of(3600), Period.of(86400)))
    )
    if prefix is not None and cron.manifest.exists() and prefix != base.prefix:
        raise UsageError(
            f"{cron.root} already uses job names {base.prefix}-<period>: stop its chains and "
            "start a new cron dir to change --name-prefix"
        )
    periods = tuple(sorted({*base.periods, *seen.values()}))
    if time is not None:
        time = check_time_limit(time)
    return replace(
        base,
        periods=periods,
        prefix=check_prefix(prefix) if prefix else base.prefix or DEFAULT_PREFIX,
        partition=partition if partition is not None else base.partition,
        account=account if account is not None else base.account,
        time=time or base.time,
        at=at if at is not None else base.at,
    )


def check_time_limit(value: str) -> str:
    """A Slurm --time value, checked here so the error names --time, not a template."""
    from slurmkit.templating.param_types import BadValue, TimeType

    try:
        return TimeType().parse(value)
    except BadValue as exc:
        raise UsageError(f"--time: {exc}") from None


def render_scheduler(cron: CronDir, config: CronConfig, period: Period) -> str:
    """The scheduler script of one period, from the shipped ``cron-scheduler`` template.

    Paths are absolute, so the chain works whatever folder Slurm starts it in; the site
    config ([defaults] partition/account) applies unless init was given its own.
    """
    from slurmkit.templating import config as site_config
    from slurmkit.templating import render_template

    chain = config.chain_name(period)
    overrides: dict[str, object] = {
        "period": period.spelled,
        "folder": str(cron.folder(period)),
        "chain_name": chain,
        "state_file": str(cron.state_file(chain)),
        "log_dir": str(cron.logs),
        "time": config.time,
        "at": config.at if period.name == "daily" and config.at else "",
    }
    if config.partition:
        overrides["partition"] = config.partition
    if config.account:
        overrides["account"] = config.account
    return render_template(SCHEDULER_TEMPLATE, overrides=overrides, site=site_config.load()).text


def _make_dir(path: Path) -> bool:
    """Create ``path`` if missing; True when it was created here."""
    if path.is_dir():
        return False
    try:
        path.mkdir(parents=True)
    except FileExistsError:
        if path.is_dir():
            return False
        raise UsageError(f"cannot create {path}: a file of that name exists") from None
    except OSError as exc:
        raise refused(exc, f"create {path}") from None
    return True


def _write(path: Path, text: str) -> Path:
    """Written whole or not at all; a refusal is write_atomic's one line (exit 2)."""
    from slurmkit.files import write_atomic

    return write_atomic(path, text)
