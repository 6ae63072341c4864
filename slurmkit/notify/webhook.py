"""Webhook alerts: a Slack-compatible JSON POST (``{"text": ...}``) with a timeout."""

from __future__ import annotations

import json

from slurmkit.notify.message import DeliveryFailed, Notification

TIMEOUT = 15.0


def send_webhook(
    notification: Notification, url: str, display: str, timeout: float = TIMEOUT
) -> None:
    """POST the message; a non-2xx answer, a refused connection or a timeout is DeliveryFailed."""
    import urllib.error
    import urllib.request

    data = json.dumps(notification.slack_payload()).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "slurmkit-watch"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        raise DeliveryFailed(f"{display}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryFailed(f"{display}: {reason}") from None
    if not 200 <= status < 300:
        raise DeliveryFailed(f"{display}: HTTP {status}")
