"""What a lint rule reports, and the rule itself: an id, a default severity, a check.

Rules are small functions over a parsed :class:`~slurmkit.lint.script.Script`, so
each can be tested on its own with a few lines of script text; the severity is
the rule's default, and a rule may raise or lower it per finding (the
cpus-per-task rules depend on the Slurm version).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slurmkit.lint.context import LintContext
    from slurmkit.lint.script import Script

ERROR = "error"
WARNING = "warning"
# Shown only with ``lint --info``: a rule whose errors and warnings were right less
# than 90% of the time on the corpus of published scripts (issue 21 item 5), or a
# finding whose premise lint cannot know (a cluster that may not manage GPUs as GRES).
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one line; ``fix`` says what to write instead."""

    file: str
    line: int
    severity: str
    rule: str
    message: str
    fix: str

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "severity": self.severity,
            "rule": self.rule,
            "message": self.message,
            "fix": self.fix,
        }


Check = Callable[["Script", "LintContext"], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    summary: str
    check: Check

    def __call__(self, script: Script, context: LintContext) -> list[Finding]:
        """The rule's findings; an ``info`` rule's are all info, whatever the check said.

        A rule is lowered to info by its declared severity alone (the measured precision
        in :mod:`slurmkit.lint.precision`), so its checks need not change with it.
        """
        found = list(self.check(script, context))
        if self.severity == INFO:
            return [f if f.severity == INFO else replace(f, severity=INFO) for f in found]
        return found
