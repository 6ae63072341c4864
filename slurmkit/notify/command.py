"""Command alerts: run a program (no shell) with the message on stdin.

The command is split like a shell would (``cmd:mail -s alert ops@x``) but never run
by one. ``SLURMKIT_ALERT_KIND`` and ``SLURMKIT_ALERT_TITLE`` are set for scripts that
route by kind.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

from slurmkit import _proc
from slurmkit.notify.message import DeliveryFailed, Notification
from slurmkit.printable import printable

TIMEOUT = 30.0


def run_command(notification: Notification, argv: Sequence[str], timeout: float = TIMEOUT) -> None:
    env = {
        **os.environ,
        "SLURMKIT_ALERT_KIND": notification.kind,
        "SLURMKIT_ALERT_TITLE": printable(notification.title),
    }
    shown = shlex.join(argv)
    try:
        result = _proc.run(argv, input=notification.text, timeout=timeout, env=env)
    except FileNotFoundError:
        raise DeliveryFailed(f"cmd:{shown}: {argv[0]} not found") from None
    except OSError as exc:
        raise DeliveryFailed(f"cmd:{shown}: {exc.strerror or exc}") from None
    if result.timed_out:
        raise DeliveryFailed(f"cmd:{shown}: did not finish within {timeout:g} s")
    if result.returncode != 0:
        first = next((ln for ln in result.stderr.splitlines() if ln.strip()), "")
        detail = f": {first.strip()}" if first else ""
        raise DeliveryFailed(f"cmd:{shown}: exited {result.returncode}{detail}")
