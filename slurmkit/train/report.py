"""What a change to a train did, or in a dry run would do: the one shape every change answers with.

The CLI shows a dry run's report as the plan it asks about, and the real run's as
its outcome, so the preview and the result cannot say different things.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Report:
    """What a change did (or, in a dry run, would do): commands run and one line per effect."""

    train: str
    action: str
    dry_run: bool
    commands: list[list[str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    # The change was made, but train.json or the journal could not say so (exit 1).
    unrecorded: list[str] = field(default_factory=list)

    @property
    def would_change(self) -> bool:
        """Whether the change does something (a forced dry run that skipped it exits 1)."""
        return bool(self.commands) or self.action in ("switch", "settle")

    def to_json(self) -> dict[str, object]:
        return {
            "train": self.train,
            "action": self.action,
            "dry_run": self.dry_run,
            "commands": self.commands,
            "effects": self.lines,
            "notices": self.notices,
            "unrecorded": self.unrecorded,
        }
