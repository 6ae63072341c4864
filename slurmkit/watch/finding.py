"""The one result shape every watchdog returns, so alerting and output are written once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WatchFinding:
    """One thing checked. ``key`` is stable across runs (rate limiting keys on it)."""

    check: str
    key: str
    subject: str
    healthy: bool
    message: str
    details: Mapping[str, object] = field(default_factory=dict)

    @property
    def line(self) -> str:
        return f"{'OK' if self.healthy else 'ALERT'} {self.subject}: {self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "check": self.check,
            "key": self.key,
            "subject": self.subject,
            "healthy": self.healthy,
            "message": self.message,
            "details": dict(self.details),
        }
