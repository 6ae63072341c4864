"""srun options that srun itself refuses, so the step never starts.

srun reads its options with getopt_long over Slurm's option table (``slurm_opt.c``,
the same short letters from 22.05 to 26.05) and stops at the first word that is no
option, the program. So a letter it does not know (``-gpus`` is ``-g``) is "invalid
option" and srun exits; ``-np 4`` is ``-n p``, and ``p`` is no number; and a dropped
dash (``srun N 1 -n 1 prog``) makes the letter the program srun tries to execute,
with the real options as its arguments. Only literal words are judged: an option
that a variable holds is unknown here.
"""

from __future__ import annotations

from collections.abc import Iterator

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, Finding, Rule
from slurmkit.lint.parsed import Word
from slurmkit.lint.script import Script, Srun

# srun's short letters (slurm_opt.c common_options with a srun setter, 22.05 to 26.05).
_WITH_VALUE = frozenset("ABCDFGJLMNSTWbcdeimnopqrtwx")
_OPTIONAL_VALUE = frozenset("IKk")  # the value only attached: -K1, -I60
_FLAGS = frozenset("EHOQVXZhlsuv")
_LETTERS = _WITH_VALUE | _OPTIONAL_VALUE | _FLAGS
# Options whose value srun reads as a count: -np is -n "p".
_COUNTS = {"n": "--ntasks", "N": "--nodes", "c": "--cpus-per-task"}


def _cluster_problem(text: str) -> str | None:
    """What srun refuses in one ``-abc`` word of short options, or None."""
    for position, letter in enumerate(text[1:], start=1):
        if letter not in _LETTERS:
            return f"-{letter} (from {text}) is no srun option: srun exits with 'invalid option'"
        if letter in _WITH_VALUE:
            value = text[position + 1 :]
            if letter in _COUNTS and value and not value[0].isdigit() and value[0] != "$":
                return (
                    f"{text} is -{letter} {value}: {_COUNTS[letter]} takes a number, so srun "
                    f"exits with 'Invalid numeric value \"{value}\"'"
                )
            return None
        if letter in _OPTIONAL_VALUE:
            return None
    return None


def _option_problem(srun: Srun) -> str | None:
    """The first short-option word srun refuses, among the words it reads as options."""
    words = srun.command.argv[1:]
    read = {option.index for option in srun.options}  # not the values given apart (-n -1)
    for index, word in enumerate(words[: len(words) - len(srun.program)]):
        if not word.literal:
            return None  # options from here on may come from a variable
        if index in read and not word.text.startswith("--"):
            problem = _cluster_problem(word.text)
            if problem is not None:
                return problem
    return None


def _looks_like_option(word: Word) -> bool:
    """A word srun would have read as an option: the sign that the dash went missing."""
    text = word.text
    if not word.literal or not text.startswith("-") or len(text) < 2:
        return False
    return (text.startswith("--") and len(text) > 2) or text[1] in _LETTERS


def _dropped_dash(srun: Srun) -> str | None:
    """``srun N 1 -n 1 prog``: the program is an option letter followed by srun options."""
    words = srun.program
    argv = srun.command.argv
    if not words or not words[0].literal or argv[len(argv) - len(words) - 1].text == "--":
        return None  # after --, the program is what the author named
    first = words[0].text
    if len(first) != 1 or first not in _WITH_VALUE or len(words) < 3:
        return None  # x264 -o out.mp4 is a program: only a bare letter is judged
    if words[1].text.startswith("-") or not _looks_like_option(words[2]):
        return None
    return (
        f"srun's program is {first!r}, an option without its dash (-{first}): srun runs "
        f"{first!r} with the real options as its arguments, and the step fails"
    )


def _srun_options(script: Script, context: LintContext) -> Iterator[Finding]:
    for srun in script.sruns:
        problem = _option_problem(srun) or _dropped_dash(srun)
        if problem is not None:
            yield script.finding(
                srun.line,
                ERROR,
                RULE_SRUN_OPTION.id,
                problem,
                "write the option as srun spells it (srun --help): one dash and a letter, "
                "or two dashes and a name (-N 1, --ntasks=4, --gpus=3)",
            )


RULE_SRUN_OPTION = Rule(
    "srun-bad-option",
    ERROR,
    "an srun option srun refuses or never sees: an unknown letter (-gpus), a count that "
    "is no number (-np 4), an option without its dash taken as the program (srun N 1 ...)",
    _srun_options,
)
RULES = (RULE_SRUN_OPTION,)
