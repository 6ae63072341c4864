"""What undrain did (or would do) to each selected node, and the exit code it means."""

from __future__ import annotations

from dataclasses import dataclass, field

from slurmkit.errors import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK
from slurmkit.nodechange import settle
from slurmkit.nodechange.leftovers import CheckResult, Process
from slurmkit.nodechange.row import SKIPPED as SKIPPED  # the table word, re-exported
from slurmkit.nodechange.row import Row
from slurmkit.slurm.records import Node

# Actions, as shown in the table and the log.
RETURNED = "returned"
WOULD_RETURN = "would return"
WOULD_KILL = "would kill leftovers, then return if clean"
NOT_RETURNED = "not returned"
UNCONFIRMED = "undrain sent, state unknown"
UNKNOWN_OUTCOME = "unknown: no answer from Slurm"


@dataclass
class NodeOutcome(Row):
    """One selected node from selection to read-back: the change core's row, with the check."""

    killed: list[str] = field(default_factory=list)
    processes: list[Process] = field(default_factory=list)
    check: CheckResult | None = field(default=None, repr=False)
    record: Node | None = field(default=None, repr=False)  # as selected: compared before update

    @classmethod
    def of(cls, node: Node) -> NodeOutcome:
        return cls(
            node.name,
            node.state_text,
            node.reason or "",
            after=node.state_text,
            drained_at=settle.drained_at(node),
            record=node,
        )

    @property
    def old_state(self) -> str:
        return self.before

    @property
    def new_state(self) -> str:
        return self.after

    @property
    def returned(self) -> bool:
        return self.action == RETURNED

    @property
    def action_text(self) -> str:
        return self.text

    def as_row(self) -> list[str]:
        old = f"{self.old_state} ({self.reason})" if self.reason else self.old_state
        return [self.node, old, self.found, self.action_text, self.new_state]


TABLE_HEADERS = ["node", "old state (reason)", "found", "action", "new state"]


@dataclass
class UndrainReport:
    outcomes: list[NodeOutcome]
    dry_run: bool = False
    aborted: bool = False
    transport: str | None = None
    slurm_calls: int = 0
    error: str = ""
    reconciled: list[str] = field(default_factory=list)  # intents an earlier run left open

    @property
    def exit_code(self) -> int:
        """0 every selected node returned (or would be); 1 some skipped; 2 error."""
        if self.error:
            return EXIT_ERROR
        if self.aborted:
            return EXIT_FINDINGS if self.outcomes else EXIT_OK
        good = (WOULD_RETURN, WOULD_KILL) if self.dry_run else (RETURNED,)
        return EXIT_OK if all(o.action in good for o in self.outcomes) else EXIT_FINDINGS

    def to_json(self) -> dict[str, object]:
        return {
            "dry_run": self.dry_run,
            "aborted": self.aborted,
            "transport": self.transport,
            "slurm_calls": self.slurm_calls,
            "error": self.error or None,
            "reconciled": self.reconciled,
            "nodes": [
                {
                    "node": o.node,
                    "old_state": o.old_state,
                    "reason": o.reason,
                    "found": o.found,
                    "verdict": o.check.verdict if o.check else None,
                    "processes": o.processes,
                    "killed": o.killed,
                    "action": o.action,
                    "why": o.why,
                    "new_state": o.new_state,
                    "returned": o.returned,
                }
                for o in self.outcomes
            ],
        }
