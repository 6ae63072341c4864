"""Watchdogs for unattended use (cron jobs, self-perpetuating jobs): job, cron, fs, log.

Each check returns :class:`WatchFinding` records; :func:`~slurmkit.watch.alerting.process`
turns them into rate-limited notifications (:mod:`slurmkit.notify`). Exit codes:
0 healthy, 1 alerting, 2 usage error.
"""

from __future__ import annotations

from slurmkit.watch.finding import WatchFinding

__all__ = ["WatchFinding"]
