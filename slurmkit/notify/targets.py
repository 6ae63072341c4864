"""``--notify`` targets: ``email:ADDR``, ``webhook:URL``, ``cmd:COMMAND``, checked up front.

A target that cannot work (no ``@``, not http(s), a command that does not split) is a
usage error before any check runs, not a failed delivery at 3 a.m. Webhook URLs carry
their secret in the path (Slack's do), so they are shown redacted.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from urllib.parse import urlsplit

from slurmkit.errors import UsageError

_EMAIL = re.compile(r"[^@\s<>,;]+@[^@\s<>,;]+")


@dataclass(frozen=True)
class Target:
    kind: str  # email, webhook, cmd
    value: str

    @property
    def display(self) -> str:
        """How the target is named in messages: webhook URLs without path or query."""
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
    if any(ch in value for ch in "\r\n\x00"):
        raise UsageError(f"--notify {kind}: holds a line break")
    if kind == "email" and not _EMAIL.fullmatch(value):
        raise UsageError(f"--notify {text!r}: not an email address")
    if kind == "webhook":
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--notify webhook: {value!r} is not an http(s) URL")
    if kind == "cmd":
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise UsageError(f"--notify {text!r}: {exc}") from None
        if not words:
            raise UsageError("--notify cmd: needs a command")
    return Target(kind, value)
