"""``--notify`` targets: ``email:ADDR``, ``webhook:URL``, ``cmd:COMMAND``, checked up front.

A target that cannot work (no ``@``, not http(s), a command that does not split) is a
usage error before any check runs, not a failed delivery at 3 a.m. Webhook URLs carry
their secret in the path (Slack's do), so they are shown redacted; and since argv is
visible to every local user (``ps``), the URL can come from the environment
(``webhook:env:NAME``) or from a file only its owner can read (``webhook:file:PATH``,
checked like the SMTP config: :mod:`slurmkit.notify.secrets`).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from urllib.parse import urlsplit

from slurmkit.errors import UsageError
from slurmkit.trust import UntrustedPath

_EMAIL = re.compile(r"[^@\s<>,;]+@[^@\s<>,;]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BREAKS = "\r\n\x00"


@dataclass(frozen=True)
class Target:
    kind: str  # email, webhook, cmd
    value: str
    source: str | None = None  # webhook: "env:NAME" or "file:PATH" the URL was read from

    @property
    def display(self) -> str:
        """How the target is named in messages: webhook URLs without path or query."""
        if self.kind == "webhook" and self.source:
            return f"webhook:{self.source}"
        if self.kind == "webhook":
            parts = urlsplit(self.value)
            hidden = "/…" if parts.path not in ("", "/") or parts.query else ""
            return f"webhook:{parts.scheme}://{parts.netloc.rpartition('@')[2]}{hidden}"
        return f"{self.kind}:{self.value}"

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.value)


def parse_target(text: str) -> Target:
    kind, sep, value = text.partition(":")
    if not sep or kind not in ("email", "webhook", "cmd"):
        raise UsageError(f"--notify {text!r}: expected email:ADDRESS, webhook:URL or cmd:COMMAND")
    if any(ch in value for ch in _BREAKS):
        raise UsageError(f"--notify {kind}: holds a line break")
    if kind == "email" and not _EMAIL.fullmatch(value):
        raise UsageError(f"--notify {text!r}: not an email address")
    source = None
    if kind == "webhook":
        value, source = _webhook_url(value)
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            shown = f"the URL from {source}" if source else repr(value)
            raise UsageError(f"--notify webhook: {shown} is not an http(s) URL")
    if kind == "cmd":
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise UsageError(f"--notify {text!r}: {exc}") from None
        if not words:
            raise UsageError("--notify cmd: needs a command")
    return Target(kind, value, source)


def _webhook_url(value: str) -> tuple[str, str | None]:
    """(URL, where it came from): ``env:NAME``, ``file:PATH``, or the URL itself (None)."""
    how, _, rest = value.partition(":")
    if how == "env":
        if not _ENV_NAME.fullmatch(rest):
            raise UsageError(f"--notify webhook:env:{rest}: not an environment variable name")
        url = os.environ.get(rest, "").strip()
        if not url:
            raise UsageError(f"--notify webhook:env:{rest}: {rest} is not set")
    elif how == "file":
        from slurmkit.notify.secrets import read_secret_file

        try:
            text = read_secret_file(rest, "webhook URL file")
        except (UntrustedPath, OSError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise UsageError(f"--notify webhook:file:{rest}: {detail}") from None
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if len(lines) != 1:
            raise UsageError(f"--notify webhook:file:{rest}: must hold one URL on one line")
        url = lines[0]
    else:
        return value, None
    if any(ch in url for ch in _BREAKS):
        raise UsageError(f"--notify webhook:{value}: the URL holds a line break")
    return url, value
