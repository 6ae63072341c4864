"""Slips that lose work on every cluster, found in the parsed script (issue 32 item 4).

- ``[ -z "$x"]``: without a blank before ``]`` the test command has no closing
  bracket; ``[`` fails with status 2 and the ``if`` takes its else branch.
- ``--lr 0.1`` alone on a line: the line before lost its trailing backslash, so the
  options never reach their command and bash runs ``--lr`` as a program.
- ``--epochs 3 \\`` and then ``echo done``: the backslash makes the next command more
  arguments of the one above (it fails on them, and the next command never runs); so
  does ``samtools view … \\`` before ``samtools sort …`` (a ``|`` was lost). A line of
  nothing but ``> log 2>&1 &`` after a continued command lost the backslash before it.
  A comment line inside a continued command ends it: the indented line after the comment
  runs as a command of its own.
- ``mpirun -n 10 \\``, a blank line, ``python run.py``: the blank line ends the command,
  so the launcher has no program (it refuses) and its program runs alone.
- ``NAME = value``: blanks around ``=`` run a command NAME; NAME stays unset.
- an array that starts at 0 picking line ``$SLURM_ARRAY_TASK_ID`` of a file with
  ``sed -n "${SLURM_ARRAY_TASK_ID}p"``: lines count from 1, so task 0 gets nothing
  (sed refuses address 0) and the last line is never run.
- ``rm`` of a glob that matches the job's own ``--output``/``--error``: the log open
  since the job started is deleted, and with it the record of this run.
- ``$SLURM_GPUS_PER_TASK`` (and the like, not the array's) where the job never asks for the option
  that makes Slurm set it: the value is empty. Not where it is only printed (``echo``), nor
  where the script's usage comment gives the option to sbatch.

Nothing past the script's top-level ``exit`` is judged (:func:`end_of_script`): bash never
reads it.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import accumulate, chain

from slurmkit.lint.context import LintContext, srun_inherits_cpus_per_task
from slurmkit.lint.findings import ERROR, INFO, WARNING, Finding, Rule
from slurmkit.lint.guards import end_of_script
from slurmkit.lint.parsed import Command, Word
from slurmkit.lint.rules.variables import COUNT_OPTIONS, has_fallback
from slurmkit.lint.sbatch_table import long_options, match_long
from slurmkit.lint.script import Script
from slurmkit.slurm.records import SlurmVersion

# ``[`` where a command starts, its words, then a ``]`` glued to the last one and a
# command's end after it (a test is short: the bounded middle keeps a line of a
# million "[ " linear). The grammar reads ``[ … ]`` as a test node, so this is read
# from the line (comments cut); ``[[`` and ``${a[0]}`` never match.
_GLUED = re.compile(
    r"(?:^|[;&|({!]|\b(?:if|while|until|then|do|else|elif))\s*\[\s+[^\]\n;]{0,300}?[^\s\[]\]"
    r"(?=\s*(?:;|&&|\|\||\)|$))"
)


def _reachable(
    check: Callable[[Script, LintContext], Iterator[Finding]],
) -> Callable[[Script, LintContext], Iterator[Finding]]:
    """``check``'s findings, less those past the script's top-level ``exit``."""

    def reachable(script: Script, context: LintContext) -> Iterator[Finding]:
        end = 0
        for finding in check(script, context):
            end = end or end_of_script(script)
            if finding.line <= end:
                yield finding

    reachable.__doc__ = check.__doc__
    return reachable


def _opens_unquoted(line: str, matches: Iterator[re.Match[str]]) -> bool:
    """Whether one of ``matches`` (in order) opens its ``[`` outside quotes: ``sed
    's|[ \\ts]||'`` holds a bracket expression, not a test. One pass over the line, so
    a line of many candidates stays linear."""
    quote, index = "", 0
    for match in matches:
        bracket = match.start() + match.group(0).index("[")
        while index < bracket:
            char = line[index]
            if quote == "'":
                quote = "" if char == "'" else quote
            elif char == "\\":
                index += 1
            elif quote:
                quote = "" if char == '"' else quote
            elif char in "'\"":
                quote = char
            index += 1
        if not quote:
            return True
    return False


def _bracket(script: Script, context: LintContext) -> Iterator[Finding]:
    if '"]' not in script.text and "]" not in script.text.replace(" ]", ""):
        return
    for number, line in script.code_lines():
        if "]" not in line or not _opens_unquoted(line, _GLUED.finditer(line)):
            continue
        yield script.finding(
            number,
            ERROR,
            RULE_BRACKET.id,
            '[ … with its closing ] glued to the last word: bash says "[: missing `]\'", '
            "the test fails with status 2 and the if takes its other branch",
            'put a blank before the closing bracket: [ -z "$x" ]',
        )


_OPTION_LINE = re.compile(r"(?m)^[ \t]*-[-\w]")


# A line that is only redirections (and maybe ``&``): ``> log 2>&1 &``.
_REDIRECT_LINE = re.compile(r"\s*(?:\d*>>?|&>>?|<)\s*\S+(?:\s+\d*>>?&?\s*\S+)*\s*&?\s*")


def _lost_redirect(script: Script) -> Iterator[Finding]:
    """``--last-option`` with no backslash, then ``> log 2>&1 &``: the redirection and the
    ``&`` belong to nothing, and the command above ran in the foreground."""
    code = list(script.code_lines())
    for index in range(2, len(code)):
        number, line = code[index]
        if not _REDIRECT_LINE.fullmatch(line) or not line.rstrip().endswith("&"):
            continue
        before, above = code[index - 1], code[index - 2]
        if before[0] + 1 != number or before[1].rstrip().endswith("\\"):
            continue
        if above[0] + 1 == before[0] and above[1].rstrip().endswith("\\"):
            yield script.finding(
                number,
                ERROR,
                RULE_OPTION_COMMAND.id,
                "this line is only a redirection and &: the line before ends without a "
                "backslash, so the command above ran in the foreground with its output in "
                "the job's log, and this line redirects nothing",
                f"end line {script.shown(number - 1)} with a backslash",
            )


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _after_comment(script: Script) -> Iterator[Finding]:
    """``-B a:b \\``, ``# bind more here``, ``"$IMAGE" bash -lc …``: the comment line
    ends the continued command (bash drops the joined ``# …`` up to the line end), so the
    indented line after it, meant as more arguments, runs as a command of its own."""
    starts: set[int] | None = None  # lines where a command starts, found when first needed
    first = 0  # the line where the continued command began
    last, above = 0, ""
    for number, line in script.code_lines():
        if above.endswith("\\") and number > last + 1:  # lines left out after a continued one
            if starts is None:
                starts = {script.line_of(command.start) for command in script.commands}
            if _cut_by_comment(script, number, line, above, range(last + 1, number), first, starts):
                stripped = line.strip()
                yield script.finding(
                    number,
                    ERROR,
                    RULE_OPTION_COMMAND.id,
                    f"the comment line {script.shown(last + 1)} ends the continued command "
                    f"above it, so bash runs {stripped.split(None, 1)[0]!r} as a command of its "
                    "own: this line never reaches the command it continues",
                    "move the comment above the command, or end the command on the line before it",
                )
        if not (last and last + 1 == number and above.endswith("\\")):
            first = number
        last, above = number, line.rstrip()


def _cut_by_comment(
    script: Script, number: int, line: str, above: str, gap: range, first: int, starts: set[int]
) -> bool:
    """Whether only comment lines lie between the continued line ``above`` and this one,
    which starts a command of its own, indented as more arguments of the one above."""
    stripped = line.strip()
    return (
        not above[:-1].rstrip().endswith(_JOINS)  # `a | \\`: a comment may follow
        and all(script.lines[n - 1].lstrip().startswith("#") for n in gap)
        and (above[:-1][-1:].isspace() or script.lines[gap[0] - 1][:1].isspace())
        and number in starts
        and bool(stripped)
        and not stripped.startswith("-")  # a --option line: found as a command
        and _indent(line) > _indent(script.lines[first - 1])
    )


# Launchers that refuse to start without a program ("srun: fatal: No command given to
# execute", Open MPI's "No executable was specified").
_NEEDS_PROGRAM = frozenset({"srun", "mpirun", "mpiexec"})
_BLANK_AFTER_BACKSLASH = re.compile(r"\\\n[ \t]*\n")


def _blank_cut(script: Script) -> Iterator[Finding]:
    """``mpirun -n 10 \\``, a blank line, ``python -u run.py``: the blank line ends the
    command (the backslash joins only the empty line), so the launcher gets options and no
    program and refuses to start, and the line after it, its program, runs on its own."""
    if _BLANK_AFTER_BACKSLASH.search(script.text) is None:
        return
    lines = script.lines
    code = dict(script.code_lines())
    for number in range(1, len(lines) - 1):
        line = lines[number - 1].rstrip()
        if not line.endswith("\\") or number not in code or lines[number].strip():
            continue
        start = number
        while start - 1 in code and lines[start - 2].rstrip().endswith("\\"):
            start -= 1
        words = " ".join(code[n].rstrip()[:-1] for n in range(start, number + 1)).split()
        while words and words[0] in _LEADING:
            words.pop(0)
        if not words or words[0].rsplit("/", 1)[-1] not in _NEEDS_PROGRAM:
            continue
        if not _options_only(words[1:]):
            continue
        after = next((n for n in range(number + 2, len(lines) + 1) if lines[n - 1].strip()), 0)
        if after not in code or lines[after - 1].lstrip().startswith("-"):
            continue  # a --option line is found as a command of its own
        launcher = words[0].rsplit("/", 1)[-1]
        yield script.finding(
            after,
            ERROR,
            RULE_OPTION_COMMAND.id,
            f"the blank line {script.shown(number + 1)} ends the {launcher} command above it "
            f"(the backslash on line {script.shown(number)} joins only the empty line): "
            f"{launcher} gets no program and refuses to start, and this line runs on its own",
            f"remove the blank line {script.shown(number + 1)}",
        )


def _options_only(words: list[str]) -> bool:
    """Whether a launcher's words are only options and their values (``-n 10``): the
    last an option, or a number after one. A word after ``-l`` may be the program."""
    if not words:
        return True
    for index, word in enumerate(words):
        if word.startswith("-"):
            continue
        before = words[index - 1] if index else ""
        if not before.startswith("-") or "=" in before:
            return False
    last = words[-1]
    return last.startswith("-") or last.isdigit()


def _option_as_command(script: Script, context: LintContext) -> Iterator[Finding]:
    if "&" in script.text:
        yield from _lost_redirect(script)
    if "\\\n" in script.text:
        yield from _after_comment(script)
        yield from _blank_cut(script)
    if _OPTION_LINE.search(script.text) is None:
        return  # no line starts with an option: nothing to look up
    for command in script.commands:
        name = command.name
        if name is None or not name.startswith("-") or len(name) < 2 or command.depth:
            continue
        if command.prefix or _timed_posix(command):
            continue
        line = script.line_of(command.start)
        yield script.finding(
            line,
            ERROR,
            RULE_OPTION_COMMAND.id,
            f"bash runs {name!r} as a command (not found): the line before ends without a "
            "backslash, so this line's options never reach the command they belong to",
            f"end line {script.shown(line - 1)} with a backslash (and nothing after it)",
        )


def _timed_posix(command: Command) -> bool:
    """``time -p mpirun …``: ``-p`` is the option of ``time`` (bash's keyword and POSIX
    time(1) both take it: the times in POSIX format), not a program the line runs."""
    words = command.words
    for index in range(1, len(words)):
        if words[index].raw == "-p":
            return words[index - 1].raw == "time"
        if words[index - 1].raw not in _LEADING:
            return False
    return False


# Commands that start a line of their own and are never an option's value.
_STANDALONE = frozenset(
    {"echo", "srun", "sbatch", "cd", "export", "wait", "mkdir", "rm", "cp", "mv", "exit"}
    | {"set", "module", "source", "conda", "sleep", "date", "printf", "unset", "trap"}
)


def _continued_into(script: Script, context: LintContext) -> Iterator[Finding]:
    """An option line ending in a backslash, then a line that starts a new command."""
    if "\\\n" not in script.text:
        return
    code = list(script.code_lines())
    # only the lines after an option line that ends in a backslash can be one
    after = [
        index + 1
        for index, (_, line) in enumerate(code[:-1])
        if _continues(line.rstrip()) and line.lstrip().startswith("-")
    ]
    yield from _program_again(script, code)
    for index in after:
        number, line = code[index]
        stripped = line.strip()
        first = stripped.split(None, 1)[0] if stripped else ""
        if first in _STANDALONE and not stripped.endswith("\\") and not _runs_it(code, index):
            yield script.finding(
                number,
                ERROR,
                RULE_CONTINUED_INTO.id,
                f"the line before ends in a backslash, so {first!r} and the rest of this line "
                "are more arguments of the command above it, not a command of their own "
                "(it fails on arguments it does not know, and this line never runs)",
                f"remove the backslash at the end of line {script.shown(number - 1)}",
            )


def _continues(stripped: str) -> bool:
    """Whether a line (trailing blanks stripped) joins the next line to its command.

    Only an odd run of backslashes escapes the line end: ``\\\\`` is one literal backslash
    (in a ``bash -c "…; \\\\"`` string, the inner shell's backslash after a ``;``). After
    ``|``, ``||``, ``&&``, ``;`` or ``&`` the next line is a command of its own: ``run … ||
    \\`` then ``echo failed`` is the fallback, not more arguments of ``run``.
    """
    body = stripped.rstrip("\\")
    if (len(stripped) - len(body)) % 2 == 0:
        return False
    return not body.rstrip().endswith(_JOINS)


_LEADING = frozenset({"if", "then", "elif", "while", "until", "do", "!", "time", "exec"})


def _runs_it(code: list[tuple[int, str]], index: int) -> bool:
    """Whether the continued command above ``code[index]`` takes a command as its arguments
    (``srun --mpi=pmix \\`` then ``echo up``: echo is what srun runs, on every task)."""
    start = index - 1
    while (
        start > 0
        and code[start - 1][0] == code[start][0] - 1
        and code[start - 1][1].rstrip().endswith("\\")
    ):
        start -= 1
    words = code[start][1].split()
    while words and words[0] in _LEADING:
        words.pop(0)
    return bool(words) and words[0].rsplit("/", 1)[-1] in _RUNS_COMMANDS


# Programs that take another command, or themselves, as their arguments.
_RUNS_COMMANDS = frozenset(
    {"time", "env", "nohup", "sudo", "xargs", "parallel", "exec", "command", "watch"}
    | {"timeout", "stdbuf", "nice", "taskset", "numactl", "srun", "mpirun", "mpiexec"}
)
_PROGRAM = re.compile(r"[\w./-]+")
_JOINS = ("|", "&", ";", "(", "{")


def _program_again(script: Script, code: list[tuple[int, str]]) -> Iterator[Finding]:
    """``samtools view … \\`` then ``samtools sort …``: the command's own program again
    at the start of a continued line was meant as the next command (a lost ``|``)."""
    first = ""  # the program of the command the current line continues, if any
    continued = False
    last = 0
    for number, line in code:
        words = line.split(None, 1)
        word = words[0] if words else ""
        continued = continued and number == last + 1  # a comment line between ends it
        last = number
        if continued and word and word == first and first not in _RUNS_COMMANDS:
            yield script.finding(
                number,
                ERROR,
                RULE_CONTINUED_INTO.id,
                f"the line before ends in a backslash, so this {word!r} and the rest of the "
                "line are more arguments of the command above it (the same program), not a "
                "command of their own: a | or a line end was lost",
                f"remove the backslash at the end of line {script.shown(number - 1)}, or "
                "join the two commands with |",
            )
        if not continued:
            # a program is a word: a blank line (no word) ends the command, and a
            # `-B` repeated on continued lines is an option given twice, not a program
            first = word if _PROGRAM.fullmatch(word) and word[:1] != "-" else ""
        continued = _continues(line.rstrip())


# ``NAME = value`` or ``$NAME = value``: what a command word looks like that was meant
# to be assigned to.
_NAME_WORD = re.compile(r"\$?\{?([A-Za-z_]\w*)\}?")
# Commands that take ``=`` as an operand of their own (a comparison, an alias).
_TAKES_EQUALS = frozenset(
    {"test", "[", "[[", "expr", "let", "echo", "printf", "alias", "eval", "awk", "sed", "tr"}
)
_DECLARES = frozenset({"export", "declare", "typeset", "local", "readonly"})


def _spaced(words: list[str]) -> str | None:
    """The variable of ``NAME = v``/``NAME =v``/``$NAME = v`` (``export NAME = v``)."""
    if len(words) >= 3 and words[0] in _DECLARES:
        words = words[1:]
    if len(words) < 2 or not words[1].startswith("=") or words[0] in _TAKES_EQUALS:
        return None
    if words[1].startswith("=="):
        return None  # `if trial == 0`: a comparison outside [ ], not an assignment
    match = _NAME_WORD.fullmatch(words[0])
    return match.group(1) if match else None


# ``NAME = <value>`` at a line's start, read from the text where the grammar has no command.
# The class is a blank ``<…>`` after the =, which the grammar cannot read: other lines it
# drops may be no bash at all (a brew template's R code in ``<% … %>``).
_SPACED_LINE = re.compile(r"(?m)^[ \t]*([A-Za-z_]\w*)[ \t]+=[ \t]*(<(?!%)\S*)")


def _lost_lines(script: Script) -> Iterator[tuple[int, list[str]]]:
    """(line, its first words) of the ``NAME = …`` lines no command of the grammar covers.

    A template's blank after ``=`` (``NUM = <NUM_CORES * sockets>``) is a redirection
    that goes nowhere to the grammar, which then drops the line (and the next ones) from
    its commands; bash still reads each ``NAME = …`` line as a command NAME, once the
    blanks are filled in."""
    text = script.text
    if "= <" not in text and "=<" not in text:
        return  # a scan of the text in C, a tenth of the regex's
    found = list(_SPACED_LINE.finditer(text))
    if not found:
        return
    commands = sorted(script.commands, key=lambda c: c.start)
    starts = [c.start for c in commands]
    reach = list(accumulate((c.end for c in commands), max))  # furthest end so far
    code = dict(script.code_lines())
    for match in found:
        a, b = match.start(), match.end()
        index = bisect_left(starts, b) - 1
        if index >= 0 and reach[index] > a:
            continue  # a command covers it: read from the command
        number = script.line_of(match.start(1))
        if number in code:  # not a comment, nor a heredoc's body
            yield number, [match.group(1), "=", match.group(2)]


def _assignment_spaces(script: Script, context: LintContext) -> Iterator[Finding]:
    if " =" not in script.text:
        return
    read: Iterator[tuple[int, list[str], int]] = chain(
        ((0, [w.raw for w in command.argv[:3]], command.start) for command in script.commands),
        ((number, words, -1) for number, words in _lost_lines(script)),
    )
    for line, words, start in read:
        name = _spaced(words)
        if name is None or re.search(rf"(?m)^\s*(?:function\s+)?{name}\s*\(", script.text):
            continue  # a function of that name takes "=" as its argument
        text = script.text
        if start >= 0 and "((" in text[text.rfind("\n", 0, start) + 1 : start]:
            continue  # for ((i = 1; …)): arithmetic, where blanks are allowed
        line = line or script.line_of(start)
        yield script.finding(
            line,
            ERROR,
            RULE_ASSIGNMENT_SPACES.id,
            f"{words[0]} {words[1]} …: bash assigns only NAME=value with no blanks around =, "
            f"so this runs a command {words[0]!r} (not found) and {name} stays unset",
            f"{name}=… with no blank before or after =",
        )


_ARRAY_NAMES = ("SLURM_ARRAY_TASK_ID",)


def _zero_based(script: Script) -> bool:
    setting = script.job.get("array")
    if setting is None or setting.value is None:
        return False
    spec = re.sub(r"%\d+\s*$", "", setting.value)
    return any(re.fullmatch(r"0+(?:[-:].*)?", part.strip()) for part in spec.split(","))


def _line_pickers(names: set[str]) -> re.Pattern[str]:
    name = "|".join(sorted(names))
    value = rf"[\"']?\$\{{?(?:{name})\}}?"
    return re.compile(
        rf"\bsed\s+(?:-\w+\s+)*{value}(?:p|q;d)\b"
        rf"|\bhead\s+-n\s*{value}[\"']?\s*(?:\S+\s*)?\|\s*tail\s+-n?\s*1\b"
        rf"|NR\s*==\s*{value}"
    )


def _array_lines(script: Script, context: LintContext) -> Iterator[Finding]:
    if not _zero_based(script):
        return
    names = set(_ARRAY_NAMES)
    for binding in script.bindings:
        if binding.value is not None and re.fullmatch(
            r"\$\{?SLURM_ARRAY_TASK_ID\}?", binding.value.raw.strip("\"'")
        ):
            names.add(binding.name)
    picker = _line_pickers(names)
    for number, line in script.code_lines():
        if picker.search(line):
            yield script.finding(
                number,
                ERROR,
                RULE_ARRAY_LINES.id,
                f"--array={script.job.value('array')} starts at 0, but this picks line "
                "$SLURM_ARRAY_TASK_ID of a file, and lines count from 1: task 0 gets "
                "nothing (sed refuses address 0) and the last line never runs",
                "start the array at 1 (--array=1-N), or pick line $((SLURM_ARRAY_TASK_ID + 1))",
            )


_LOG_MARKS = re.compile(r"%(?:%|\d*[AaJjNnstuxb])")


def _log_paths(script: Script) -> list[tuple[str, str]]:
    """(option, an example of the name Slurm gives the log) for --output and --error."""
    array = script.job.get("array") is not None
    default = "slurm-%A_%a.out" if array else "slurm-%j.out"
    name = script.job.value("job-name") or "job"
    found = []
    for option in ("output", "error"):
        value = script.job.value(option)
        if option == "error" and value is None:
            continue
        value = value or default
        if "$" in value or "{" in value or value.startswith("/dev/"):
            continue
        example = _LOG_MARKS.sub(
            lambda m: name if m.group(0).endswith("x") else "7", value.replace("%%", "%")
        )
        found.append((option, posixpath.normpath(example)))
    return found


def _rm_log(script: Script, context: LintContext) -> Iterator[Finding]:
    logs = _log_paths(script)
    if not logs:
        return
    if "rm" not in script.text:
        return
    elsewhere = False  # after a cd to another directory, rm's relative words name files there
    for command in script.commands:
        if command.name in _MOVES and not command.depth:
            elsewhere = not _back_to_submit_dir(command)
            continue
        if command.name != "rm" or command.depth or elsewhere:
            continue
        args = [w for w in command.argv[1:]]
        recursive = any(w.text.startswith("-") and "r" in w.text.lower() for w in args)
        for word in args:
            text = word.text
            if text.startswith("-") or "$" in text or not text:
                continue
            pattern = posixpath.normpath(text)
            for option, log in logs:
                hit = ("*" in pattern or "?" in pattern) and fnmatch.fnmatchcase(log, pattern)
                inside = recursive and log.startswith(pattern.rstrip("/") + "/")
                if hit or inside:
                    yield script.finding(
                        script.line_of(command.start),
                        WARNING,
                        RULE_RM_LOG.id,
                        f"rm {text} also deletes this job's own --{option} ({log} for job 7): "
                        "Slurm keeps writing into the deleted file, and the run's log is lost",
                        'delete only older logs (find … ! -name "*$SLURM_JOB_ID*" -delete), '
                        "or keep logs in a directory the job never cleans",
                    )
                    break


_MOVES = frozenset({"cd", "pushd", "popd"})


def _back_to_submit_dir(move: Command) -> bool:
    """``cd "$SLURM_SUBMIT_DIR"`` (or ``popd``) brings the shell back where the logs are.

    The job starts in its working directory, where relative log names are opened; a
    ``cd`` anywhere else (``cd /scratch/run/; rm -R *``) makes the same glob name other
    files, and which directory that is cannot be told from the script.
    """
    if move.name == "popd":
        return True
    target = [w.text for w in move.argv[1:] if not w.text.startswith("-")]
    return bool(target) and target[0].strip('"{}$') in ("SLURM_SUBMIT_DIR", "PWD")


# Variables Slurm sets only when the job asks for the option beside them. Not the
# array's: --array is as often given on sbatch's command line as in the header.
_SET_BY = {
    "SLURM_GPUS": "gpus",
    "SLURM_GPUS_PER_TASK": "gpus-per-task",
    "SLURM_GPUS_PER_NODE": "gpus-per-node",
    "SLURM_CPUS_PER_TASK": "cpus-per-task",
    "SLURM_NTASKS_PER_NODE": "ntasks-per-node",
    "SLURM_MEM_PER_GPU": "mem-per-gpu",
}
# Options that size a job. A header with none of them leaves the job's size to sbatch's
# command line (a wrapper's ``sbatch -N4 --ntasks-per-node=8 …``): then nothing is known.
_SIZES = (*COUNT_OPTIONS, "gres", "mem-per-gpu")
# The same resource asked for another way: the submitter sized it in the header, so no
# option on the command line will set the variable, and a test of it is no guard.
_SIBLINGS = {
    "SLURM_GPUS": ("gres", "gpus-per-node", "gpus-per-task"),
    "SLURM_GPUS_PER_TASK": ("gres", "gpus", "gpus-per-node"),
    "SLURM_GPUS_PER_NODE": ("gres", "gpus", "gpus-per-task"),
}


# Variables older Slurm never sets, whatever the job asks for (env.c and job_mgr.c of
# slurm-23-02-0-1 set them; slurm-22-05-11-1 has neither).
_SET_FROM = {
    "SLURM_JOB_END_TIME": SlurmVersion(23, 2, 0),
    "SLURM_JOB_START_TIME": SlurmVersion(23, 2, 0),
}


def _sized_in_header(script: Script) -> bool:
    read = any(d.ignored is None for d in script.directives)
    return read and any(script.job.get(option) is not None for option in _SIZES)


def _asked_otherwise(script: Script, name: str) -> bool:
    gres = script.job.value("gres") or ""
    for option in _SIBLINGS.get(name, ()):
        if option == "gres" and "gpu" not in gres:
            continue
        if script.job.get(option) is not None:
            return True
    return False


# Commands whose words are only shown: an empty value there loses nothing.
_MESSAGES = frozenset({"echo", "printf"})
# A usage comment: ``# sbatch --cpus-per-task 32 slurm/run.slurm``.
_USAGE = re.compile(r"(?m)^[ \t]*#+[^\n]*?\bsbatch\b(?P<rest>[^\n]*)")


def _given_on_command_line(script: Script) -> set[str]:
    """Options the script's own usage comment passes to sbatch: the author gives them
    there, so the header need not (``# sbatch --cpus-per-task 32 run.slurm "$@"``)."""
    if "sbatch" not in script.text:
        return set()
    given: set[str] = set()
    # line by line, only lines naming sbatch: the regex's lazy scan of every comment line
    # for the word was 30 ms of a 40,000-line script
    for line in script.text.split("\n"):
        if "sbatch" in line and (match := _USAGE.match(line)) is not None:
            given.update(re.findall(r"--([a-z][\w-]*)", match["rest"]))
    return given


def _unset(script: Script, context: LintContext) -> Iterator[Finding]:
    yield from _too_new(script, context)
    if not _sized_in_header(script):
        return  # the job's size comes from sbatch's command line: unknown
    usage = _given_on_command_line(script)
    wanted = {
        name
        for name, option in _SET_BY.items()
        if script.job.get(option) is None
        and option not in usage
        and name in script.text
        and not _refused_ask(script, option)
    }
    if not wanted:
        return
    assigned = {b.name for b in script.bindings}
    tested = _tested(script)
    guarded = {name for name in tested if not _asked_otherwise(script, name)}
    used: dict[str, int] = {}
    for command in script.commands:
        if command.name in _MESSAGES:
            continue  # only printed: an empty value loses nothing
        for word in command.words:
            for name in sorted((word.expands & wanted) - assigned - guarded - used.keys()):
                if not has_fallback(name, word.raw):  # ${VAR:-default} is handled
                    used[name] = script.line_of(_offset_of(name, word))
    # a test alone is a use too where it can never pass (`[ -z "$SLURM_GPUS" ] && exit`)
    past_end = script.text.count("\n") + 2
    for name in sorted((tested & wanted) - assigned - guarded - used.keys()):
        used[name] = past_end
    for name, line in used.items():
        line = _first_use(script, name, line)
        if line >= past_end:
            continue  # tested only where a default handles it
        if _empty_for_srun(script, context, name, line):
            yield script.finding(
                line,
                ERROR,
                RULE_UNSET.id,
                f"${name} is empty in this job (no --cpus-per-task), and srun on "
                f"Slurm {context.version} reads SRUN_CPUS_PER_TASK and stops on its empty value "
                '(Invalid numeric value "" for --cpus-per-task): every srun step fails',
                "#SBATCH --cpus-per-task=…, or SRUN_CPUS_PER_TASK=${SLURM_CPUS_PER_TASK:-1}",
            )
            continue
        yield script.finding(
            line,
            INFO,
            RULE_UNSET.id,
            f"${name} is empty in this job: Slurm sets it only with "
            f"--{_SET_BY[name]}, which the job does not ask for",
            f"#SBATCH --{_SET_BY[name]}=…, or ${{{name}:-default}}",
        )


def _empty_for_srun(script: Script, context: LintContext, name: str, line: int) -> bool:
    """``export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK`` (the 22.05 workaround) in a job
    without --cpus-per-task, before an srun, where srun reads that variable.

    srun 22.05.8 then exits at once: parse_int("") is "Invalid numeric value" (run with
    the binary); the 24.11 and 26.05 binaries ignore the variable, as srun no longer reads it.
    """
    if name != "SLURM_CPUS_PER_TASK" or context.version is None:
        return False
    if srun_inherits_cpus_per_task(context.version):
        return False
    for srun in script.sruns:
        env = srun.env.get("SRUN_CPUS_PER_TASK")
        if env is not None and env.exported and env.line == line and env.value is not None:
            return True
    return False


def _offset_of(name: str, word: Word) -> int:
    """Where ``word`` expands ``name``: a quoted word may span lines (``bash -c "torchrun \\``
    and ``--nproc_per_node=$SLURM_GPUS_PER_NODE`` three lines down), and the finding names
    the line of the variable, not the line the word starts on."""
    found = re.search(rf"\$\{{?{name}\b", word.raw)
    return word.start + found.start() if found else word.start


def _refused_ask(script: Script, option: str) -> bool:
    """Whether a directive asks for ``option`` by a prefix sbatch refuses as ambiguous
    (``--cpus-per=task=2``: "option '--cpus-per=task=2' is ambiguous; possibilities:
    '--cpus-per-gpu' '--cpus-per-task'", sbatch 22.05.8). sbatch submits nothing, and the
    job the author meant has the option: the variable is that job's, set."""
    for directive in script.directives:
        for asked in directive.options:
            name = asked.name
            if name == option or not option.startswith(name):
                continue
            if len(match_long(name, long_options(None))) > 1:  # --gpus is an option itself
                return True
    return False


def _too_new(script: Script, context: LintContext) -> Iterator[Finding]:
    """A variable this Slurm does not set yet is empty for every job: arithmetic on
    ``$SLURM_JOB_END_TIME`` at 22.05 yields a negative time left."""
    version = context.version
    wanted = {
        name
        for name, since in _SET_FROM.items()
        if name in script.text and (version is None or version < since)
    }
    if not wanted:
        return
    wanted -= {b.name for b in script.bindings} | _tested(script)
    reported: set[str] = set()
    for command in script.commands:
        for word in command.words:
            for name in sorted((word.expands & wanted) - reported):
                if has_fallback(name, word.raw):
                    continue
                reported.add(name)
                since = _SET_FROM[name]
                yield script.finding(
                    script.line_of(word.start),
                    WARNING,
                    RULE_UNSET.id,
                    f"${name} is empty before Slurm {since.major}.{since.minor:02d}, which "
                    f"first sets it (linted for {context.version_text})",
                    f"${{{name}:-fallback}}, or compute the time from the job's --time",
                )


def _first_use(script: Script, name: str, used: int) -> int:
    """The first line that expands ``name`` with no default: a test there is the defect
    (``[ -z "$SLURM_GPUS" ] && exit``), which the syntax tree keeps apart from commands."""
    bare = re.compile(rf"\$\{{?{name}\b(?!:?[-=+?])")
    for number, line in script.code_lines():
        if number >= used:
            break
        if name in line and bare.search(line) and line.split(None, 1)[0] not in _MESSAGES:
            return number
    return used


def _tested(script: Script) -> set[str]:
    """Variables the script checks itself (``[ -n "$SLURM_CPUS_PER_TASK" ]``)."""
    found: set[str] = set()
    for command in script.commands:
        if command.name in ("[", "test", "[["):
            for word in command.argv:
                found |= word.expands
    for _, line in script.code_lines():
        if "[[" in line or "-z" in line or "-n" in line:
            found |= set(re.findall(r"-[zn]\s+\"?\$\{?(SLURM_\w+)", line))
        if "[[" in line:  # bash's own test is no command in the tree: its operands
            for inside in _DOUBLE_BRACKETS.findall(line):
                found |= set(re.findall(r"\$\{?(SLURM_\w+)", inside))
    return found


# ``[[ "${SLURM_GPUS_PER_TASK:-none}" != "none" ]]``: what bash's [[ … ]] compares
_DOUBLE_BRACKETS = re.compile(r"\[\[\s(.*?)\s\]\]")


RULE_BRACKET = Rule(
    "test-bracket-unclosed",
    ERROR,
    '[ -z "$x"] (no blank before ]): the test always fails',
    _bracket,
)
RULE_OPTION_COMMAND = Rule(
    "option-as-command",
    ERROR,
    "a line starting with --option (or only '> log 2>&1 &'): the line before lost its backslash",
    _reachable(_option_as_command),
)
# Info since 2026-12-01: right on 0 of 22 findings on the scored test parts, under half on
# every part it fired in, the last included (holdout9: 0 of 8), though each round fixed the classes
# of the part before (test_quiet_where_never_right_unseen).
RULE_CONTINUED_INTO = Rule(
    "continued-into-command",
    INFO,
    "a backslash before a new command (or the same program again): it became arguments",
    _reachable(_continued_into),
)
RULE_ASSIGNMENT_SPACES = Rule(
    "assignment-with-spaces",
    ERROR,
    "NAME = value (blanks around =): bash runs a command NAME, and NAME stays unset",
    _reachable(_assignment_spaces),
)
RULE_ARRAY_LINES = Rule(
    "array-zero-line",
    ERROR,
    'an array from 0 picking line $SLURM_ARRAY_TASK_ID (sed -n "${SLURM_ARRAY_TASK_ID}p")',
    _array_lines,
)
RULE_RM_LOG = Rule(
    "rm-own-log",
    WARNING,
    "rm of a glob that matches the job's own --output/--error",
    _rm_log,
)
# Its warnings are info since 2026-12-02: right on 14 of 32 shown on the scored test parts,
# and on the last it fired in (holdout10: 0 of 2) under half. Still shown: the cases checked
# on Slurm itself, an empty SRUN_CPUS_PER_TASK that 22.05's srun stops on (an error) and a
# variable the target version does not set yet (a warning).
RULE_UNSET = Rule(
    "slurm-variable-unset",
    WARNING,
    "$SLURM_GPUS_PER_TASK (and others) used where the job lacks the option that sets it",
    _reachable(_unset),
)
RULES = (
    RULE_BRACKET,
    RULE_OPTION_COMMAND,
    RULE_CONTINUED_INTO,
    RULE_ASSIGNMENT_SPACES,
    RULE_ARRAY_LINES,
    RULE_RM_LOG,
    RULE_UNSET,
)
