"""What bash itself refuses: an unterminated quote, substitution or block, read from the tree.

tree-sitter-bash marks what is missing (a closing ``"``, ``)``, ``fi``, ``done``, a
heredoc's terminator): constructs still open at the end of the text. In the middle of
a script, only what bash refuses wherever it stands is reported ("syntax error near
unexpected token"): the first error node starting with an operator where a command
should be (``a && && b``, a stray ``)``), and a stray ``fi``/``done``/``esac``/``}``
that the grammar reads as a command. Other error nodes are places the grammar does
not know (``$(( 8#022 ))``, ``for NAME do``, extended globs), so unknown, never wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, Finding, Rule
from slurmkit.lint.script import Script


def _syntax(script: Script, context: LintContext) -> Iterator[Finding]:
    for problem in script.parsed.problems:
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


RULE_SYNTAX = Rule(
    "bash-syntax",
    ERROR,
    "bash refuses the script: an unterminated quote, $(…), if/for/case or heredoc, a stray token",
    _syntax,
)
RULES = (RULE_SYNTAX,)
