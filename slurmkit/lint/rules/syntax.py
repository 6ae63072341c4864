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
string to the outer bash, so the grammar alone judges it. A template's blanks
(``<<<PARTITION>>>``, ``<FILL ME IN!>``, a ``str.format`` template's ``{{``) are filled in
before bash judges: the script the user submits has them filled. Where bash stops on a line
before the grammar's first error ("near unexpected token `elif'"), the finding is bash's
line. Nothing past the script's top-level ``exit`` is judged: bash never reads it (a
polyglot script's other language).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from slurmkit.lint import bash_check
from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, Finding, Rule
from slurmkit.lint.guards import end_of_script
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
    if not problems:
        return
    end = end_of_script(script)
    problems = [p for p in problems if p.line <= end]
    if context.bash_check and script.origin is None and any(p.severity == ERROR for p in problems):
        problems = _as_bash_says(problems, script.text, end)
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


def _as_bash_says(problems: list[SyntaxProblem], text: str, end: int) -> list[SyntaxProblem]:
    """The grammar's problems, less its errors where ``bash -n`` reads the script whole.

    Only this way round: where bash refuses what the grammar read without an error, the
    development part showed template blanks more often than defects (`cd <FILL ME IN!>`,
    a `#EQ_FILES` marker leaving an empty `if`: 6 of 11), so that stays unknown. With the
    blanks filled in (round eight) bash refuses 8 development scripts the grammar reads: 2
    labelled defects on bash's line, 2 labelled where the open quote starts (bash names the
    end of the file), 4 not labelled. Warnings (a heredoc ended by end of file) are the
    grammar's: bash only warns of them.
    """
    masked = mask_templates(text)
    said = bash_check.verdict(masked)
    if said is not None and not said.ok and _blanks_only(masked):
        masked = _filled(masked)
        said = bash_check.verdict(masked)
    if said is None:
        return problems
    if said.ok or said.line > end:  # bash never reads past the script's top-level exit
        return [p for p in problems if p.severity != ERROR]
    return _where_bash_stops(problems, said, masked)


# A template's blanks for the user to fill: ``<<<PARTITION>>>``, ``<FILL ME IN!>``,
# ``<path/to/data>``. bash reads ``<`` and ``>`` as redirections and refuses them.
_PLACEHOLDER = re.compile(r"<<<[\w./ -]{1,80}>>>|(?<![<\w$])<(?=[A-Za-z_])[\w./!-]{1,80}>(?!>)")
_PLACEHOLDER_SPACED = re.compile(r"<(?=[A-Za-z_])[\w./! -]{1,80}(?<! )>(?!>)")
# A field of a Python str.format template: ``{cfg.walltime}``, ``{job[name]}`` (not ``${x}``).
_FORMAT_FIELD = re.compile(r"(?<![$\w{])\{[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[\w+\])+\}")


def _blanks_only(text: str) -> bool:
    """Whether the text holds a template's blanks: placeholders, or a Python
    ``str.format`` template's fields with its ``{{``/``}}`` escapes."""
    if "<" in text and (_PLACEHOLDER.search(text) or _PLACEHOLDER_SPACED.search(text)):
        return True
    return ("{{" in text or "}}" in text) and _FORMAT_FIELD.search(text) is not None


def _filled(text: str) -> str:
    """The text as its template makes it: each blank a word, ``{{`` the brace it prints.

    ``handle_error(){{`` in a template for ``str.format`` is ``handle_error(){`` in the
    job script; ``RLHF_DIR=<<<PATH/TO/nemo-rlhf>>>`` is a path once filled. Lengths are
    kept, so bash's line numbers still name the file's lines.
    """
    if "<" in text:
        text = _PLACEHOLDER.sub(lambda m: "x" * len(m.group(0)), text)
        text = _PLACEHOLDER_SPACED.sub(lambda m: "x" * len(m.group(0)), text)
    if _FORMAT_FIELD.search(text) is not None:
        text = text.replace("{{", "{ ").replace("}}", "} ")
    return text


def _where_bash_stops(
    problems: list[SyntaxProblem], said: bash_check.Verdict, text: str
) -> list[SyntaxProblem]:
    """The grammar's errors, or bash's own where bash stops on a line before them all.

    bash reads a command at a time and stops at the first token it cannot take ("syntax
    error near unexpected token `elif'" on line 62); the grammar recovers and may report
    the construct that error left open much later (a ``for`` never closed, at line 75).
    The script dies where bash stops, so that line is the finding's.
    """
    errors = [p for p in problems if p.severity == ERROR]
    if not errors:
        return problems
    if "looking for matching" in said.message:
        opened = _quote_opened(text, said)
        if opened is not None and opened < min(p.line for p in errors):
            stop = SyntaxProblem(opened, 1, _never_closed(said))
            return [stop, *(p for p in problems if p.severity != ERROR)]
        return problems
    if "unexpected token" not in said.message:
        return problems
    if said.line <= 0 or said.line >= min(p.line for p in errors):
        return problems
    stop = SyntaxProblem(said.line, 1, f"bash stops here: {said.message}")
    return [stop, *(p for p in problems if p.severity != ERROR)]


_MATCHING = re.compile(r"unexpected EOF while looking for matching `([\"'`])'")
# bash -n per candidate line: a script with more lines holding the quote is left as it is.
_MOST_CANDIDATES = 60


def _quote_opened(text: str, said: bash_check.Verdict) -> int | None:
    r"""The line whose quote bash reads to the end of the file, or None when unsure.

    bash names the end of the file ("unexpected EOF while looking for matching `''"); the
    quote that stays open is on the first line without which bash reads the script whole
    (the line left empty, or ``:`` where it alone filled a block): a line with balanced
    quotes changes nothing, and after the one unclosed quote the pairs are shifted, so
    any later line that ends it is past the first (``grep -oP '\d+(?=/))"``,
    300 lines above where bash stops).
    """
    found = _MATCHING.search(said.message)
    if found is None:
        return None
    quote = found.group(1)
    lines = text.split("\n")
    candidates = [index for index, line in enumerate(lines) if quote in line]
    if len(candidates) > _MOST_CANDIDATES:
        return None
    for index in candidates:
        for stand_in in ("", ":"):  # ":" keeps a block that line alone fills
            trial = bash_check.verdict("\n".join([*lines[:index], stand_in, *lines[index + 1 :]]))
            if trial is None:
                return None
            if trial.ok:
                return index + 1
    return None


def _never_closed(said: bash_check.Verdict) -> str:
    quote = _MATCHING.search(said.message)
    mark = quote.group(1) if quote else "quote"
    return (
        f"the {mark} opened here is never closed: bash reads to the end of the file "
        f"and stops ({said.message})"
    )


RULE_SYNTAX = Rule(
    "bash-syntax",
    ERROR,
    "bash refuses the script: an unterminated quote, $(…), if/for/case or heredoc, a stray token",
    _syntax,
)
RULES = (RULE_SYNTAX,)
