"""``watch cron``: alert when a scheduler chain of a cron dir is gone, stuck, late or failing.

The verdicts are :mod:`slurmkit.cron.status`'s, one finding per period; a failing
``squeue`` makes every chain an alert (the watchdog cannot vouch for any of them).
"""

from __future__ import annotations

from collections.abc import Sequence

from slurmkit.cron.layout import CronDir
from slurmkit.cron.status import chain_statuses
from slurmkit.errors import SlurmError
from slurmkit.watch.finding import WatchFinding


def check_cron(
    cron: CronDir, periods: Sequence[str] = (), grace: int | None = None
) -> list[WatchFinding]:
    config = cron.load()
    chosen = config.select(list(periods))
    try:
        statuses = chain_statuses(cron, config, chosen, grace=grace)
    except SlurmError as exc:
        return [
            WatchFinding(
                "cron",
                f"cron:{cron.root}:{p.name}",
                f"cron {config.chain_name(p)}",
                False,
                f"cannot read the queue: {exc}",
            )
            for p in chosen
        ]
    return [
        WatchFinding(
            "cron",
            f"cron:{cron.root}:{s.period}",
            f"cron {s.chain} ({cron.root})",
            s.healthy,
            f"{s.health}: {s.message}",
            s.to_json(),
        )
        for s in statuses
    ]
