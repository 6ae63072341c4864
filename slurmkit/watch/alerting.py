"""From findings to messages: decide per key, deliver, remember, report.

The exit code of a watchdog is decided by the findings alone (1 while anything is
unhealthy), never by whether a message could be delivered or was rate-limited.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from slurmkit.errors import SlurmkitError
from slurmkit.notify import Delivery, Notification, Target
from slurmkit.watch.finding import WatchFinding
from slurmkit.watch.ratelimit import KeyState, StateFile, advance, decide

Sender = Callable[[Notification, Sequence[Target]], list[Delivery]]


@dataclass
class Sent:
    key: str
    kind: str
    deliveries: list[Delivery]

    def to_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "kind": self.kind,
            "deliveries": [d.__dict__ for d in self.deliveries],
        }


@dataclass
class WatchReport:
    findings: list[WatchFinding]
    sent: list[Sent] = field(default_factory=list)
    suppressed: list[str] = field(default_factory=list)
    state_error: str | None = None
    rate_limited: bool = True  # False: the state could not be read, every alert went out

    @property
    def state_notice(self) -> str | None:
        """One true line about the state, or None: were alerts rate-limited, was it saved?"""
        if not self.state_error:
            return None
        if not self.rate_limited:
            return f"{self.state_error} (alerts not rate-limited)"
        return (
            f"{self.state_error}: the alerts were rate-limited, but the state could not be "
            "saved (the next run may repeat them)"
        )

    @property
    def healthy(self) -> bool:
        return all(f.healthy for f in self.findings)

    @property
    def exit_code(self) -> int:
        return 0 if self.healthy else 1

    @property
    def failures(self) -> list[str]:
        return [d.error or d.target for s in self.sent for d in s.deliveries if not d.ok]

    def to_json(self) -> dict[str, object]:
        return {
            "healthy": self.healthy,
            "findings": [f.to_json() for f in self.findings],
            "notifications": [s.to_json() for s in self.sent],
            "rate_limited": self.suppressed,
            "state_error": self.state_error,
            "state_used": self.rate_limited,
        }


def notification_for(
    finding: WatchFinding, kind: str, prev: KeyState | None, now: datetime, host: str
) -> Notification:
    return Notification(
        kind=kind,
        check=finding.check,
        subject=finding.subject,
        message=finding.message,
        host=host,
        time=now,
        since=prev.since if prev is not None else None,
    )


def process(
    findings: Sequence[WatchFinding],
    targets: Sequence[Target],
    *,
    state_path: Path,
    realert: int,
    send: Sender,
    now: datetime | None = None,
    host: str | None = None,
) -> WatchReport:
    """Send what is due for each finding; without targets nothing is sent nor stored.

    A state file that cannot be used (read-only home, full disk) is reported in
    ``state_error`` and every alert is sent: better a repeated alert than none.
    """
    report = WatchReport(list(findings))
    if not targets:
        return report
    moment = now or datetime.now().astimezone()
    hostname = host or socket.gethostname()
    state = StateFile(state_path)
    try:
        state.acquire()
    except OSError as exc:
        report.state_error = f"state file {state_path}: {exc.strerror or exc}"
    except SlurmkitError as exc:  # the lock: busy past its wait, or unusable
        # (LockBusy's "nothing was done" is not true here: the alerts still go out)
        report.state_error = (
            f"state file {state_path}: {str(exc).removesuffix('; nothing was done')}"
        )
    report.rate_limited = state.loaded
    try:
        for finding in findings:
            _one(finding, state.keys, report, targets, send, moment, hostname, realert)
    finally:
        try:
            state.release()
        except OSError as exc:
            report.state_error = f"state file {state_path}: {exc.strerror or exc}"
    return report


def _one(
    finding: WatchFinding,
    keys: dict[str, KeyState],
    report: WatchReport,
    targets: Sequence[Target],
    send: Sender,
    now: datetime,
    host: str,
    realert: int,
) -> None:
    prev = keys.get(finding.key)
    kind = decide(prev, finding, now, realert)
    delivered = False
    if kind is not None:
        deliveries = send(notification_for(finding, kind, prev, now, host), targets)
        delivered = any(d.ok for d in deliveries)
        report.sent.append(Sent(finding.key, kind, deliveries))
    elif not finding.healthy:
        report.suppressed.append(finding.key)
    following = advance(prev, finding, now, kind, delivered)
    if following is None:
        keys.pop(finding.key, None)
    else:
        keys[finding.key] = following
