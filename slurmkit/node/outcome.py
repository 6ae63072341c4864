"""What a node command did (or would do) to each node, and the exit code that means.

One row per node named on the command line, in the order given, so that a table,
``--json`` and the exit code all tell the same story.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slurmkit.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK
from slurmkit.nodechange.row import SKIPPED as SKIPPED  # the table word, re-exported
from slurmkit.nodechange.row import Row

# Actions, as shown in the table (SKIPPED is the core's).
DONE = "done"
WOULD = "would"
FAILED = "failed"
UNKNOWN = "unknown"
TABLE_HEADERS = ["node", "state before", "found", "action", "state now"]


@dataclass
class NodeRow(Row):
    """One node from planning to read-back: the change core's row, with what the check found."""

    processes: list[str] = field(default_factory=list)

    def as_row(self) -> list[str]:
        before = f"{self.before} ({self.reason})" if self.reason else self.before
        return [self.node, before, self.found, self.text, self.after or self.before]

    def to_json(self) -> dict[str, object]:
        return {
            "node": self.node,
            "before": self.before,
            "reason": self.reason,
            "found": self.found,
            "action": self.action,
            "why": self.why,
            "after": self.after or None,
            "processes": self.processes,
        }


@dataclass
class NodeReport:
    """The whole run: ``verb`` (drain, resume, reboot), rows, and what went wrong."""

    verb: str
    rows: list[NodeRow]
    dry_run: bool = False
    declined: bool = False
    error: str = ""
    notes: list[str] = field(default_factory=list)
    reconciled: list[str] = field(default_factory=list)
    validation: dict[str, object] | None = None

    def by_action(self, *actions: str) -> list[NodeRow]:
        return [r for r in self.rows if r.action in actions]

    @property
    def would_change(self) -> bool:
        return bool(self.by_action(WOULD))

    @property
    def exit_code(self) -> int:
        """0 every node done (or would be); 1 some skipped, failed or left unknown; 2 error."""
        if self.error:
            return EXIT_ERROR
        if self.declined:
            return EXIT_FINDINGS
        good = (WOULD, DONE) if self.dry_run else (DONE,)
        return EXIT_OK if all(r.action in good for r in self.rows) else EXIT_FINDINGS

    def to_json(self) -> dict[str, object]:
        return {
            "command": f"node {self.verb}",
            "dry_run": self.dry_run,
            "declined": self.declined,
            "error": self.error or None,
            "notes": self.notes,
            "reconciled": self.reconciled,
            "validation": self.validation,
            "nodes": [r.to_json() for r in self.rows],
        }
