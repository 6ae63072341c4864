"""The ``#SBATCH`` header word by word, as sbatch's getopt reads it (issue 32 item 4).

sbatch refuses the whole script, before anything is queued, when a directive holds a
word its option table does not know ("unrecognized option", "invalid option") or a
word that is no option at all ("Invalid directive found in batch script"): checked on
22.05, 24.11 and 26.05, so these are errors. A line that is almost ``#SBATCH``
(``#SBTACH``, ``# SBATCH``) is a comment to sbatch: its option is silently not
applied. An option given twice keeps the later value; the earlier one is ignored.
A long option stock sbatch never had, and that misspells none of its options, may be
one a site's SPANK plugin adds: it depends on the cluster (info).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from functools import lru_cache

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, INFO, WARNING, Finding, Rule
from slurmkit.lint.sbatch_table import (
    SHORT_FLAGS,
    SHORT_WITH_VALUE,
    long_options,
    match_long,
    stock_meaning,
)
from slurmkit.lint.script import Script
from slurmkit.lint.shell import mask_templates
from slurmkit.sbatch import signal as sbatch_signal
from slurmkit.sbatch.directives import (
    ESCAPED_BLANK_FROM,
    MAGIC,
    TRAILING_ESCAPED_BLANK,
    Directive,
    sbatch_words,
)
from slurmkit.sbatch.options import LONG_FLAGS, SHORT, parse_options
from slurmkit.slurm.records import SlurmVersion

# Dashes that look like "-" but are other characters (word processors, web pages).
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d"
_DASH = re.compile(f"(?:^|(?<=\\s))[{DASHES}]+[A-Za-z]")
# Separators of the components of a heterogeneous job (packjob: before 20.02).
_COMPONENT = frozenset({"hetjob", "packjob"})
# Options whose repeats add up instead of replacing (-v counts); mail types were or-ed
# until 25.05, where the last --mail-type replaces the others (slurm commit fac544cef5).
_ADDS_UP = frozenset({"verbose", "quiet"})
MAIL_TYPE_REPLACED = SlurmVersion(25, 5, 0)
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
        if line.lstrip().startswith("##") or line.startswith("#!"):
            continue  # ##SBATCH, indented or not: switched off on purpose
        match = _NEAR.match(line.lstrip())
        if match is None:
            continue
        word, rest = match.group(1), match.group(2).lstrip()
        if not rest.startswith("-") or not word.isupper():
            continue  # prose, or a command shown in a comment (# sbatch -N 2 job.sh)
        spaced = word.upper() == "SBATCH"
        if not spaced and (
            _edits(word.upper(), "SBATCH") > 2
            or not match.group(2)[:1].isspace()
            or not _reads_as_sbatch(rest)
        ):
            continue  # BATCH-SIZE: one hyphenated word of prose, not a word and an option
        why = "has a blank between # and SBATCH" if spaced else f"spells the magic word {word!r}"
        timed = spaced and _option_name(rest) in _TIME_WINDOW
        note = _SWITCHED_OFF if timed else ""
        if spaced and not timed and _alternatives_switched_off(script):
            timed, note = True, _ALTERNATIVE
        yield script.finding(
            number,
            INFO if timed else WARNING,
            RULE_MISSPELT.id,
            f"{line.strip()!r} {why}: sbatch reads only lines that start with #SBATCH, so "
            f"{rest.split()[0]} is silently not applied{note}",
            f"#SBATCH {rest}" + (" (or ##SBATCH to switch it off on purpose)" if spaced else ""),
        )


# Options bound to a time window (a course's or a hackathon's reservation): once it has
# passed, the line must go, and '# SBATCH' is a usual way of switching it off.
_TIME_WINDOW = frozenset({"reservation"})
_SWITCHED_OFF = (
    " (a reservation is a time window: once it has passed, the line is often switched off "
    "this way on purpose)"
)


_ALTERNATIVE = (
    " (this script also switches off, the same way, an option it sets on a #SBATCH line: "
    "its '# SBATCH' lines read as alternatives kept on purpose)"
)
_SPACED = re.compile(r"#\s+SBATCH\s+(-.*)")


def _alternatives_switched_off(script: Script) -> bool:
    """Whether some '# SBATCH' line names an option a read #SBATCH line sets.

    ``# SBATCH --gres=gpu:1`` beside ``#SBATCH --gres=gpu:l40s:4`` is the other choice,
    kept and switched off: the author knows the blank turns the line off, so the script's
    other '# SBATCH' lines (the partition and constraint that went with that choice) are
    switched off the same way, not misspelt.
    """
    read = {o.name for d in script.directives if d.ignored is None for o in d.options}
    if not read:
        return False
    for _, line in _header_comments(script):
        spaced = _SPACED.match(line.strip())
        if spaced is None:
            continue
        options, _ = parse_options(spaced.group(1).split())
        if any(o.name in read for o in options):
            return True
    return False


def _reads_as_sbatch(rest: str) -> bool:
    """The words after a near-miss magic word start with an option sbatch has.

    A site's wrapper may read its own magic word beside #SBATCH (``#YBATCH -r
    dgx-a100_8`` for a lab's ybatch): a misspelling of #SBATCH is followed by sbatch's
    options, another tool's word by its own.
    """
    first = rest.split()[0]
    if first.startswith("--"):
        return _misspelt_option(_option_name(rest), long_options(None))
    return len(first) > 1 and first[1] in SHORT_WITH_VALUE | SHORT_FLAGS


def _option_name(rest: str) -> str:
    return rest.split()[0].lstrip("-").partition("=")[0]


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


def _words(directive_text: str, version: SlurmVersion | None = None) -> list[str]:
    escaped_blank = version is None or version >= ESCAPED_BLANK_FROM
    return sbatch_words(mask_templates(directive_text[len(MAGIC) :]), escaped_blank)


# Options of SPANK plugins that sites add to sbatch: unknown to stock sbatch, real where
# the plugin is installed, so a script written for such a site is no defect there (info).
# Shifter (NERSC), pyxis (NVIDIA enroot), CSCS's container engine and uenv, mpibind (LLNL).
SPANK_PLUGINS = {
    "image": "Shifter",
    "volume": "Shifter",
    "module": "Shifter",
    "environment": "CSCS container engine",
    "uenv": "uenv (CSCS)",
    "view": "uenv (CSCS)",
    "mpibind": "mpibind",
}
_PYXIS_FLAGS = frozenset(
    {
        "container-mount-home",
        "no-container-mount-home",
        "container-remap-root",
        "no-container-remap-root",
        "container-entrypoint",
        "no-container-entrypoint",
        "container-entrypoint-log",
        "container-writable",
        "container-readonly",
    }
)
_PYXIS = _PYXIS_FLAGS | {
    "container-image",
    "container-mounts",
    "container-workdir",
    "container-name",
    "container-save",
    "container-env",
}
# Options whose value is a number or a count (node ranges, [type:]count): a shell
# variable there, which sbatch never expands in a directive, is always refused.
_COUNTS = frozenset(
    {
        "cpus-per-task",
        "ntasks",
        "ntasks-per-node",
        "ntasks-per-socket",
        "ntasks-per-core",
        "ntasks-per-gpu",
        "ntasks-per-tres",
        "mincpus",
        "cores-per-socket",
        "sockets-per-node",
        "nodes",
        "gpus",
        "gpus-per-node",
        "gpus-per-task",
        "gpus-per-socket",
    }
)
_SHELL_VARIABLE = re.compile(r"\$(?:\{?[A-Za-z]|\()")
_SHELL_BRACES = re.compile(r"\$\{[A-Za-z]\w*\}")


# EAR (Energy Aware Runtime, BSC and Lenovo; SuperMUC-NG, MareNostrum): its SPANK plugin's
# options (src/slurm_plugin/slurm_plugin_options.c); --ear-verbose ends in a real option's
# name, --verbose, so without this it read as a misspelling (an error) and not a plugin's.
_EAR = frozenset(
    {
        "ear",
        "ear-policy",
        "ear-cpufreq",
        "ear-policy-th",
        "ear-user-db",
        "ear-verbose",
        "ear-learning",
        "ear-learning-phase",
        "ear-tag",
        "ear-mpi-dist",
        "ear-traces",
    }
)


def spank_plugin(name: str) -> str | None:
    """The SPANK plugin whose option ``--name`` is, or None."""
    if name in _PYXIS:
        return "pyxis"
    if name in _EAR:
        return "EAR (Energy Aware Runtime)"
    return SPANK_PLUGINS.get(name)


_TEMPLATE_NAME = re.compile(r"templ|tmpl|\.j2$|\.jinja|\.in$|\.tpl$", re.I)
# A line that is one expansion and nothing else: ${PARTITION_OPTION}, $MODULES.
_LONE_EXPANSION = re.compile(r"\s*\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))\s*")


def filled_in_first(script: Script) -> bool:
    """Its variables may be filled in before sbatch reads it.

    A heredoc's by the shell that feeds it to sbatch; a template file's by whatever
    renders it (envsubst, string.Template): a file named so, or one with a placeholder
    line (see ``placeholder_lines``).
    """
    return named_template(script) or bool(placeholder_lines(script))


def named_template(script: Script) -> bool:
    """A heredoc the shell fills in, or a file named as a template (``slurm-template.sh``)."""
    return script.origin is not None or bool(_TEMPLATE_NAME.search(script.path))


def placeholder_lines(script: Script) -> frozenset[int]:
    """Lines that are one variable alone which the script never sets: a template's blanks.

    ``$MODULES`` or ``${PARTITION_OPTION}`` on a line of its own stands for lines a
    renderer puts there (Python's string.Template in DALiuGE's Setonix script, Ray's
    ``slurm-template.sh``: module loads, an ``#SBATCH --partition`` line or nothing). A
    script that runs a command it keeps in a variable sets that variable (``$CMD``).
    """
    key = "header.placeholder_lines"
    found: frozenset[int] | None = script.memo.get(key)
    if found is None:
        lines = set()
        if "$" in script.text:
            for number, line in script.code_lines():
                match = _LONE_EXPANSION.fullmatch(line)
                if match is None:
                    continue
                name = match.group(1) or match.group(2)
                if not _set_anywhere(script.text, name):
                    lines.add(number)
        found = frozenset(lines)
        script.memo[key] = found
    return found


def _set_anywhere(text: str, name: str) -> bool:
    """``name`` is assigned, read or looped over somewhere in ``text`` (or is the shell's)."""
    if name.isupper() and name in _SHELL_OWN:
        return True
    word = re.escape(name)
    return bool(
        re.search(rf"(?<![\w$]){word}\+?=", text)
        or re.search(rf"\b(?:read|for|select|local|declare|typeset|export)\b[^\n]*\b{word}\b", text)
    )


_SHELL_OWN = frozenset({"HOME", "PWD", "OLDPWD", "SHELL", "USER", "PATH", "HOSTNAME", "RANDOM"})


def _unknown(script: Script, context: LintContext) -> Iterator[Finding]:
    table = long_options(context.version)
    for directive in script.directives:
        if directive.ignored is not None:
            continue
        words = _words(directive.text, context.version)
        if words and words[0] in _COMPONENT and len(words) == 1:
            continue
        if words and not words[-1].strip() and TRAILING_ESCAPED_BLANK.search(directive.text):
            words = words[:-1]  # the blank a trailing '\\ ' makes: sbatch-continuation's
        if filled_in_first(script) and any(_SHELL_VARIABLE.search(w) for w in words):
            continue  # expanded before sbatch reads it: unknown
        problem = _first_problem(words, table, context.version)
        if problem is not None:
            yield _unknown_finding(script, directive.line, directive.text, problem, context)
    yield from _second_magic_word(script, context, table)
    yield from _unknown_in_commands(script, context, table)


SECOND_MAGIC = "#SLURM"


def _second_magic_word(
    script: Script, context: LintContext, table: frozenset[str]
) -> Iterator[Finding]:
    """A header line that starts ``#SLURM``: sbatch reads it as a directive too.

    ``_opt_batch_script`` (src/sbatch/opt.c) takes ``#SLURM`` as a second magic word
    beside ``#SBATCH``, warns "Change from #SLURM to #SBATCH", and reads the rest of the
    line as options: ``#SLURM_ARRAY_TASK_ID=42``, a debug line meant as a comment, is the
    word ``_ARRAY_TASK_ID=42`` and sbatch refuses the script ("Invalid directive found in
    batch script"; checked with the 22.05.8 client). Only in the header: sbatch stops
    reading at the first command.
    """
    if SECOND_MAGIC not in script.text:
        return
    for number, line in _header_comments(script):
        if not line.startswith(SECOND_MAGIC) or line.startswith(MAGIC):
            continue
        escaped_blank = context.version is None or context.version >= ESCAPED_BLANK_FROM
        words = sbatch_words(mask_templates(line[len(SECOND_MAGIC) :]), escaped_blank)
        if words and words[0].lower() in _COMPONENT:
            continue
        if filled_in_first(script) and any(_SHELL_VARIABLE.search(w) for w in words):
            continue
        problem = _first_problem(words, table, context.version)
        if problem is None or problem[0] != ERROR:
            continue
        yield script.finding(
            number,
            ERROR,
            RULE_UNKNOWN.id,
            f"{line.strip()!r}: sbatch reads a header line starting with #SLURM as a "
            f"directive (its second magic word), and {problem[1]} "
            f"{context.on_versions('on Slurm 22.05 to 26.05')}: sbatch refuses the whole "
            "script and nothing is queued",
            "make it a comment sbatch does not read ('# SLURM...', with a blank), or "
            "write the option as #SBATCH",
        )


def _unknown_in_commands(
    script: Script, context: LintContext, table: frozenset[str]
) -> Iterator[Finding]:
    """An ``sbatch`` the script runs (a chain, a follow-up job) with a long option it refuses.

    The shell expands the values first, so only the options' names are judged, up to
    the job script's name, where sbatch's own options end.
    """
    if "sbatch" not in script.text.replace(MAGIC, ""):
        return
    for command in script.commands:
        if command.name != "sbatch":
            continue
        problem = _command_problem([word.raw for word in command.argv[1:]], table)
        if problem is not None:
            line = script.line_of(command.start)
            shown = script.source(command).split("\n", 1)[0]
            yield _unknown_finding(script, line, shown, problem, context)


def _command_problem(words: list[str], table: frozenset[str]) -> tuple[str, str] | None:
    index = 0
    while index < len(words) and words[index].startswith("-") and words[index] != "--":
        word = words[index]
        name, has_value, _ = word[2:].partition("=")
        if not word.startswith("--"):
            index += 2 if word[-1] in SHORT_WITH_VALUE and len(word) == 2 else 1
            continue
        if not re.fullmatch(r"[A-Za-z][\w-]*", name):
            return None  # a variable or a quoted word: unknown
        option = _long_option(name, table)
        if not isinstance(option, str):
            return option  # refused, or a SPANK plugin's (None: its site knows it)
        index += 1 if has_value or option in LONG_FLAGS else 2
    return None


def _unknown_finding(
    script: Script, line: int, text: str, problem: tuple[str, str], context: LintContext
) -> Finding:
    severity, what = problem
    if severity == INFO:
        return script.finding(
            line,
            INFO,
            RULE_UNKNOWN.id,
            f"{text.strip()!r}: {what}: sbatch refuses the script on a cluster without it",
            "keep it for the site it was written for; elsewhere remove the line",
        )
    return script.finding(
        line,
        ERROR,
        RULE_UNKNOWN.id,
        f"{text.strip()!r}: {what} {context.on_versions('on Slurm 22.05 to 26.05')}: sbatch "
        "refuses the whole script and nothing is queued",
        _fix(what),
    )


def _fix(what: str) -> str:
    """The fix for the refused word ``what`` describes."""
    if "expands no ${" in what:
        return 'write the value out, or pass it when submitting: sbatch --account="$ACCOUNT" job.sh'
    if "never expands" in what:
        return 'write the number itself, or pass it when submitting: sbatch -N "$NODES" job.sh'
    if "one dash" in what:
        return f"write the long option with two dashes: -{what.split()[0]}"
    return "fix the option (sbatch --help lists them) or remove the line"


def _first_problem(
    words: list[str], table: frozenset[str], version: SlurmVersion | None = None
) -> tuple[str, str] | None:
    """(severity, what sbatch says) about the first word it refuses, or None.

    A site plugin's option (info) does not end the reading: a later word may still be
    refused on every cluster.
    """
    stray = _split_expansion(words)
    if stray is not None:
        return ERROR, (
            f"{stray!r} is no option: sbatch expands no ${{...}} in a directive and splits it "
            "at its blank (sbatch: Invalid directive found in batch script)"
        )
    if any(mark in _SHELL_BRACES.sub("", word) for word in words for mark in _PLACEHOLDER):
        return None  # a template or a placeholder for the reader to fill in: unknown
    if any(_bracket_placeholder(word) for word in words):
        return None
    plugin: tuple[str, str] | None = None
    index = 0
    while index < len(words):
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else ""
        if word == "\\":
            index += 1  # a trailing backslash: sbatch reads past it (sbatch-continuation's)
            continue
        if word.startswith("--") and len(word) > 2:
            step = _long(word[2:], following, table, version)
            if isinstance(step, tuple):
                if step[0] == ERROR:
                    return step
                plugin = plugin or step
                step = 1 if "=" in word or word[2:] in _PYXIS_FLAGS else 2
            index += step
            continue
        if word.startswith("-") and len(word) > 1 and word[1] not in DASHES:
            skip = _short(word, following, table)
            if isinstance(skip, str):
                return ERROR, skip
            index += skip
            continue
        if word[:1] in DASHES or "${" in word:
            return None  # the dash rule's, or a template's word in place of an option
        if _PLACEHOLDER_WORD.search(word):
            return None  # the reader's to fill in (#SBATCH ..., insert your_project_here)
        return ERROR, f"{word!r} is no option (sbatch: Invalid directive found in batch script)"
    return plugin


# A word standing for what the reader is to write: an ellipsis (documentation's
# "#SBATCH ..." for other options), "your_projectID_here", "XXXX". sbatch refuses it as
# written, but like <account> it is a blank to fill in before submitting (README: unknown).
_PLACEHOLDER_WORD = re.compile(r"^(?:\.{2,}|\u2026)$|your|(?:^|_)here$|xxx", re.I)


# A bash expansion with an operator (${A:?text}, ${A:-x}, ${A//a/b}) left open in its word.
_OPEN_EXPANSION = re.compile(r"\$\{[A-Za-z_]\w*(?::?[-?=+]|##?|%%?|//?|\^\^?|,,?)[^}]*$")


def _split_expansion(words: list[str]) -> str | None:
    """The word after ``${ACCOUNT:?set it}``'s blank, which sbatch reads as a word alone.

    Only bash expands such text, and only in commands: in a directive whose script no
    shell fills in first, the blank splits it, and the piece after it is no option.
    """
    for index, word in enumerate(words[:-1]):
        if _OPEN_EXPANSION.search(word) and any("}" in later for later in words[index + 1 :]):
            following = words[index + 1]
            return None if following.startswith("-") else following
    return None


def _bracket_placeholder(word: str) -> bool:
    """Part of a bracketed placeholder of several words (--account=[budget code]).

    The reader is to replace it before submitting, as the README's template policy says;
    a hostlist (node[01-04]) always closes its bracket within the word.
    """
    return word.count("[") != word.count("]")


def _long(
    word: str, following: str, table: frozenset[str], version: SlurmVersion | None = None
) -> int | tuple[str, str]:
    """Words ``--word`` takes (1 or 2), or (severity, complaint) as getopt reads it."""
    name, has_value, value = word.partition("=")
    option = _long_option(name, table)
    if option is None:
        return INFO, f"--{name} is an option of the {spank_plugin(name)} SPANK plugin"
    if isinstance(option, tuple):
        return option
    if option == "exclusive" and has_value:
        refused = _exclusive_refused(value, version)
        return (ERROR, refused) if refused else 1
    if option in LONG_FLAGS:
        return 1
    refused = _refused_value(f"--{option}", option, value if has_value else following)
    if refused:
        return ERROR, refused
    return 1 if has_value else 2


def _long_option(name: str, table: frozenset[str]) -> str | tuple[str, str] | None:
    """The option getopt reads ``--name`` as (a unique prefix too), (severity, why) when
    it reads none, or None for a known SPANK plugin's option."""
    matches = match_long(name, table)
    if not matches:
        return None if spank_plugin(name) else _not_stock(name)
    if len(matches) > 1:
        return ERROR, f"--{name} is ambiguous ({', '.join('--' + m for m in matches[:4])})"
    return matches[0]


# Options sbatch once had: a script written for an old Slurm, refused by every current one.
# --share: the old name of --oversubscribe ("unrecognized option '--share'" from the
# 22.05.8 client; no "share" in 25.11's src/common/slurm_opt.c).
_REMOVED = {
    "workdir": "--chdir",
    "checkpoint": None,
    "checkpoint-dir": None,
    "share": "--oversubscribe",
}
# srun's own options, which sbatch has not (setters for srun only in 25.11's
# src/common/slurm_opt.c; every one "unrecognized" to the 22.05.8 sbatch): a line copied
# from an interactive srun (--pty) or a step. --x11 is left out: old sites gave sbatch one
# through a SPANK plugin (slurm-spank-x11).
_SRUN_ONLY = frozenset(
    {
        "accel-bind",
        "bcast",
        "bcast-exclude",
        "compress",
        "cpu-bind",
        "cpu_bind",
        "debugger-test",
        "disable-status",
        "epilog",
        "exact",
        "external-launcher",
        "het-group",
        "immediate",
        "interactive",
        "jobid",
        "kill-on-bad-exit",
        "label",
        "mpi",
        "msg-timeout",
        "multi-prog",
        "no-allocate",
        "overlap",
        "pack-group",
        "preserve-env",
        "prolog",
        "pty",
        "quit-on-interrupt",
        "relative",
        "send-libs",
        "slurmd-debug",
        "task-epilog",
        "task-prolog",
        "treewidth",
        "unbuffered",
        "wait-for-children",
        "whole",
    }
)
# Words of other schedulers (PBS, LSF) written as if sbatch had them.
_GUESSED = frozenset({"ppn", "email", "project", "log", "logs", "walltime", "queue"})
# How alike an unknown name must be to a real option to be its misspelling (difflib ratio):
# --depency/--dependency 0.82, --mem-per-core/--mem-per-cpu 0.78; --perf/--power 0.67.
_TYPO = 0.78


@lru_cache(maxsize=256)
def _not_stock(name: str) -> tuple[str, str]:
    """(severity, what) for a long option stock sbatch does not know.

    An option of other Slurm versions, a misspelling of one, or an option Slurm
    removed is refused on every cluster at this version (error). Any other name may be
    an option a site's SPANK plugin adds to sbatch (NERSC's --perf, for one):
    cluster-dependent, like the known plugins' options (info).
    """
    if name in _REMOVED:
        return ERROR, f"--{name} is not an sbatch option (removed from Slurm)"
    if name in _SRUN_ONLY:
        return ERROR, f"--{name} is an srun option, not an sbatch one"
    if name.lower() in _GUESSED:
        return ERROR, f"--{name} is not an sbatch option (another scheduler's word)"
    if _misspelt_option(name, long_options(None)):
        return ERROR, f"--{name} is not an sbatch option"  # or only at other versions
    return INFO, f"--{name} is no stock sbatch option, perhaps one a site's SPANK plugin adds"


def _misspelt_option(name: str, table: frozenset[str]) -> bool:
    plain = name.lower().replace("_", "-")
    if match_long(plain, table):
        return True  # --Nodes, --cpus_per_task
    if any(_names_option(plain, option) for option in table):
        return True  # --memory, --mem-per-node, --time-limit, --num-gpus
    matcher = difflib.SequenceMatcher(None, b=plain)
    for option in table:
        matcher.set_seq1(option)
        if matcher.real_quick_ratio() >= _TYPO and matcher.ratio() >= _TYPO:
            return True
    return False


def _names_option(name: str, option: str) -> bool:
    """``name`` is a real option with a word added before or after it."""
    return (len(option) >= 3 and name.startswith(option)) or (
        len(option) >= 4 and name.endswith(option)
    )


def _refused_value(written: str, option: str, value: str) -> str | None:
    """Why sbatch refuses a shell variable as the value of a number or count option,
    or a time limit it cannot read."""
    if option in _COUNTS and _SHELL_VARIABLE.search(value):
        return (
            f"{written} {value}: sbatch never expands shell variables in a directive, so "
            "the option gets this very text, which is no number,"
        )
    if option in _TIMES and value and not _time_readable(value):
        return f"{written} {value} is no time sbatch reads (Invalid --{option} specification)"
    spec = sbatch_signal.read(value) if option == "signal" and value else None
    if spec is not None and not spec.readable:
        return (
            f"{written} {value}: sbatch reads only [R|B:]SIGNAL[@SECONDS] "
            "(Invalid --signal specification)"
        )
    return None


_TIMES = frozenset({"time", "time-min"})
_NO_LIMIT = frozenset({"-1", "infinite", "unlimited"})


def _time_readable(value: str) -> bool:
    """sbatch reads ``value`` as a time limit, or it is no time written with a slip.

    Only a value that starts with a digit is judged: one that does not is a template's
    or a reader's blank (unknown), never a slip of the fingers.

    ``time_str2secs`` and ``_is_valid_timespec`` (src/common/parse_time.c): digits, at
    most one dash, before at most two colons, and enough numbers for them. Anything
    else (``1-00:00:0q``, ``24h``, ``2:00:00:00``) is "Invalid --time specification"
    and sbatch refuses the script (checked with the 22.05.8 client).
    """
    if value.lower() in _NO_LIMIT or not value[:1].isdigit() or not value.isascii():
        return True  # or a blank to fill in: TIME, @@time@@, __FWD_TIME__, DD-HH:MM:SS
    digits = dashes = colons = 0
    in_number = False
    for char in value:
        if char.isdigit() and char.isascii():
            digits += not in_number
            in_number = True
            continue
        in_number = False
        if char == "-":
            dashes += 1
            if colons:
                return False
        elif char == ":":
            colons += 1
        else:
            return False
    if not digits or dashes > 1 or colons > 2:
        return False
    least = {1: 3, 2: 4} if dashes else {1: 2, 2: 3}
    return digits >= least.get(colons, 0)


# --exclusive's values (arg_set_exclusive, src/common/slurm_opt.c); topo came with 24.05
# (CHANGELOG/slurm-24.05.md: "Add --exclusive=topo for use with topology/block").
_EXCLUSIVE = frozenset({"exclusive", "oversubscribe", "user", "mcs"})
EXCLUSIVE_TOPO_FROM = SlurmVersion(24, 5, 0)


def _exclusive_refused(value: str, version: SlurmVersion | None) -> str | None:
    """Why sbatch refuses ``--exclusive=value`` at ``version``, or None."""
    chosen = value.lower()
    if not chosen or chosen in _EXCLUSIVE or any(mark in value for mark in "$<>{}[]"):
        return None
    if chosen == "topo":
        if version is None or version >= EXCLUSIVE_TOPO_FROM:
            return None
        return (
            f"--exclusive={value}: sbatch before 24.05 knows only user, mcs and "
            "oversubscribe (Invalid --exclusive specification)"
        )
    return (
        f"--exclusive={value}: sbatch knows only user, mcs, oversubscribe and (from 24.05) "
        "topo (Invalid --exclusive specification)"
    )


def _short(word: str, following: str, table: frozenset[str]) -> int | str:
    """Words the short option cluster takes (1 or 2), or sbatch's complaint."""
    name = word[1:].partition("=")[0]
    if len(name) > 1 and name in table:
        return (
            f"{word} is a long option written with one dash: getopt reads it as -{word[1]} "
            f"with the value {word[2:]!r}"
        )
    for position, letter in enumerate(word[1:], start=1):
        if letter in SHORT_WITH_VALUE:
            glued = word[position + 1 :]
            option = SHORT.get(letter, "")
            refused = _refused_value(f"-{letter}", option, glued or following)
            if refused:
                return refused
            return 1 if glued else 2
        if letter == "k":
            return 1
        if letter not in SHORT_FLAGS:
            return f"-{letter} is not an sbatch option"
    return 1


def mail_types_add(context: LintContext) -> bool:
    """Before 25.05 sbatch or-ed repeated --mail-type values: none was lost."""
    return context.version is not None and context.version < MAIL_TYPE_REPLACED


def _twice(script: Script, context: LintContext) -> Iterator[Finding]:
    for component in read_components(script):
        yield from _overridden(script, context, component)


def read_components(script: Script) -> Iterator[list[Directive]]:
    """The read directives of each component of a heterogeneous job (one for most jobs)."""
    component: list[Directive] = []
    for directive in script.directives:
        if directive.ignored is not None:
            continue
        words = _words(directive.text)
        if words[:1] and words[0] in _COMPONENT:
            yield component  # each component of a heterogeneous job starts afresh
            component = []
            continue
        component.append(directive)
    yield component


def _overridden(
    script: Script, context: LintContext, directives: list[Directive]
) -> Iterator[Finding]:
    """A finding on each line whose value a later line of the same option replaces.

    The finding names the line sbatch ignores, where the fix is (remove it), and the
    line whose value it applies: the last one.
    """
    given: dict[str, list[tuple[str | None, int, str]]] = {}
    stock = long_options(None)
    for directive in directives:
        for option in directive.options:
            # by the option an abbreviation means (--accoun is --account); a name sbatch does
            # not know is a site plugin's (PC2's repeated --fpgalink adds links), whose
            # repeats only the plugin can judge
            name = stock_meaning(option.name)
            if name not in stock:
                continue
            if name in _ADDS_UP or (name == "mail-type" and mail_types_add(context)):
                continue
            given.setdefault(name, []).append((option.value, directive.line, option.written))
    for name, values in given.items():
        final, last_line, last_written = values[-1]
        for value, line, written in values[:-1]:
            if value == final:
                continue
            yield script.finding(
                line,
                WARNING,
                RULE_TWICE.id,
                f"--{name} is given twice with different values: sbatch ignores this line's "
                f"{written!r} and applies line {script.shown(last_line)}'s {last_written!r}",
                f"keep one --{name} (the value you mean)",
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
