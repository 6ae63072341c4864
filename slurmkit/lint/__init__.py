"""Static checks of sbatch scripts: the mistakes that cost a training hours or days.

    >>> from slurmkit.lint import lint_text
    >>> [f.rule for f in lint_text("#!/bin/bash\\n#SBATCH -c 8\\n#SBATCH -t 10\\nsrun x\\n")]
    ['srun-cpus-per-task']

Each rule is a small function over a parsed :class:`~slurmkit.lint.script.Script`
(see :mod:`slurmkit.lint.rules`); a finding carries the file, line, severity, rule
id, what is wrong and the fix. ``# slurmkit-lint: disable=RULE`` on the line or the
line above silences a rule there. The cpus-per-task rules depend on the Slurm
version (:mod:`slurmkit.lint.context`).
"""

from __future__ import annotations

from pathlib import Path

from slurmkit.errors import UsageError
from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, WARNING, Finding, Rule
from slurmkit.lint.rules import RULE_IDS, RULES
from slurmkit.lint.script import Script
from slurmkit.lint.suppress import keep, unknown_rules
from slurmkit.slurm.records import SlurmVersion

__all__ = [
    "ERROR",
    "RULES",
    "WARNING",
    "Finding",
    "LintContext",
    "Rule",
    "SlurmVersion",
    "lint_path",
    "lint_text",
    "read_script",
]

UNKNOWN_RULE = "unknown-rule"
_SNIFF = 8192


def lint_text(text: str, path: str = "-", context: LintContext | None = None) -> list[Finding]:
    """Findings for a script's text, sorted by line; disabled ones are left out."""
    context = context or LintContext()
    script = Script(path, text)
    findings: list[Finding] = []
    for rule in RULES:
        findings.extend(rule(script, context))
    findings.extend(
        Finding(
            path,
            line,
            WARNING,
            UNKNOWN_RULE,
            f"slurmkit-lint comment names {name!r}, which is no rule: it silences nothing",
            "use a rule id from `slurmkit lint --list-rules` (or all)",
        )
        for line, name in unknown_rules(script.lines, RULE_IDS)
    )
    order = {rule.id: index for index, rule in enumerate(RULES)}
    kept = keep(findings, script.lines)
    return sorted(set(kept), key=lambda f: (f.line, order.get(f.rule, len(order)), f.message))


def lint_path(path: Path, context: LintContext | None = None) -> list[Finding]:
    return lint_text(read_script(path), str(path), context)


def read_script(path: Path) -> str:
    """The script's text; a usage error (exit 2) when it is missing, a folder or not text."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"cannot lint {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"cannot lint {path}: it is a directory") from None
    except PermissionError:
        raise UsageError(f"cannot lint {path}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"cannot lint {path}: {exc.strerror}") from None
    return decode_script(data, str(path))


def decode_script(data: bytes, name: str) -> str:
    if b"\0" in data[:_SNIFF]:
        raise UsageError(f"cannot lint {name}: not a text file (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"cannot lint {name}: not a text file (not UTF-8 at byte {exc.start})"
        ) from None
