"""Reading the ``key=value`` lines ``undrain --log`` and the node commands wrote before.

Until the one JSON-lines audit log (:mod:`.auditlog`), each line was
``<stamp> node=N action=A key=value...`` (values shell-quoted). Such lines stay in logs a
cron job appended to for years, and an intent among them a killed run left open must
still be settled, so they are read here; nothing writes them any more.
"""

from __future__ import annotations

import shlex

# (kind, token, node, action, time, fields): the fields of an auditlog.Record
Parsed = tuple[str, str, str, str, str, dict[str, str]]


def parse(line: str) -> Parsed | None:
    """One old line as a record, or None (torn by a crash mid-write, or not a record)."""
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    if len(words) < 3:
        return None
    pairs = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    node, action = pairs.pop("node", ""), pairs.pop("action", "")
    if not node or not action:
        return None
    token = pairs.pop("token", "")
    kind = "intent" if action.startswith("will-") else "outcome" if token else "note"
    return kind, token, node, action, words[0], pairs
