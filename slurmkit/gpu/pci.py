"""PCI addresses of GPUs, as the driver's Xid line, nvidia-smi and sysfs each spell them.

An Xid line names its GPU ``PCI:0000:3b:00`` (domain, bus, device), nvidia-smi
``00000000:3B:00.0`` and sysfs ``0000:3b:00.0``; they are compared as numbers, so
the same GPU is the same address whatever tool printed it.
"""

from __future__ import annotations

import re

Address = tuple[int, int, int]  # domain, bus, device

_ADDRESS = re.compile(
    r"(?P<domain>[0-9a-fA-F]{4,8}):(?P<bus>[0-9a-fA-F]{2}):(?P<device>[0-9a-fA-F]{2})"
    r"(?:\.[0-7])?"
)


def address(text: str) -> Address | None:
    """The address in ``text`` (all of it), or None when it is not one."""
    match = _ADDRESS.fullmatch(text.strip())
    if match is None:
        return None
    return int(match["domain"], 16), int(match["bus"], 16), int(match["device"], 16)


def show(addr: Address) -> str:
    """The Xid line's spelling: ``0000:3b:00``."""
    return f"{addr[0]:04x}:{addr[1]:02x}:{addr[2]:02x}"
