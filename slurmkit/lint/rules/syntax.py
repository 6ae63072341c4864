"""What bash itself refuses: an unterminated quote, substitution or block, read from the tree.

tree-sitter-bash marks what is missing (a closing ``"``, ``)``, ``fi``, ``done``, a
heredoc's terminator): constructs still open at the end of the text. In the middle of
a script, only what bash refuses wherever it stands is reported ("syntax error near
unexpected token"): the first error node starting with an operator where a command
should be (``a && && b``, a stray ``)``), and a stray ``fi``/``done``/``esac``/``}``
that the grammar reads as a command. Other error nodes are places the grammar does
not know (``$(( 8#022 ))``, ``for NAME do``, extended globs), so unknown, never wrong.

sbatch runs a script with its ``#!`` interpreter. A script for csh or tcsh (``if ( … )
then … endif``), zsh, fish or no shell at all is not bash: bash's refusal says nothing
about it, so only a Bourne-family shell's script (or one with no ``#!``) is judged.

Where bash can run, its own ``bash -n`` checks the file itself (:mod:`..bash_check`): a
grammar error bash does not make is dropped. A job script fed to sbatch in a heredoc is a
string to the outer bash, so the grammar alone judges it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from slurmkit.lint import bash_check
from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, Finding, Rule
from slurmkit.lint.parsed import SyntaxProblem
from slurmkit.lint.script import Script
from slurmkit.lint.shell import mask_templates

# Shells that refuse what bash refuses here (an if with no fi, an open quote or $().
_BOURNE = frozenset({"sh", "bash", "dash", "ash", "ksh", "ksh93", "mksh", "pdksh"})


def interpreter(text: str) -> str | None:
    """The program ``#!`` names (``env``'s program, past its options); None without one."""
    if not text.startswith("#!"):
        return None
    words = text[2:].split("\n", 1)[0].split()
    if words and posixpath.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return posixpath.basename(words[0]) if words else ""


def _syntax(script: Script, context: LintContext) -> Iterator[Finding]:
    shell = interpreter(script.text)
    if shell is not None and shell not in _BOURNE:
        return
    problems = script.parsed.problems
    if context.bash_check and script.origin is None and any(p.severity == ERROR for p in problems):
        problems = _as_bash_says(problems, script.text)
    for problem in problems:
        yield script.finding(
            problem.line,
            problem.severity,
            RULE_SYNTAX.id,
            f"bash cannot run this script as written: line {script.shown(problem.line)}, column "
            f"{problem.column}: {problem.message}",
            "close it (bash -n SCRIPT shows the same)"
            if problem.severity == ERROR
            else "end the heredoc with its delimiter alone on a line",
        )


def _as_bash_says(problems: list[SyntaxProblem], text: str) -> list[SyntaxProblem]:
    """The grammar's problems, less its errors where ``bash -n`` reads the script whole.

    Only this way round: where bash refuses what the grammar read without an error, the
    development part showed template blanks more often than defects (`cd <FILL ME IN!>`,
    a `#EQ_FILES` marker leaving an empty `if`: 6 of 11), so that stays unknown. Warnings
    (a heredoc ended by end of file) are the grammar's: bash only warns of them.
    """
    said = bash_check.verdict(mask_templates(text))
    if said is None or not said.ok:
        return problems
    return [p for p in problems if p.severity != ERROR]


RULE_SYNTAX = Rule(
    "bash-syntax",
    ERROR,
    "bash refuses the script: an unterminated quote, $(…), if/for/case or heredoc, a stray token",
    _syntax,
)
RULES = (RULE_SYNTAX,)
