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

import gc
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO

from slurmkit.errors import UsageError
from slurmkit.files import read_bounded
from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, INFO, WARNING, Finding, Rule
from slurmkit.lint.guards import dead_lines
from slurmkit.lint.helpers import Helpers
from slurmkit.lint.rules import RULE_IDS, RULES
from slurmkit.lint.script import Script
from slurmkit.lint.shell import NestingTooDeep, mask_templates
from slurmkit.lint.suppress import keep, unknown_rules
from slurmkit.slurm.records import SlurmVersion

__all__ = [
    "ERROR",
    "INFO",
    "RULES",
    "WARNING",
    "Finding",
    "LintContext",
    "Rule",
    "SlurmVersion",
    "context_for",
    "lint_path",
    "lint_text",
    "read_script",
]

UNKNOWN_RULE = "unknown-rule"
# Judged in code that never runs too: bash reads the whole script before it runs a line.
_EVEN_DEAD = frozenset({"bash-syntax", "dos-line-breaks"})
# No batch script comes near this; past it a file is refused before it is read.
MAX_BYTES = 10 * 1024 * 1024


def lint_text(text: str, path: str = "-", context: LintContext | None = None) -> list[Finding]:
    """Findings for a script's text, sorted by line; disabled ones are left out.

    Python's cyclic garbage collector is paused meanwhile: reading a script makes
    hundreds of thousands of small objects and no reference cycles, and the
    collector's repeated passes over them were more than half the time of a
    40,000-line script. It is switched back on (if it was on) before returning.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _lint_text(text, path, context)
    finally:
        if was_enabled:
            gc.enable()


def _lint_text(text: str, path: str, context: LintContext | None) -> list[Finding]:
    context = context or LintContext()
    crlf = _first_crlf(text)
    if crlf:
        text = text.replace("\r\n", "\n")
    try:
        script = Script(path, text, crlf_line=crlf)
    except NestingTooDeep as exc:
        raise UsageError(f"cannot lint {path}: {exc}") from None
    findings: list[Finding] = []
    # A heredoc fed to sbatch is a job script of its own (its #SBATCH lines are its
    # header): its body alone linted as one, its findings moved to their lines in this
    # file. Linear: each body is a strict part of the text that holds it, read once.
    pending = [script]
    helpers = Helpers(context.script_dir) if context.script_dir else None
    while pending:
        current = pending.pop()
        current.helpers = helpers
        dead = dead_lines(current)
        for rule in RULES:
            found = rule(current, context)
            if dead:
                found = [f for f in found if f.line not in dead or f.rule in _EVEN_DEAD]
            findings.extend(_placed(current, found))
        pending.extend(current.job_scripts())
    if context.shellcheck:
        from slurmkit.lint import shellcheck

        theirs = shellcheck.findings(mask_templates(text), path)
        findings.extend(shellcheck.without_twins(theirs, findings))
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
    rank = {rule.id: index for index, rule in enumerate(RULES)}.get
    last = len(RULES)
    kept = keep(findings, script.lines)
    return sorted(set(kept), key=lambda f: (f.line, rank(f.rule, last), f.message))


def _first_crlf(text: str) -> int:
    """Line of the first \\r\\n (0: none).

    sbatch refuses such a script whole (sbatch.c contains_dos_linebreak), so it never
    reaches bash, where each \\r would break every ``\\`` continuation: that is one
    defect, said once (``dos-line-breaks``). The other rules judge the script as it
    is once converted, so what they say is still true after ``dos2unix``.
    """
    at = text.find("\r\n")
    return 0 if at < 0 else text.count("\n", 0, at) + 1


def _placed(script: Script, findings: list[Finding]) -> list[Finding]:
    """Findings of a job script fed to sbatch, moved to this file's lines and said so."""
    origin = script.origin
    if origin is None:
        return findings
    return [
        replace(
            f,
            line=script.shown(f.line),
            message=f"{f.message} (in the job script that line {origin.submit_line} feeds to "
            f"sbatch, its line {f.line})",
        )
        for f in findings
    ]


def lint_path(
    path: Path, context: LintContext | None = None, name: str | None = None
) -> list[Finding]:
    """Findings for a script file, judged in the file's own context (its directory).

    The one way the CLI and the corpus harness lint a file (issue 32 item 3): a log
    directory that the file's git work tree ships is known to exist, whatever
    directory lint runs from. ``name`` is what findings call the file (its path).
    """
    return lint_text(read_script(path), name or str(path), context_for(path, context))


def context_for(path: Path, context: LintContext | None = None) -> LintContext:
    """``context`` with the script's own directory filled in."""
    context = context or LintContext()
    return replace(context, script_dir=str(path.resolve().parent))


def read_script(path: Path) -> str:
    """The script's text; a usage error (exit 2) when it is missing, not a file or not text.

    Read by the one bounded reader: a FIFO blocked lint for ever, and a device or a
    100 MB file is not a script. Its refusals are reworded as lint's own.
    """
    try:
        data = read_bounded(path, what="script", max_bytes=MAX_BYTES, follow_links=True)
    except FileNotFoundError:
        raise UsageError(f"cannot lint {path}: no such file") from None
    except UsageError as exc:
        raise UsageError(f"cannot lint {path}: {_why(str(exc), path)}") from None
    return decode_script(data, str(path))


def _why(message: str, path: Path) -> str:
    """The reader's reason without its "cannot read script PATH: " lead; sizes said lint's way."""
    reason = message.split(f" {path}: ", 1)[-1]
    return _too_big() if reason.startswith("larger than") else reason


def read_stdin(stream: BinaryIO) -> str:
    """A script piped in on stdin, read only up to the size limit."""
    return decode_script(stream.read(MAX_BYTES + 1), "stdin")


def _too_big(size: int | None = None) -> str:
    shown = f" ({size / 1024 / 1024:.0f} MB)" if size is not None else ""
    return f"larger than {MAX_BYTES // 1024 // 1024} MB{shown}: not a batch script"


def decode_script(data: bytes, name: str) -> str:
    """Text of a script, or a usage error for data that is no script (too big, binary)."""
    if len(data) > MAX_BYTES:
        raise UsageError(f"cannot lint {name}: {_too_big()}")
    if b"\0" in data:
        raise UsageError(f"cannot lint {name}: not a text file (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"cannot lint {name}: not a text file (not UTF-8 at byte {exc.start})"
        ) from None
