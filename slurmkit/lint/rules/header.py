"""The ``#SBATCH`` header word by word, as sbatch's getopt reads it (issue 32 item 4).

sbatch refuses the whole script, before anything is queued, when a directive holds a
word its option table does not know ("unrecognized option", "invalid option") or a
word that is no option at all ("Invalid directive found in batch script"): checked on
22.05, 24.11 and 26.05, so these are errors. A line that is almost ``#SBATCH``
(``#SBTACH``, ``# SBATCH``) is a comment to sbatch: its option is silently not
applied. An option given twice keeps the later value; the earlier one is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, WARNING, Finding, Rule
from slurmkit.lint.sbatch_table import (
    SHORT_FLAGS,
    SHORT_WITH_VALUE,
    long_options,
    match_long,
)
from slurmkit.lint.script import Script
from slurmkit.lint.shell import mask_templates
from slurmkit.sbatch.directives import MAGIC, sbatch_words
from slurmkit.sbatch.options import LONG_FLAGS

# Dashes that look like "-" but are other characters (word processors, web pages).
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d"
_DASH = re.compile(f"(?:^|(?<=\\s))[{DASHES}]+[A-Za-z]")
# Separators of the components of a heterogeneous job (packjob: before 20.02).
_COMPONENT = frozenset({"hetjob", "packjob"})
# Options whose repeats add up instead of replacing (mail types are or-ed, -v counts).
_ADDS_UP = frozenset({"mail-type", "verbose", "quiet"})
_PLACEHOLDER = ("${", "$_", "{", "}", "<", ">")
_NEAR = re.compile(r"#+\s*([A-Za-z]{5,7})\b(.*)")


def _edits(a: str, b: str) -> int:
    """Levenshtein distance with transpositions, for two short words."""
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            best = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, rows[-2][j - 2] + 1)
            row.append(best)
        rows.append(row)
    return rows[-1][-1]


def _header_comments(script: Script) -> Iterator[tuple[int, str]]:
    """(line, text) of the comment lines sbatch reads its header from (up to the first command)."""
    for number, line in enumerate(script.lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            return
        yield number, line


def _misspelt(script: Script, context: LintContext) -> Iterator[Finding]:
    if not script.directives and not any("SBATCH" in line.upper() for line in script.lines):
        return
    for number, line in _header_comments(script):
        if line.startswith(MAGIC) or line.lstrip().upper().startswith(MAGIC):
            continue  # read, or sbatch-directive-ignored's (indented, wrong case)
        if line.startswith("##") or line.startswith("#!"):
            continue  # ##SBATCH: switched off on purpose
        match = _NEAR.match(line.lstrip())
        if match is None:
            continue
        word, rest = match.group(1), match.group(2).lstrip()
        if not rest.startswith("-") or not word.isupper():
            continue  # prose, or a command shown in a comment (# sbatch -N 2 job.sh)
        spaced = word.upper() == "SBATCH"
        if not spaced and _edits(word.upper(), "SBATCH") > 2:
            continue
        why = "has a blank between # and SBATCH" if spaced else f"spells the magic word {word!r}"
        yield script.finding(
            number,
            WARNING,
            RULE_MISSPELT.id,
            f"{line.strip()!r} {why}: sbatch reads only lines that start with #SBATCH, so "
            f"{rest.split()[0]} is silently not applied",
            f"#SBATCH {rest}" + (" (or ##SBATCH to switch it off on purpose)" if spaced else ""),
        )


def _dashes(script: Script, context: LintContext) -> Iterator[Finding]:
    if not any(dash in script.text for dash in DASHES):
        return
    for directive in script.directives:
        if directive.ignored is None and _DASH.search(directive.text[len(MAGIC) :]):
            yield _dash_finding(script, directive.line, "this directive", "sbatch refuses")
    for srun in script.sruns:
        text = script.source(srun.command)
        words = text.split()
        program = srun.program[0].text if srun.program else ""
        if any(_DASH.match(w) for w in words[1:4]) or _DASH.match(program):
            yield _dash_finding(script, srun.line, "this srun", "srun runs it as the program")


def _dash_finding(script: Script, line: int, where: str, effect: str) -> Finding:
    return script.finding(
        line,
        ERROR,
        RULE_DASH.id,
        f"{where} has an option written with a typographic dash (– — ‐ −, copied from a web "
        f"page or a document), not '-': it is no option, and {effect} the word",
        "retype the dashes as ASCII '-' (--time, not –time)",
    )


def _words(directive_text: str) -> list[str]:
    return sbatch_words(mask_templates(directive_text[len(MAGIC) :]))


def _unknown(script: Script, context: LintContext) -> Iterator[Finding]:
    table = long_options(context.version)
    for directive in script.directives:
        if directive.ignored is not None:
            continue
        words = _words(directive.text)
        if words and words[0] in _COMPONENT and len(words) == 1:
            continue
        problem = _first_problem(words, table)
        if problem is None:
            continue
        yield script.finding(
            directive.line,
            ERROR,
            RULE_UNKNOWN.id,
            f"{directive.text.strip()!r}: {problem} "
            f"{context.on_versions('on Slurm 22.05 to 26.05')}: sbatch refuses the whole "
            "script and nothing is queued",
            "fix the option (sbatch --help lists them) or remove the line",
        )


def _first_problem(words: list[str], table: frozenset[str]) -> str | None:
    """What sbatch's getopt says about the first word it refuses, or None."""
    if any(mark in word for word in words for mark in _PLACEHOLDER):
        return None  # a template or a placeholder for the reader to fill in: unknown
    index = 0
    while index < len(words):
        word = words[index]
        if word == "\\":
            index += 1  # a trailing backslash: sbatch reads past it (sbatch-continuation's)
            continue
        if word.startswith("--") and len(word) > 2:
            name, has_value, _ = word[2:].partition("=")
            matches = match_long(name, table)
            if not matches:
                return f"--{name} is not an sbatch option"
            if len(matches) > 1:
                return f"--{name} is ambiguous ({', '.join('--' + m for m in matches[:4])})"
            takes_value = matches[0] not in LONG_FLAGS
            index += 2 if takes_value and not has_value else 1
            continue
        if word.startswith("-") and len(word) > 1 and word[1] not in DASHES:
            skip = _short(word)
            if isinstance(skip, str):
                return skip
            index += skip
            continue
        if word[:1] in DASHES:
            return None  # the dash rule's
        return f"{word!r} is no option (sbatch: Invalid directive found in batch script)"
    return None


def _short(word: str) -> int | str:
    """Words the short option cluster takes (1 or 2), or sbatch's complaint."""
    for position, letter in enumerate(word[1:], start=1):
        if letter in SHORT_WITH_VALUE:
            return 1 if word[position + 1 :] else 2
        if letter == "k":
            return 1
        if letter not in SHORT_FLAGS:
            return f"-{letter} is not an sbatch option"
    return 1


def _twice(script: Script, context: LintContext) -> Iterator[Finding]:
    seen: dict[str, tuple[str | None, int, str]] = {}
    for directive in script.directives:
        if directive.ignored is not None:
            continue
        if _words(directive.text)[:1] and _words(directive.text)[0] in _COMPONENT:
            seen = {}  # each component of a heterogeneous job starts afresh
            continue
        for option in directive.options:
            if option.name in _ADDS_UP:
                continue
            earlier = seen.get(option.name)
            seen[option.name] = (option.value, directive.line, option.written)
            if earlier is None or earlier[0] == option.value:
                continue
            _, line, written = earlier
            yield script.finding(
                directive.line,
                WARNING,
                RULE_TWICE.id,
                f"--{option.name} is given twice with different values: sbatch applies this "
                f"line's {option.written!r} and ignores line {script.shown(line)}'s {written!r}",
                f"keep one --{option.name} (the value you mean)",
            )


RULE_MISSPELT = Rule(
    "sbatch-misspelt",
    WARNING,
    "#SBTACH, # SBATCH and other near misses followed by an option: sbatch never reads them",
    _misspelt,
)
RULE_DASH = Rule(
    "non-ascii-dash",
    ERROR,
    "a typographic dash (– — ‐ −) instead of '-' in a directive or srun option",
    _dashes,
)
RULE_UNKNOWN = Rule(
    "sbatch-unknown-option",
    ERROR,
    "a word sbatch's option table does not know at this version: sbatch refuses the script",
    _unknown,
)
RULE_TWICE = Rule(
    "sbatch-option-twice",
    WARNING,
    "an option given twice with different values (the earlier one is ignored)",
    _twice,
)
RULES = (RULE_MISSPELT, RULE_DASH, RULE_UNKNOWN, RULE_TWICE)
