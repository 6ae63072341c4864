"""Crontab emulation through self-perpetuating Slurm jobs.

A cron dir holds one folder of ``*.slurm`` jobs per period (``cron.hourly``,
``cron.daily``, ``cron.30m``...) and one scheduler chain per period: a job named
``cron-<period>`` that queues its own next run first (``--begin``, singleton,
never a second chain), then submits every job of its folder and records the run
(see ``cron/cron-scheduler.slurm.j2``). This package sets the dir up
(:mod:`.setup`), starts and stops the chains (:mod:`.chain`), tells whether they
are alive and on time (:mod:`.status`), and offers run-now, cleanup, scrontab
lines and standalone self-perpetuating jobs.
"""

from __future__ import annotations

from slurmkit.cron.layout import CronConfig, CronDir, resolve_dir
from slurmkit.cron.period import Period, parse_at, parse_period

__all__ = [
    "CronConfig",
    "CronDir",
    "Period",
    "parse_at",
    "parse_period",
    "resolve_dir",
]
