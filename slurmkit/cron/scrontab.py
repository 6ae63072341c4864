"""``cron scrontab``: the same schedule as ``scrontab`` lines, for sites that enable scrontab.

scrontab's finest unit is a minute and its steps restart at each hour, day or month,
so only periods that divide those evenly have an exact line (``*/30 * * * *``,
``0 */12 * * *``, ``@daily`` at --at). Others get a comment saying why, and the
nearest line commented out, never a silently different schedule. Each line runs
``slurmkit cron run-now`` for its period: the same submission the scheduler does.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from slurmkit.cron.layout import CronConfig, CronDir
from slurmkit.cron.period import Period


@dataclass(frozen=True)
class Spec:
    """A cron time spec; ``exact`` False means only an approximation exists."""

    spec: str | None
    exact: bool
    note: str = ""


def _step(count: int, per: int, every_one: str, every_count: str, unit: str) -> Spec:
    """A step of ``count`` is exact only if it divides ``per``: cron steps restart each hour/day."""
    if per % count:
        return Spec(every_count, False, f"{count} does not divide {unit}")
    return Spec(every_one if count == 1 else every_count, True)


def cron_spec(period: Period, at: str | None = None) -> Spec:
    seconds = period.seconds
    if seconds % 60:
        return Spec(None, False, "scrontab cannot run more often than once a minute or on seconds")
    minutes = seconds // 60
    if minutes < 60:
        return _step(minutes, 60, "* * * * *", f"*/{minutes} * * * *", "an hour")
    if minutes % 60:
        return Spec(None, False, "not a whole number of hours")
    hours = minutes // 60
    if hours < 24:
        return _step(hours, 24, "0 * * * *", f"0 */{hours} * * *", "a day")
    if hours == 24:
        hh, mm = (at or "00:00").split(":")
        return Spec(f"{int(mm)} {int(hh)} * * *", True)
    if hours % 24 == 0 and hours // 24 == 7:
        return Spec("0 0 * * 0", True)
    days = hours // 24 if hours % 24 == 0 else None
    if days:
        return Spec(f"0 0 */{days} * *", False, "day-of-month steps restart every month")
    return Spec(None, False, "not a whole number of days")


def scrontab_lines(
    cron: CronDir, config: CronConfig, periods: Sequence[Period], python: str = sys.executable
) -> list[str]:
    lines = [
        f"# slurmkit cron dir {cron.root}: paste into `scrontab -e`.",
        "# These replace the emulated chains: stop those first (slurmkit cron stop --yes).",
    ]
    for period in periods:
        spec = cron_spec(period, config.at if period.name == "daily" else None)
        chain = config.chain_name(period)
        command = shlex.join(
            [python, "-m", "slurmkit", "cron", "run-now", "--dir", str(cron.root), period.name]
        )
        lines.append("")
        lines.append(f"# {period.folder}: every {period.spelled}")
        lines.append(f"#SCRON --job-name={shlex.quote(chain)}")
        if config.partition:
            lines.append(f"#SCRON --partition={shlex.quote(config.partition)}")
        if config.account:
            lines.append(f"#SCRON --account={shlex.quote(config.account)}")
        lines.append(f"#SCRON --time={config.time}")
        lines.append(f"#SCRON --output={shlex.quote(str(cron.logs / '%x-%j.out'))}")
        if spec.exact:
            lines.append(f"{spec.spec} {command}")
        else:
            lines.append(f"# no exact scrontab schedule for every {period.spelled}: {spec.note}")
            if spec.spec:
                lines.append(f"# nearest: {spec.spec} {command}")
    return lines
