"""``# slurmkit-lint: disable=RULE[,RULE]`` comments: on the finding's line or the line above.

``disable=all`` silences every rule there; ``disable-file=RULE`` anywhere silences a rule
for the whole file. A shipped template uses these where it breaks a rule on purpose
(the cpus-per-task test leaves ``--cpus-per-task`` off two sruns to measure what happens).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from slurmkit.lint.findings import Finding

_DISABLE = re.compile(
    r"#\s*slurmkit-lint:\s*disable(?P<file>-file)?\s*=\s*(?P<rules>[\w/-]+(?:\s*,\s*[\w/-]+)*)"
)
ALL = "all"


def _marked(lines: list[str]) -> Iterable[tuple[int, str]]:
    """(number, line) of the lines that may hold a disable comment: most scripts have
    none, and one test of the whole text spares a regex search per line."""
    if _MARK not in "\n".join(lines):
        return ()
    return ((n, line) for n, line in enumerate(lines, start=1) if _MARK in line)


_MARK = "slurmkit-lint"


def disabled(lines: list[str]) -> tuple[dict[int, set[str]], set[str]]:
    """(line -> rules disabled by a comment on it, rules disabled for the whole file)."""
    per_line: dict[int, set[str]] = {}
    whole: set[str] = set()
    for number, line in _marked(lines):
        for match in _DISABLE.finditer(line):
            rules = {r.strip() for r in match["rules"].split(",")}
            if match["file"]:
                whole |= rules
            else:
                per_line.setdefault(number, set()).update(rules)
    return per_line, whole


def unknown_rules(lines: list[str], known: Iterable[str]) -> list[tuple[int, str]]:
    """(line, name) of disable comments naming no rule (a typo would silence nothing)."""
    names = set(known) | {ALL}
    found = []
    for number, line in _marked(lines):
        for match in _DISABLE.finditer(line):
            for rule in (r.strip() for r in match["rules"].split(",")):
                if rule not in names and not _shellcheck_code(rule):
                    found.append((number, rule))
    return found


def _shellcheck_code(rule: str) -> bool:
    """``shellcheck/SC2086``: ShellCheck's codes are its own, not listed by lint."""
    return re.fullmatch(r"shellcheck/SC\d{4}", rule) is not None


def keep(findings: Iterable[Finding], lines: list[str]) -> list[Finding]:
    per_line, whole = disabled(lines)
    if not per_line and not whole:
        return list(findings)

    def silenced(finding: Finding) -> bool:
        rules = whole | per_line.get(finding.line, set()) | per_line.get(finding.line - 1, set())
        return finding.rule in rules or ALL in rules

    return [f for f in findings if not silenced(f)]
