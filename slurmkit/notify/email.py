"""Email alerts over SMTP (smtplib), configured by a file or the environment, never echoed.

Settings, lowest first: the ``[smtp]`` table of the slurmkit config files, layered
as every other section (:func:`slurmkit.config.load`: ``/etc/slurmkit/config.toml``,
then $SLURMKIT_CONFIG or ~/.config/slurmkit/config.toml; issue 28: the site's file
was shown by ``config show`` but never used, so alerts went to localhost:25)::

    [smtp]
    host = "smtp.example.org"
    port = 587
    starttls = true          # or ssl = true for SMTPS (port 465)
    user = "alerts"
    password = "..."         # the file must be chmod 600 (refused otherwise)
    from = "slurmkit@example.org"
    # insecure_plaintext = true   # allow a login without TLS (the password in clear)

then ``SLURMKIT_SMTP_HOST``, ``_PORT``, ``_USER``, ``_PASSWORD``, ``_FROM``,
``_STARTTLS``, ``_SSL``, ``_INSECURE_PLAINTEXT``. Without any, mail goes to
localhost:25 (a local MTA). The password is kept out of ``repr`` and scrubbed from
every error message.

Issue 14: TLS (SMTPS or STARTTLS) verifies the server's certificate and name
against the system's CAs, so a man in the middle gets no password; a login
without TLS is refused unless ``insecure_plaintext = true``; a config file that
holds the password must be the caller's (or root's) and readable and writable by
nobody else, and any file that sets an SMTP key and others can write is refused
whenever a password is used (its writer could point ``host`` at their own server).
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
from slurmkit.notify.secrets import check_secret_file
from slurmkit.printable import printable
from slurmkit.trust import check_trusted

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
    insecure_plaintext: bool = False

    @property
    def tls(self) -> bool:
        return self.ssl or self.starttls

    @property
    def effective_port(self) -> int:
        return self.port or (465 if self.ssl else 25)

    @property
    def effective_sender(self) -> str:
        import getpass

        return self.sender or f"{getpass.getuser()}@{socket.getfqdn()}"


_KEYS = ("host", "port", "user", "password", "from", "starttls", "ssl", "insecure_plaintext")


def load_smtp_config(
    path: Path | None = None, environ: Mapping[str, str] | None = None
) -> SmtpConfig:
    """The settings from the config files (or the one file ``path``), then the environment."""
    env = os.environ if environ is None else environ
    values, origins = _file_values(path, env)
    for key in _KEYS:
        name = f"SLURMKIT_SMTP_{key.upper()}"
        if env.get(name):
            values[key] = env[name]
    try:
        config = SmtpConfig(
            host=str(values.get("host") or "localhost"),
            port=int(values["port"]) if values.get("port") not in (None, "") else None,
            user=str(values["user"]) if values.get("user") else None,
            password=str(values["password"]) if values.get("password") else None,
            sender=str(values["from"]) if values.get("from") else None,
            starttls=_flag(values.get("starttls")),
            ssl=_flag(values.get("ssl")),
            insecure_plaintext=_flag(values.get("insecure_plaintext")),
        )
    except (TypeError, ValueError):
        raise UsageError("SMTP settings: port must be a number") from None
    _check_sources(origins, config)
    if config.user and not config.tls and not config.insecure_plaintext:
        raise UsageError(
            "SMTP settings: a login without TLS sends the password in clear: set "
            "starttls = true or ssl = true, or insecure_plaintext = true to allow it"
        )
    return config


def _check_sources(origins: Mapping[str, Path], config: SmtpConfig) -> None:
    """A file giving the password must be private; with a login, every file giving a key
    must be one nobody else can change (its writer could point the host elsewhere)."""
    password_file = origins.get("password")
    for source in dict.fromkeys(origins.values()):
        if source == password_file:
            check_secret_file(source, "config file")
        elif config.user or config.password:
            check_trusted(source, what="config file")


def _file_values(
    path: Path | None, env: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Path]]:
    """(the [smtp] keys of the files, the file each one came from)."""
    from slurmkit import config

    if path is not None:
        table = config.load_toml(path, "config file").get("smtp", {})
        if not isinstance(table, dict):
            raise UsageError(f"config file {path}: [smtp] must be a table")
        return dict(table), dict.fromkeys(table, path)
    layered = config.load(env)
    table = layered.values.get("smtp", {})
    if not isinstance(table, dict):
        raise UsageError(f"config file {layered.origin(('smtp',)).path}: [smtp] must be a table")
    origins = {key: layered.origin(("smtp", key)).path for key in table}
    return dict(table), {key: where for key, where in origins.items() if where is not None}


def _flag(value: object) -> bool:
    if isinstance(value, bool):
        return value
    return str(value or "").strip().lower() in _TRUE


def build_message(notification: Notification, to: str, sender: str) -> Any:
    """The message; header values with control characters escaped (a job name or a watched
    path may hold a newline: raw, it raised in the header and no target was alerted)."""
    from email.message import EmailMessage
    from email.utils import format_datetime

    msg = EmailMessage()
    msg["Subject"] = printable(notification.title)
    msg["From"] = printable(sender)
    msg["To"] = printable(to)
    msg["Date"] = format_datetime(notification.time)
    msg.set_content(notification.body)
    return msg


def send_email(notification: Notification, to: str, config: SmtpConfig) -> None:
    """Send one message; any failure is a DeliveryFailed whose text never holds the password.

    TLS (SMTPS or STARTTLS) verifies the certificate with the system's CAs; STARTTLS
    that the server does not offer is a failure, never a fallback to plain text.
    """
    import smtplib
    import ssl

    where = f"{config.host}:{config.effective_port}"
    if config.user and not config.tls and not config.insecure_plaintext:
        raise DeliveryFailed(
            f"SMTP {where}: refusing to log in without TLS (set starttls or ssl, or "
            "insecure_plaintext = true)"
        )
    try:
        msg = build_message(notification, to, config.effective_sender)
        context = ssl.create_default_context()
        smtp: smtplib.SMTP  # SMTP_SSL is one
        if config.ssl:
            smtp = smtplib.SMTP_SSL(
                config.host, config.effective_port, timeout=config.timeout, context=context
            )
        else:
            smtp = smtplib.SMTP(config.host, config.effective_port, timeout=config.timeout)
        with smtp:
            if config.starttls and not config.ssl:
                smtp.starttls(context=context)
            if config.user:
                smtp.login(config.user, config.password or "")
            smtp.send_message(msg)
    except Exception as exc:  # one channel's failure, whatever it is, is a failed delivery
        detail = scrub(str(exc) or type(exc).__name__, config)
        raise DeliveryFailed(f"SMTP {where}: {detail}") from None


def scrub(text: str, config: SmtpConfig) -> str:
    if config.password:
        return text.replace(config.password, "***")
    return text
