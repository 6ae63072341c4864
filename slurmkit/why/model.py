"""The one answer shape of ``slurmkit why``: a verdict line first, then its evidence.

Users read the headline in a page or an alert, so it must stand alone; the evidence
says where each fact came from (which Slurm command, which log) so that a doubtful
reader can check it by hand. ``to_json`` is the documented ``--json`` schema
(``schema`` is bumped when a field changes meaning).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

SCHEMA = 1

Kind = Literal["pending", "running", "hung", "ended", "unknown"]
Severity = Literal["ok", "info", "warning", "bad"]


@dataclass(frozen=True)
class Evidence:
    """One fact behind a verdict, with its source (``sacct``, ``squeue``, a log path)."""

    label: str
    text: str
    source: str = ""

    def to_json(self) -> dict[str, str]:
        return {"label": self.label, "text": self.text, "source": self.source}


@dataclass(frozen=True)
class Verdict:
    """What ``why`` concludes about one job (or one array task, or one group of tasks)."""

    job_id: str
    kind: Kind
    headline: str
    severity: Severity = "info"
    evidence: tuple[Evidence, ...] = ()
    advice: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what could not be seen, and why (slurmdbd down, PrivateData)
    data: Mapping[str, object] = field(default_factory=dict)  # the kind's own figures

    def to_json(self) -> dict[str, object]:
        return {
            "schema": SCHEMA,
            "job_id": self.job_id,
            "kind": self.kind,
            "headline": self.headline,
            "severity": self.severity,
            "evidence": [item.to_json() for item in self.evidence],
            "advice": list(self.advice),
            "notes": list(self.notes),
            "data": dict(self.data),
        }
