"""Rules on the ``#SBATCH`` header: lines sbatch never reads, time, log names, arrays."""

from __future__ import annotations

import re
from collections.abc import Iterator

from slurmkit.errors import SlurmParseError
from slurmkit.grammar.idrange import parse_array
from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, INFO, WARNING, Finding, Rule
from slurmkit.lint.rules.header import filled_in_first, named_template, placeholder_lines
from slurmkit.lint.rules.launchers import TRAINER, launcher_kind, launcher_lines
from slurmkit.lint.script import Script
from slurmkit.lint.shell import mask_templates
from slurmkit.sbatch.directives import (
    AFTER_COMMAND,
    ESCAPED_BLANK_FROM,
    INDENTED,
    MAGIC,
    TRAILING_ESCAPED_BLANK,
    WRONG_CASE,
    Directive,
    pattern_letters,
    read_directives,
    sbatch_words,
)
from slurmkit.sbatch.options import parse_options

_IGNORED = {
    AFTER_COMMAND: "comes after the first command: sbatch stops reading #SBATCH lines at the "
    "first line that is not a comment, so this option is silently not applied",
    INDENTED: "does not start in column 0: sbatch only reads lines that begin with #SBATCH, "
    "so this option is silently not applied",
    WRONG_CASE: "is not spelled #SBATCH: sbatch's magic word is case-sensitive, so this option "
    "is silently not applied",
}
_IGNORED_FIX = {
    AFTER_COMMAND: "move it up, above the first command (blank lines and comments may stay)",
    INDENTED: "remove the leading blanks",
    WRONG_CASE: "write #SBATCH in capitals",
}
_TRAINING = re.compile(r"train|(?<![a-z])tr\d", re.I)


def _has_directives(script: Script) -> bool:
    return any(d.ignored is None for d in script.directives)


def _lost_to_first_line(script: Script) -> set[int]:
    """Directives ignored only because line 1 is a command: a shebang that lost its ``#!``.

    ``bin/bash`` or ``!/bin/bash`` as line 1 is a command to sbatch's header reader, so
    every ``#SBATCH`` below it reads as "after the first command"; but the defect is the
    first line, and sbatch refuses such a script whole. The lines that a real shebang
    would make directives (none when line 1 is a comment, blank or a shebang).
    """
    first = script.lines[0].strip() if script.lines else ""
    if not first or first.startswith("#") or "<<" in first:
        return set()  # `sbatch <<EOT` on line 1: the file submits a job script, it is none
    repaired = read_directives(
        ["#", *script.lines[1:]], script.parsed.comment_lines, mask=mask_templates
    )
    return {d.line for d in repaired if d.ignored is None}


def _read_once_filled_in(script: Script) -> set[int]:
    """Directives after a template's placeholder line, which sbatch reads once it is filled in.

    ``${PARTITION_OPTION}`` alone on a header line of Ray's ``slurm-template.sh`` (and
    dagster-slurm's copy) is replaced by an ``#SBATCH --partition=...`` line or by nothing
    before sbatch reads the file: it ends no header. Only in a heredoc or a file named
    as a template; elsewhere such a line runs a command (one the caller exports, say),
    and ends the header.
    """
    if not any(d.ignored == AFTER_COMMAND for d in script.directives):
        return set()
    blanks = placeholder_lines(script)
    if not blanks or not named_template(script):
        return set()  # the line itself is no evidence: in a plain script it is a command
    lines = ["" if number in blanks else line for number, line in enumerate(script.lines, 1)]
    repaired = read_directives(lines, script.parsed.comment_lines, mask=mask_templates)
    return {d.line for d in repaired if d.ignored is None}


def _shebang(script: Script, context: LintContext) -> Iterator[Finding]:
    body = script.text
    if body.startswith("#!"):
        return
    if _has_directives(script) or _lost_to_first_line(script):
        first = body.split("\n", 1)[0]
        yield script.finding(
            1,
            ERROR,
            RULE_SHEBANG.id,
            "sbatch refuses a script whose first line is not #! + an interpreter "
            f"(this one starts with {first[:40]!r})",
            "make #!/bin/bash the very first line",
        )


def _dos(script: Script, context: LintContext) -> Iterator[Finding]:
    if script.crlf_line and _rendered_by_code(script):
        yield script.finding(
            script.crlf_line,
            INFO,
            RULE_DOS.id,
            "DOS line breaks (\\r\\n) in a template that code fills in before sbatch reads "
            "it: Python's text mode (str.format, string.Template, Jinja) writes \\n line "
            "breaks, sed and envsubst keep \\r\\n, so whether sbatch refuses it depends on "
            "the renderer",
            "convert it anyway: dos2unix SCRIPT (or sed -i 's/\\r$//' SCRIPT)",
        )
    elif script.crlf_line:
        yield script.finding(
            script.crlf_line,
            ERROR,
            RULE_DOS.id,
            "DOS line breaks (\\r\\n): sbatch refuses the script, and bash would read every "
            "line with a stray carriage return",
            "convert it: dos2unix SCRIPT (or sed -i 's/\\r$//' SCRIPT)",
        )


# A Python format field standing alone in a word: ``python {extract_script}``. Bash has no
# such syntax (``${x}`` and ``{a,b}`` are other things), so it is a blank code fills in.
_FORMAT_FIELD = re.compile(r"(?<![$\w{])\{[A-Za-z_]\w*\}(?!\})")
_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}")


def _rendered_by_code(script: Script) -> bool:
    """A template (by its name, or a placeholder line) whose blanks a program fills in.

    Such a file is never what sbatch reads: what renders it writes the script. Python's
    text mode (universal newlines) and Jinja's lexer write Unix line breaks whatever they
    read; sed and envsubst keep them (C2SM's processing-chain copies
    ``sbatch_extract_template``, ``python {extract_script}``, for Python to fill in).
    A template a person fills in by hand (blank values: ``--job-name=``) keeps them:
    judged as any script.
    """
    if script.origin is not None or not filled_in_first(script):
        return False
    if placeholder_lines(script):
        return True
    return any(_FORMAT_FIELD.search(line) or _JINJA.search(line) for _, line in script.code_lines())


_SHELL_OPERATOR = re.compile(r"<<|>|\||;|&&|\$\(")


def _loses_nothing(script: Script, directive: Directive) -> bool:
    """An ignored line whose every option a line sbatch reads sets to the same value."""
    words = sbatch_words(directive.text.lstrip()[len(MAGIC) :])
    options, end = parse_options(words)
    if not options or end < len(words):
        return False
    for option in options:
        setting = script.job.get(option.name)
        if setting is None or setting.value != option.value:
            return False
    return True


def _commented_command(directive: Directive) -> bool:
    """``#sbatch --dependency ... << EOF``, ``#sbatch job_next``: an sbatch command
    shown in (or commented out as) a comment.

    The magic word is not #SBATCH, and the line holds shell redirections, pipes, a word
    that is no option (the script to submit: a directive has none, sbatch refuses one
    as an invalid directive) or no option at all: a command, not a lost option.
    """
    if directive.text.lstrip().startswith(MAGIC):
        return False
    rest = directive.text.lstrip()[len(MAGIC) :]
    if _SHELL_OPERATOR.search(rest):
        return True
    words = sbatch_words(rest)
    options, end = parse_options(words)
    return not options or end < len(words)


def _ignored(script: Script, context: LintContext) -> Iterator[Finding]:
    # The verdict depends only on the line's text and the header: a script that repeats
    # a block of ignored lines (a second job's header, a commented-out copy) splits each
    # distinct text once.
    harmless: dict[str, bool] = {}
    lost = _lost_to_first_line(script)  # missing-shebang names the one fix
    filled = _read_once_filled_in(script)
    for directive in script.directives:
        if not directive.ignored or directive.line in lost or directive.line in filled:
            continue
        verdict = harmless.get(directive.text)
        if verdict is None:
            verdict = _loses_nothing(script, directive) or _commented_command(directive)
            harmless[directive.text] = verdict
        if not verdict:
            yield script.finding(
                directive.line,
                WARNING,
                RULE_IGNORED.id,
                f"{directive.text.strip()!r} {_IGNORED[directive.ignored]}",
                _IGNORED_FIX[directive.ignored],
            )


def _continued(script: Script, context: LintContext) -> Iterator[Finding]:
    for directive in script.directives:
        if not directive.continued or directive.ignored is not None:
            continue
        if _refused_blank(directive, context):
            yield script.finding(
                directive.line,
                ERROR,
                RULE_CONTINUED.id,
                "the directive ends in a backslash and a blank: "
                f"{context.on_versions('from Slurm 24.05')} sbatch reads '\\ ' as a word "
                "' ' of its own, which is no option (Invalid directive found in batch script): "
                "sbatch refuses the whole script and nothing is queued",
                "remove the trailing backslash (sbatch never joins #SBATCH lines)",
            )
        elif not _continues_nothing(script, directive):
            yield script.finding(
                directive.line,
                WARNING,
                RULE_CONTINUED.id,
                "sbatch reads #SBATCH lines one at a time: the trailing backslash does not "
                "continue this directive, and a next line without #SBATCH ends the header "
                "(every later #SBATCH is ignored)",
                "one #SBATCH line per option (several options may share one line)",
            )


def _refused_blank(directive: Directive, context: LintContext) -> bool:
    """``... \\ ``: before 24.05 sbatch drops the escaped blank, from 24.05 it is a word.

    Only where sbatch reads it: after an unescaped ``#`` the line is a comment to
    ``get_argument``, so a ``\\ `` there is no word.
    """
    if context.version is not None and context.version < ESCAPED_BLANK_FROM:
        return False
    if not TRAILING_ESCAPED_BLANK.search(directive.text):
        return False
    words = sbatch_words(directive.text[len(MAGIC) :])
    return bool(words) and not words[-1].strip()


def _continues_nothing(script: Script, directive: Directive) -> bool:
    """A blank line (or the end) after the backslash: no line was meant to join it.

    sbatch drops the backslash, and the header goes on past a blank line, so nothing
    of the header is lost and nothing runs as a command.
    """
    following = script.lines[directive.line] if directive.line < len(script.lines) else ""
    return not following.strip()


def _time(script: Script, context: LintContext) -> Iterator[Finding]:
    if _has_directives(script) and script.job.get("time") is None:
        first = next(d.line for d in script.directives if d.ignored is None)
        yield script.finding(
            first,
            WARNING,
            RULE_TIME.id,
            "no --time: the job gets the partition's default limit (often its maximum), waits "
            "longer for a slot because backfill cannot fit it, and may be killed at a limit "
            "nobody chose",
            "#SBATCH --time=HH:MM:SS (a little more than the run needs)",
        )


def _output(script: Script, context: LintContext) -> Iterator[Finding]:
    """A fixed log name: a defect only where runs collide (issue 32 item 2), else style.

    Runs collide in an array (tasks at once) and in a chain that submits this same
    script again (each run truncates the last one's log). A script submitted once at
    a time overwrites only an old log: info. So does an array whose name holds the
    task id alone (``%a``): its tasks write files of their own, and only a later
    submission of the array overwrites them.
    """
    array = script.job.get("array") is not None
    tasks_at_once = array and not single_task(script.job.value("array"))
    index_line: int | None = None if array else -1  # looked up once, only if needed
    resubmits: int | None = -1
    for name in ("output", "error"):
        setting = script.job.get(name)
        if setting is None or setting.value is None or setting.value.startswith("/dev/"):
            continue
        value = setting.value
        if "$" in value or "{" in value:
            continue  # a template or shell value: unknown until it is filled in, never wrong
        letters = pattern_letters(value)
        unique = bool(letters & {"j", "J"}) or (
            {"A", "a"} <= letters if tasks_at_once else "A" in letters
        )
        if unique:
            continue
        if index_line == -1:
            index_line = _reads_task_index(script)
        if resubmits == -1:
            resubmits = resubmits_itself(script)
        if tasks_at_once and "a" not in letters:
            rule, severity = "output-collides", WARNING
            why = "the tasks of this array run at once and write the same file"
        elif index_line and "a" not in letters:
            rule, severity = "output-collides", WARNING
            why = (
                f"the script works on $SLURM_ARRAY_TASK_ID (line {script.shown(index_line)}), "
                "so it is submitted as an array (sbatch --array=…), whose tasks run at once "
                "and write the same file"
            )
        elif resubmits is not None:
            rule, severity = "output-collides", WARNING
            why = (
                f"this script submits itself again (line {script.shown(resubmits)}), and each "
                "run of the chain truncates the previous run's log"
            )
        else:
            rule, severity = "output-without-jobid", INFO
            why = "a later run of this script overwrites this run's log"
        missing = (
            "no task id in it (%A is the whole array's job id, the same for every task)"
            if "A" in letters
            else "no job id in it"
        )
        yield script.finding(
            setting.line,
            severity,
            rule,
            f"--{name}={value} has {missing}: {why}",
            f"--{name}=" + ("%x-%A_%a.out" if array else "%x-%j.out") + " (%j: job id, "
            "%A_%a: array job and task)",
        )


def _reads_task_index(script: Script) -> int:
    """The first line that works on ``$SLURM_ARRAY_TASK_ID`` (not one that only prints it),
    or 0: a script with no ``--array`` that does is meant to be submitted as an array.

    A read with a default (``${SLURM_ARRAY_TASK_ID:-0}``) or a test of whether it is set
    shows the script is built to run alone too: such reads do not count, and a test
    anywhere settles it.
    """
    first = 0
    for number, line in script.code_lines():
        if _TASK_INDEX_TESTED.search(line):
            return 0
        read = _TASK_INDEX.search(_TASK_INDEX_DEFAULT.sub("", line))
        if not first and read and not _PRINTS.match(line):
            first = number
    return first


_PRINTS = re.compile(r"\s*(?:echo|printf)\b")
# ${SLURM_ARRAY_TASK_ID:-0}, -0, :=0, :+x: a value for a run that is no array task.
_TASK_INDEX_DEFAULT = re.compile(r"\$\{SLURM_ARRAY_TASK_ID:?[-=+]")
# [ -z "$SLURM_ARRAY_TASK_ID" ], [[ -n ${SLURM_ARRAY_TASK_ID} ]], [[ -v SLURM_ARRAY_TASK_ID ]]
_TASK_INDEX_TESTED = re.compile(r"(?<!\S)-[nzv]\s+[\"']?(?:\$\{?)?SLURM_ARRAY_TASK_ID\b")


def single_task(array: str | None) -> bool:
    """``--array=0``, ``--array=3-3``: one task, which runs with no other task of its array."""
    if array is None:
        return False
    try:
        return parse_array(array).count() == 1
    except SlurmParseError:
        return False  # a variable, or nothing readable: may be many tasks


def _fixed_names(script: Script, context: LintContext, rule: str) -> Iterator[Finding]:
    return (f for f in _output(script, context) if f.rule == rule)


_SELF = frozenset({"$0", "${0}", "$BASH_SOURCE", "${BASH_SOURCE}", "${BASH_SOURCE[0]}"})


def resubmits_itself(script: Script) -> int | None:
    """The line of an ``sbatch`` that submits this script again (``sbatch "$0"``), or None."""
    if "sbatch" not in script.text.replace("#SBATCH", ""):
        return None  # the common script: no command to look at
    own = script.path.rsplit("/", 1)[-1]
    for command in script.commands:
        if command.name != "sbatch":
            continue
        for word in command.argv[1:]:
            text = word.raw.strip("\"'")
            if text in _SELF or (own not in ("", "-") and text.rsplit("/", 1)[-1] == own):
                return script.line_of(command.start)
    return None


def _per_node(script: Script, context: LintContext) -> Iterator[Finding]:
    for name in ("output", "error"):
        setting = script.job.get(name)
        if setting is None or setting.value is None or "%N" not in setting.value:
            continue
        yield script.finding(
            setting.line,
            INFO,
            RULE_PER_NODE.id,
            f"#SBATCH --{name}={setting.value}: the batch step runs on the first node only, so "
            "%N is that node's name and every node's output still goes into this one file",
            f"keep #SBATCH --{name}=%x-%j.out and give the step its own per-node files: "
            f"srun --{name}=%x-%j-%N.out ... (srun's %N is each node's name)",
        )


_TASK_INDEX = re.compile(r"\$\{?SLURM_ARRAY_TASK_ID\b")


def _array(script: Script, context: LintContext) -> Iterator[Finding]:
    setting = script.job.get("array")
    if setting is None or setting.value is None:
        return
    name = script.job.value("job-name") or ""
    trainers = [n for _, n in launcher_lines(script) if launcher_kind(n) == TRAINER]
    training = bool(trainers) or bool(_TRAINING.search(name))
    limit = re.search(r"%(\d+)\s*$", setting.value)
    if not training or (limit and limit.group(1) == "1") or single_task(setting.value):
        return
    # Tasks that read their index run different things (a sweep's settings, a shard):
    # distinct runs, not one training resuming the same checkpoint in parallel.
    if any(_TASK_INDEX.search(line) for _, line in script.code_lines(heredocs=True)):
        return
    now = (
        f"%{limit.group(1)} runs {limit.group(1)} at once"
        if limit
        else "without %1 all run at once"
    )
    ranges = re.sub(r"%\d+\s*$", "", setting.value)
    yield script.finding(
        setting.line,
        RULE_ARRAY.severity,
        RULE_ARRAY.id,
        f"--array={setting.value} for a training: {now}, and runs of one training that resume "
        "from the same checkpoints must run one after the other",
        f"--array={ranges}%1",
    )


RULE_SHEBANG = Rule(
    "missing-shebang", ERROR, "first line is not #!interpreter: sbatch refuses the script", _shebang
)
RULE_DOS = Rule("dos-line-breaks", ERROR, "\\r\\n line breaks: sbatch refuses the script", _dos)
RULE_IGNORED = Rule(
    "sbatch-directive-ignored",
    WARNING,
    "#SBATCH line that sbatch ignores (after the first command, indented, wrong case)",
    _ignored,
)
RULE_CONTINUED = Rule(
    "sbatch-continuation",
    ERROR,
    "#SBATCH line ending in a backslash (sbatch does not join lines; from 24.05 a final "
    "'\\ ' is a word of its own and sbatch refuses the script)",
    _continued,
)
RULE_TIME = Rule(
    "missing-time", INFO, "no #SBATCH --time (site policy: the partition's default applies)", _time
)
RULE_OUTPUT = Rule(
    "output-without-jobid",
    INFO,
    "--output/--error without %j: a later run overwrites the log (style where runs do not collide)",
    lambda script, context: _fixed_names(script, context, "output-without-jobid"),
)
# Found by the same check: the fixed name where runs do collide (issue 32 item 2).
RULE_COLLIDES = Rule(
    "output-collides",
    WARNING,
    "--output/--error without %j (%A_%a) in an array (or a script working on its task index) "
    "or a script that resubmits itself: runs at once or in a chain truncate each other's logs",
    lambda script, context: _fixed_names(script, context, "output-collides"),
)
RULE_PER_NODE = Rule(
    "output-per-node",
    INFO,
    "%N in #SBATCH --output/--error: the batch step runs on the first node only",
    _per_node,
)
RULE_ARRAY = Rule(
    "array-without-limit",
    INFO,  # a sweep of independent trainings runs at once on purpose: 0 of 2 right (dev)
    "--array without %1 for a training (all array jobs run at once)",
    _array,
)
RULES = (
    RULE_SHEBANG,
    RULE_DOS,
    RULE_IGNORED,
    RULE_CONTINUED,
    RULE_TIME,
    RULE_OUTPUT,
    RULE_COLLIDES,
    RULE_PER_NODE,
    RULE_ARRAY,
)
