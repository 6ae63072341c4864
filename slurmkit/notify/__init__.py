"""Alert delivery for the watchdogs: email (SMTP), webhook (Slack-compatible JSON), command.

:func:`deliver` sends one :class:`Notification` to every target and returns one
:class:`Delivery` per target; a target that is down is a failed delivery (the
caller logs it on stderr), never an exception: the other targets still get the
message and the watchdog still exits with its verdict. That holds for any
exception a channel raises, not only the expected ones (issue 14: a newline in a
job name raised in the email header, and no target was alerted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from slurmkit.notify.message import DeliveryFailed, Notification
from slurmkit.notify.targets import Target, parse_target

if TYPE_CHECKING:
    from slurmkit.notify.email import SmtpConfig

__all__ = ["Delivery", "DeliveryFailed", "Notification", "Target", "deliver", "parse_target"]


@dataclass(frozen=True)
class Delivery:
    target: str
    ok: bool
    error: str | None = None


def deliver(
    notification: Notification, targets: Sequence[Target], smtp: SmtpConfig | None = None
) -> list[Delivery]:
    """Send to each target in turn; ``smtp`` defaults to :func:`load_smtp_config`'s answer."""
    from slurmkit.notify.command import run_command
    from slurmkit.notify.email import load_smtp_config, send_email
    from slurmkit.notify.webhook import send_webhook

    out = []
    for target in targets:
        try:
            if target.kind == "email":
                smtp = smtp or load_smtp_config()
                send_email(notification, target.value, smtp)
            elif target.kind == "webhook":
                send_webhook(notification, target.value, target.display)
            else:
                run_command(notification, target.argv)
        except DeliveryFailed as exc:
            out.append(Delivery(target.display, False, str(exc)))
            continue
        except Exception as exc:  # a bug in one channel must not keep the others silent
            text = f"{type(exc).__name__}: {exc}"
            if smtp is not None and smtp.password:
                text = text.replace(smtp.password, "***")
            out.append(Delivery(target.display, False, text))
            continue
        out.append(Delivery(target.display, True))
    return out
