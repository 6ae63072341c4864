"""Settling an intent a killed run left open: by evidence, one judge per action.

A run killed between its ``will-<verb>`` line and the outcome (``kill -9``, Ctrl-C, cron's
SIGTERM) leaves the intent open in the action log; the next run reads the node and writes
the outcome. The node's state *now* is not the answer by itself: a reboot interrupted
before its request left the node IDLE, as a finished reboot does, and a node the killed
undrain returned may have been drained again since. So each action has a judge that asks
for evidence that outlives the moment, dated against the intent's own stamp:

- a reboot is done only when Slurm shows a ``REBOOT_*`` flag (the request is in) or the
  node's ``BootTime`` is at or after the intent (it rebooted since);
- an undrain or resume is judged against the drain reason's time: the drain the intent
  saw still there (same reason time) is "not done", a drain dated after the intent is
  "returned, drained again since";
- when the state cannot tell (node unknown to Slurm, no boot or reason time, a node down
  with no reboot flag), the answer is *unknown*, never "failed".

:data:`JUDGES` is the table; the README's "Faults" section prints the same one (held by
``tests/unit/test_settle_judges.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from slurmkit.slurm.records import Node

DONE = "done"
NOT_DONE = "not done"
UNKNOWN = "unknown"

REBOOT_FLAGS = frozenset({"REBOOT_REQUESTED", "REBOOT_ISSUED"})


@dataclass(frozen=True)
class Asked:
    """What the intent line says: when it was written, and its fields (reason, drained_at)."""

    when: datetime | None
    fields: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, stamp: str, fields: Mapping[str, str]) -> Asked:
        return cls(parse_stamp(stamp), dict(fields))


@dataclass(frozen=True)
class Verdict:
    result: str  # DONE | NOT_DONE | UNKNOWN
    why: str  # the evidence, in a few words, for the log line and stderr


@dataclass(frozen=True)
class Judge:
    """One row of the table: the evidence for each answer, and the function that weighs it."""

    action: str
    done: str
    not_done: str
    unknown: str
    weigh: Callable[[Node, Asked], Verdict]

    def __call__(self, node: Node | None, asked: Asked) -> Verdict:
        if node is None:
            return Verdict(UNKNOWN, "not known to Slurm")
        return self.weigh(node, asked)


def parse_stamp(stamp: str) -> datetime | None:
    """An intent's ISO stamp (whole seconds, with its offset); None when it does not parse."""
    try:
        when = datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else None


def _at(when: datetime) -> str:
    return when.isoformat(timespec="seconds")


def drained_at(node: Node) -> str:
    """The drain's own date as the intent records it (``drained_at=``); "" when Slurm shows none."""
    return _at(node.reason_time) if node.reason_time is not None else ""


def _drained_again(node: Node, asked: Asked, returned: str) -> Verdict:
    """A node drained (or down) now: the same drain the intent saw, or a newer one?"""
    when = node.reason_time
    if when is None or asked.when is None:
        return Verdict(UNKNOWN, f"{node.state_text}, and the drain's time is not shown")
    seen = asked.fields.get("drained_at", "")
    if seen and _at(when) == seen:
        return Verdict(NOT_DONE, f"the drain of {seen} is still there")
    reason = f" ({node.reason})" if node.reason else ""
    # With the drain's own date recorded, another drain from the intent's second on is a new
    # one; without it (a log from before drained_at), that second may be the drain it saw.
    newer = when >= asked.when if seen else when > asked.when
    if newer:
        return Verdict(DONE, f"{returned}, drained again since {_at(when)}{reason}")
    if seen:
        return Verdict(UNKNOWN, f"drained with another reason from {_at(when)}{reason}")
    if when < asked.when:
        return Verdict(NOT_DONE, f"still drained since {_at(when)}")
    return Verdict(UNKNOWN, f"drained in the very second of the intent ({_at(when)})")


def _undrain(node: Node, asked: Asked) -> Verdict:
    if "DRAIN" not in node.flags:
        return Verdict(DONE, "not drained")
    return _drained_again(node, asked, "returned")


def _resume(node: Node, asked: Asked) -> Verdict:
    if "DRAIN" not in node.flags and not node.is_down:
        return Verdict(DONE, "neither drained nor down")
    return _drained_again(node, asked, "resumed")


def _drain(node: Node, asked: Asked) -> Verdict:
    if "DRAIN" not in node.flags:
        return Verdict(NOT_DONE, "not drained")
    reason = asked.fields.get("reason")
    if reason is None or node.reason == reason:
        return Verdict(DONE, "drained with this reason" if reason is not None else "drained")
    return Verdict(UNKNOWN, f"drained, but with another reason ({node.reason})")


def _reboot(node: Node, asked: Asked) -> Verdict:
    flags = sorted(node.flags & REBOOT_FLAGS)
    if flags:
        return Verdict(DONE, f"{'+'.join(flags)}: the request is in")
    booted = node.boot_time
    if booted is None or asked.when is None:
        return Verdict(UNKNOWN, "no reboot flag, and the boot time is not shown")
    if booted >= asked.when:
        return Verdict(DONE, f"booted {_at(booted)}, after the intent")
    if node.is_down or node.is_not_responding:
        return Verdict(UNKNOWN, f"{node.state_text} without a reboot flag, booted {_at(booted)}")
    return Verdict(NOT_DONE, f"no reboot flag, booted {_at(booted)}, before the intent")


JUDGES: dict[str, Judge] = {
    "will-undrain": Judge(
        "will-undrain",
        done="not drained; or drained again after the intent (a newer reason time)",
        not_done="the drain the intent saw is still there (same reason time)",
        unknown="node unknown to Slurm; no reason time shown; another, older drain",
        weigh=_undrain,
    ),
    "will-resume": Judge(
        "will-resume",
        done="neither drained nor down; or drained/down again after the intent",
        not_done="the drain the intent saw is still there (same reason time)",
        unknown="node unknown to Slurm; no reason time shown; another, older drain",
        weigh=_resume,
    ),
    "will-drain": Judge(
        "will-drain",
        done="drained with the intent's reason",
        not_done="not drained",
        unknown="node unknown to Slurm; drained with another reason",
        weigh=_drain,
    ),
    "will-reboot": Judge(
        "will-reboot",
        done="REBOOT_REQUESTED or REBOOT_ISSUED; or BootTime at or after the intent",
        not_done="no reboot flag, up, BootTime before the intent",
        unknown="node unknown to Slurm; no BootTime; down or not responding without a flag",
        weigh=_reboot,
    ),
}


def judge(action: str, node: Node | None, asked: Asked) -> Verdict:
    """The verdict of ``action``'s judge (``will-undrain``, ``will-reboot``, ...)."""
    return JUDGES[action](node, asked)
