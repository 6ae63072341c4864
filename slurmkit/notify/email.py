"""Email alerts over SMTP (smtplib), configured by a file or the environment, never echoed.

Settings, lowest first: the ``[smtp]`` table of the slurmkit config file
($SLURMKIT_CONFIG, else ~/.config/slurmkit/config.toml)::

    [smtp]
    host = "smtp.example.org"
    port = 587
    starttls = true          # or ssl = true for SMTPS (port 465)
    user = "alerts"
    password = "..."         # keep the file chmod 600
    from = "slurmkit@example.org"

then ``SLURMKIT_SMTP_HOST``, ``_PORT``, ``_USER``, ``_PASSWORD``, ``_FROM``,
``_STARTTLS``, ``_SSL``. Without any, mail goes to localhost:25 (a local MTA). The
password is kept out of ``repr`` and scrubbed from every error message.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slurmkit.errors import UsageError
from slurmkit.notify.message import DeliveryFailed, Notification

TIMEOUT = 15.0
_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class SmtpConfig:
    host: str = "localhost"
    port: int | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    sender: str | None = None
    starttls: bool = False
    ssl: bool = False
    timeout: float = TIMEOUT

    @property
    def effective_port(self) -> int:
        return self.port or (465 if self.ssl else 25)

    @property
    def effective_sender(self) -> str:
        import getpass

        return self.sender or f"{getpass.getuser()}@{socket.getfqdn()}"


def load_smtp_config(
    path: Path | None = None, environ: Mapping[str, str] | None = None
) -> SmtpConfig:
    env = os.environ if environ is None else environ
    values = _file_values(path, env)
    for key in ("host", "port", "user", "password", "from", "starttls", "ssl"):
        name = f"SLURMKIT_SMTP_{key.upper()}"
        if env.get(name):
            values[key] = env[name]
    try:
        return SmtpConfig(
            host=str(values.get("host") or "localhost"),
            port=int(values["port"]) if values.get("port") not in (None, "") else None,
            user=str(values["user"]) if values.get("user") else None,
            password=str(values["password"]) if values.get("password") else None,
            sender=str(values["from"]) if values.get("from") else None,
            starttls=_flag(values.get("starttls")),
            ssl=_flag(values.get("ssl")),
        )
    except (TypeError, ValueError):
        raise UsageError("SMTP settings: port must be a number") from None


def _file_values(path: Path | None, env: Mapping[str, str]) -> dict[str, Any]:
    from slurmkit.templating.config import ENV_VAR, default_path, load_toml

    chosen = path or (Path(env[ENV_VAR]) if env.get(ENV_VAR) else default_path())
    if path is None and not env.get(ENV_VAR) and not chosen.exists():
        return {}
    table = load_toml(chosen, "config file").get("smtp", {})
    if not isinstance(table, dict):
        raise UsageError(f"config file {chosen}: [smtp] must be a table")
    return dict(table)


def _flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    return str(value or "").strip().lower() in _TRUE


def build_message(notification: Notification, to: str, sender: str) -> Any:
    from email.message import EmailMessage
    from email.utils import format_datetime

    msg = EmailMessage()
    msg["Subject"] = notification.title
    msg["From"] = sender
    msg["To"] = to
    msg["Date"] = format_datetime(notification.time)
    msg.set_content(notification.body)
    return msg


def send_email(notification: Notification, to: str, config: SmtpConfig) -> None:
    """Send one message; any failure is a DeliveryFailed whose text never holds the password."""
    import smtplib
    import ssl

    msg = build_message(notification, to, config.effective_sender)
    smtp_class = smtplib.SMTP_SSL if config.ssl else smtplib.SMTP
    where = f"{config.host}:{config.effective_port}"
    try:
        with smtp_class(config.host, config.effective_port, timeout=config.timeout) as smtp:
            if config.starttls and not config.ssl:
                smtp.starttls(context=ssl.create_default_context())
            if config.user:
                smtp.login(config.user, config.password or "")
            smtp.send_message(msg)
    except (OSError, smtplib.SMTPException) as exc:
        detail = scrub(str(exc) or type(exc).__name__, config)
        raise DeliveryFailed(f"SMTP {where}: {detail}") from None


def scrub(text: str, config: SmtpConfig) -> str:
    if config.password:
        return text.replace(config.password, "***")
    return text
