"""A real SMTP server on loopback (aiosmtpd) that keeps what it is sent: the one the tests
of alerts talk to, plaintext or with TLS, with or without a login.

``serving(...)`` runs one for the length of a ``with`` (or a fixture's ``yield from``);
its :class:`Mailbox` keeps every message as bytes, each envelope, and each login.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


def free_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Mailbox:
    """Every message the server took; ``accept`` the one (user, password) it takes, or any."""

    accept: tuple[str, str] | None = None
    messages: list[bytes] = field(default_factory=list)
    envelopes: list[tuple[str, list[str]]] = field(default_factory=list)
    logins: list[str] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(envelope.content)
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 OK"

    def authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any):
        from aiosmtpd.smtp import AuthResult

        login = data.login.decode()
        ok = self.accept is None or (login, data.password.decode()) == self.accept
        if ok:
            self.logins.append(login)
        return AuthResult(success=ok)


@dataclass(frozen=True)
class Server:
    port: int
    box: Mailbox


@contextmanager
def serving(box: Mailbox | None = None, **kwargs: Any) -> Iterator[Server]:
    """An aiosmtpd server on 127.0.0.1 for the block; ``kwargs``: its TLS contexts."""
    from aiosmtpd.controller import Controller

    box = Mailbox() if box is None else box
    port = free_port()
    controller = Controller(
        box,
        hostname="127.0.0.1",
        port=port,
        authenticator=box.authenticate,
        auth_require_tls=False,
        **kwargs,
    )
    controller.start()
    try:
        yield Server(port, box)
    finally:
        controller.stop()
