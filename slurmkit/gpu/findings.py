"""What a GPU health check found, and what to do about it (NVIDIA's guidance).

The actions are ordered by how much they cost: a node whose worst finding says
"replace" needs a hardware ticket, "reset" only a GPU reset or a reboot. The
verdict's status decides whether the node is kept out of jobs: ``fail`` only for
findings about the hardware, never for an application's own fault (Xid 13/31/43),
which is reported as a warning with its action.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

PASS = "pass"
FAIL = "fail"
SKIPPED = "skipped"
UNKNOWN = "unknown"


class Action(enum.IntEnum):
    """From least to most drastic; a verdict's action is its findings' worst."""

    NONE = 0
    WATCH = 1
    INVESTIGATE_APP = 2
    CHECK_COOLING = 3
    RESET = 4
    REPLACE = 5

    @property
    def text(self) -> str:
        return _ACTION_TEXT[self]


_ACTION_TEXT = {
    Action.NONE: "none",
    Action.WATCH: "watch: no action yet, look again if it grows",
    Action.INVESTIGATE_APP: "investigate the application (its own fault, not the GPU's)",
    Action.CHECK_COOLING: "check the node's cooling and power (the GPU slows itself down)",
    Action.RESET: "reset the GPU (nvidia-smi -r) or reboot the node, then check again",
    Action.REPLACE: "replace the GPU (RMA: attach nvidia-bug-report.sh output)",
}


@dataclass(frozen=True)
class GpuFinding:
    """One signal on one GPU. ``fatal``: the node should not take jobs until acted on."""

    gpu: str
    signal: str
    detail: str
    action: Action
    fatal: bool

    def to_json(self) -> dict[str, object]:
        return {
            "gpu": self.gpu,
            "signal": self.signal,
            "detail": self.detail,
            "action": self.action.name.lower(),
            "action_text": self.action.text,
            "fatal": self.fatal,
        }

    def line(self) -> str:
        return f"{self.gpu}: {self.signal} ({self.detail}) -> {self.action.name.lower()}"


@dataclass(frozen=True)
class Verdict:
    """A check's outcome on one node: status, why (for skipped/unknown), findings."""

    check: str
    status: str
    reason: str = ""
    findings: tuple[GpuFinding, ...] = field(default_factory=tuple)
    gpus: int = 0

    @property
    def action(self) -> Action:
        return max((f.action for f in self.findings), default=Action.NONE)

    @property
    def detail(self) -> str:
        """One line for a scan table: the reason, or the findings worst first."""
        if self.status in (SKIPPED, UNKNOWN) or not self.findings:
            return self.reason
        worst = sorted(self.findings, key=lambda f: (not f.fatal, -f.action))
        head = "; ".join(f.line() for f in worst[:3])
        more = f"; +{len(worst) - 3} more" if len(worst) > 3 else ""
        prefix = f"action: {self.action.name.lower()}: "
        if self.status == PASS:
            prefix = "warning: " + prefix
        return prefix + head + more

    def to_json(self) -> dict[str, object]:
        return {
            "check": self.check,
            "status": self.status,
            "reason": self.reason,
            "action": self.action.name.lower(),
            "gpus": self.gpus,
            "findings": [f.to_json() for f in self.findings],
        }


def from_findings(check: str, findings: list[GpuFinding], gpus: int, summary: str) -> Verdict:
    """fail when any finding is fatal, else pass (warnings kept in the findings)."""
    status = FAIL if any(f.fatal for f in findings) else PASS
    if findings:
        fatal = sum(f.fatal for f in findings)
        summary = f"{len(findings)} finding(s), {fatal} needing action, on {gpus} GPU(s)"
    return Verdict(check, status, summary, tuple(findings), gpus)
