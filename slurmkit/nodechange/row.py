"""The one row type of a node change: one node, from the plan to the read-back.

``node drain|resume|reboot`` and ``undrain`` plan in their own words (a leftover check,
a reason, a reboot flag), but each node they change is this row for :mod:`.change`: what
it was (``before``, the drain's date), what the change found out (``result``, ``after``)
and what the table says (``action``, ``why``), which each command words for itself.
"""

from __future__ import annotations

from dataclasses import dataclass

SKIPPED = "skipped"

# What the change found out about one node (Row.result), judged on the read-back.
DONE = "done"
FAILED = "failed"
UNKNOWN = "unknown"  # no answer and no read-back, or the state cannot tell: left open
SENT = "sent"  # Slurm took the call, but the read-back failed: left open


@dataclass
class Row:
    node: str
    before: str
    reason: str = ""
    found: str = "-"
    action: str = ""
    why: str = ""
    after: str = ""
    drained_at: str = ""  # the drain's own date (reason time), "" when not drained
    result: str = ""  # DONE, FAILED, UNKNOWN or SENT once changed; "" before
    evidence: str = ""  # the settle judge's words for ``result``

    def skip(self, why: str) -> None:
        self.action, self.why = SKIPPED, why

    @property
    def text(self) -> str:
        return f"{self.action}: {self.why}" if self.why else self.action
