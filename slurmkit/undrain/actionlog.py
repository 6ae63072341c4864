"""``--log FILE``: one line per action, appended, for the audit trail cron runs leave.

Lines are ``key=value`` words (values shell-quoted), so ``grep node=node-3``
and ``shlex.split`` both work on them.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path


def entry(node: str, action: str, **fields: str) -> str:
    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    words = [stamp, f"node={node}", f"action={action}"]
    words += [f"{key}={shlex.quote(value)}" for key, value in fields.items()]
    return " ".join(words)


def append(path: Path | None, lines: Iterable[str]) -> None:
    """Append ``lines``; nothing happens without a log file."""
    lines = list(lines)
    if path is None or not lines:
        return
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))
