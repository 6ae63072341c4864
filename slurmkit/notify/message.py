"""What an alert says: one title line and a short body, the same for every channel.

Three kinds: ``alert`` (a check just started failing), ``reminder`` (still failing
after ``--realert``) and ``recovery`` (healthy again, announced once). The title is the
email subject and the first line of chat and command messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


class DeliveryFailed(Exception):
    """A channel could not deliver; the text says where and why (never a secret)."""


KIND_WORDS = {"alert": "ALERT", "reminder": "STILL FAILING", "recovery": "RECOVERED"}


@dataclass(frozen=True)
class Notification:
    kind: str
    check: str
    subject: str
    message: str
    host: str
    time: datetime
    since: datetime | None = None

    @property
    def title(self) -> str:
        return f"[slurmkit] {KIND_WORDS[self.kind]}: {self.subject}"

    @property
    def body(self) -> str:
        lines = [
            self.message,
            "",
            f"check: slurmkit watch {self.check}",
            f"host: {self.host}",
            f"time: {self.time.isoformat(timespec='seconds')}",
        ]
        if self.since is not None:
            what = "was failing since" if self.kind == "recovery" else "failing since"
            lines.append(f"{what}: {self.since.isoformat(timespec='seconds')}")
        return "\n".join(lines) + "\n"

    @property
    def text(self) -> str:
        """Title and body: what chat webhooks and commands receive."""
        return f"{self.title}\n{self.body}"

    def slack_payload(self) -> dict[str, str]:
        """Slack-compatible incoming-webhook JSON (also read by Mattermost, Rocket.Chat...)."""
        return {"text": self.text}
