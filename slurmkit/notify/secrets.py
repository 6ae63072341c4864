"""Files that hold an alert secret (the SMTP password, a webhook URL): whose, and who reads them.

The rule of :mod:`slurmkit.trust` (owned by the caller or root, nobody else can
write it or a directory above it: otherwise someone repoints the mail host or
the webhook and receives the secret), plus one more: a file holding a secret
must not be readable by group or others.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from slurmkit.files import read_text_bounded
from slurmkit.trust import UntrustedPath, check_trusted

MAX_BYTES = 64 * 1024  # a password or a URL


def check_secret_file(path: str | os.PathLike[str], what: str) -> Path:
    """Raise :class:`UntrustedPath` unless only the caller (or root) can read or change it."""
    target = check_trusted(path, what=what)
    mode = stat.S_IMODE(os.stat(target).st_mode)
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        raise UntrustedPath(
            f"refusing {what} {target}: it holds a secret and is readable by group or others "
            f"(mode {mode:04o}); fix it with: chmod go-rw {target}"
        )
    return target


def read_secret_file(path: str | os.PathLike[str], what: str) -> str:
    """The text of a checked secret file, opened without following a link planted meanwhile."""
    target = check_secret_file(path, what)
    return read_text_bounded(
        target, what=what, max_bytes=MAX_BYTES, error=UntrustedPath, errors="replace"
    )
