"""``--output``/``--error`` into a directory that does not exist.

Slurm opens the job's log before the script's first line runs. Before 23.02 it does
not create its directory: the job fails at once with no log at all (nothing to read,
and the error is only in slurmd's log). From 23.02 on slurmstepd creates the missing
directory as the job's user (its changelog; verified live on the sandbox: 22.05.8
fails with JobLaunchFailure, 24.11.5 and 26.05.5 run and make ``logs/%j/``), so a
missing directory is judged only for a version before 23.02 (or an unknown one). The
directory is judged from the script's context, never from wherever lint happens to
run (issue 32 item 3):

- a directory containing ``%j``, ``%J`` or ``%A`` (also zero-padded: ``%3A``) names the job
  itself, so it cannot exist before the job starts: error before 23.02. ``%a``, an array
  task's index, is known before the job (``fold_%a/`` for folds 0-4 made by an earlier
  step): such a directory is unknown, not wrong (issue 32 names ``%a`` too; reality differs);
- a relative directory is looked up under the submit directory when it is known:
  ``lint --submit-dir DIR`` (joined with a relative ``--chdir``), or an absolute
  ``--chdir``; missing there: error (an absolute ``--chdir`` missing on this host is
  another host's path: unknown);
- without one, a script in a git work tree is submitted from its own directory or
  from a directory above it in the checkout (``sbatch slurm/train.sbatch`` from the
  top): the log directory exists when it is there on disk or the checkout ships it
  (a tracked file in it, a ``.gitkeep``) under one of them; otherwise a fresh
  checkout lacks it: error, unless the script creates it itself (then the warning
  below), however deep it lies (``experiments/tests/run1/``, ``slurm/logs/``: the
  index knows the repository's layout). Outside a work tree: unknown. A file the
  repository's code builds the job from (a template: ``x.template.slurm``, or
  ``templates/x.slurm`` with a tag to fill in such as ``{{ x }}`` or ``[[X]]``; package
  data under ``assets/``; a header such as ``slurm_header_x.sh``) is submitted from a
  directory that code prepares: unknown;
- an absolute directory missing on the host where lint runs is unknown (the cluster
  is another host), never an error, even where the script makes it later;
- the script makes the directory itself (``mkdir -p logs`` after the header): too
  late for the file Slurm has already failed to open (warning: it may exist from
  an earlier run), unless that ``mkdir`` comes before the script submits itself
  (``sbatch "$0"`` when run by hand): then it is made before the job exists;
- a driver beside the script that submits it (``sbatch ./inner.sh``, or ``sbatch
  ${job_file}`` with ``job_file=inner.sh``) decides: its ``mkdir`` of the directory
  before the sbatch (also ``mkdir -p $PWD/logs``, ``$WORKDIR/logs`` with ``WORKDIR=$PWD``)
  makes it in time, and its ``SBATCH_OUTPUT``/``SBATCH_ERROR`` or ``--output``/``--error``
  replace the directive; so does the script's own usage comment (``# sbatch
  --output="$LOG_ROOT/%x.log" slurm/x.sbatch``), and a wrapper that comment names (``#
  Submit with: bash hpc/submit.sh hpc/x.sbatch``): its ``mkdir`` settles the directory,
  and a wrapper not in the checkout leaves it unknown;
- ``#SBATCH --workdir`` (renamed ``--chdir``) is refused by sbatch: no job, nothing judged;
- a relative ``--chdir`` with no ``--output`` is where Slurm opens the default log
  (``slurm-%j.out``): judged like a log directory (``#SBATCH -D ./log/`` unshipped: error
  before 23.02).

The log is the one sbatch reads: ``--err``/``--out`` are getopt's abbreviations of
``--error``/``--output``, and ``%x`` is the job name the script sets (a name with a ``/``
adds a directory). sbatch expands no shell word in a directive: ``$HOME/logs`` or a
``--chdir`` with ``${USER}`` in it names a directory literally called so (error, except
in a heredoc the shell expands before sbatch reads it): before 23.02 it does not exist;
from 23.02 a log directory is created under that literal name, so the log is not where
the path says (warning), and the job runs in a literal working directory or fails. A
directory that climbs (``../watch_folder``) is judged from the submit directories where
it stays in the checkout.

A directory with another pattern (``%u``), a job name the script does not set, a
placeholder (``CASE_DIR/``, ``localpath/``, ``your_dir/``, ``xxx/``, a ``$WORD`` a comment
asks the reader to replace) or a template tag (also ``%JOB_LOGS_PATH%``) in it is
unknown until the job is submitted, never wrong; so are the ``${NAME}`` words of a file
named as a template (``disbatch_template.sbatch``), and the log directory of a file whose
directives hold a renderer's tags (``--ntasks={{ntasks}}``).
"""

from __future__ import annotations

import heapq
import os
import posixpath
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from slurmkit.errors import SlurmkitError, UsageError
from slurmkit.files import read_bounded, read_text_bounded
from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, WARNING, Finding, Rule
from slurmkit.lint.helpers import find_work_tree
from slurmkit.lint.parsed import Command
from slurmkit.lint.rules.lifecycle import exits_after
from slurmkit.lint.script import Script
from slurmkit.sbatch.directives import FILENAME_PATTERN, Setting, pattern_letters

_UNKNOWN = ("%", "$", "{", "`", "~", "*", "?")
# Files that keep an otherwise empty directory in a git checkout.
_KEEPERS = (".gitkeep", ".keep", ".gitignore")
# The largest index read (a checkout of a monorepo has an index of tens of MB: then
# unknown). How far up a work tree's .git is looked for: helpers.find_work_tree.
_MAX_INDEX = 32 * 1024 * 1024


def _directory(value: str) -> str | None:
    """The directory part of a log path, when it has one (patterns and all)."""
    if "/" not in value:
        return None
    directory = posixpath.dirname(value)
    return posixpath.normpath(directory) if directory else None


def _per_job_dir(directory: str) -> bool:
    """Whether the directory names the job itself: %j, %J or %A (also padded: %3A).

    Not %a: a task index is known in advance, and directories per index can be made before
    the array is submitted.
    """
    return not pattern_letters(directory).isdisjoint("jJA")


def _known(path: str) -> bool:
    return not any(mark in path for mark in _UNKNOWN)


def _made_by_script(script: Script) -> dict[str, int]:
    """Directories the script creates (``mkdir [-p] DIR``), normalised -> line."""
    made: dict[str, int] = {}
    for command in script.commands:
        if command.depth or command.name != "mkdir":
            continue
        for word in command.argv[1:]:
            if word.text.startswith("-") or not word.literal:
                continue
            made.setdefault(posixpath.normpath(word.text), script.line_of(command.start))
    return made


def _log_dir(script: Script, context: LintContext) -> Iterator[Finding]:
    logs = [s for s in (_setting(script, name) for name in ("output", "error")) if s]
    chdir = _setting(script, "chdir")
    if chdir is not None and _refused_name(chdir):
        return  # sbatch refuses the whole script: no job, no log (sbatch-unknown-option)
    if chdir is not None and chdir.value and _template(chdir.value):
        return
    word = _literal_variable(script, chdir.value) if chdir is not None and chdir.value else None
    if chdir is not None and word:
        if not logs or any(not posixpath.isabs(s.value or "") for s in logs):
            yield _literal_chdir(script, chdir, word, context)
        return
    fails = context.log_dir_not_created
    made: dict[str, int] | None = None
    if chdir is not None and fails and _setting(script, "output") is None:
        yield from _work_dir(script, chdir, context)
    for setting in logs:
        directory = _directory(_with_job_name(setting.value or "", script))
        if directory is None or _documented_override(script, _long_name(setting)):
            continue
        if _per_job_dir(directory) and _PERCENT_TAG.search(directory) is None:
            if fails:
                yield _per_job(script, setting, directory, context)
            continue
        if _template(directory):
            continue
        word = _literal_variable(script, directory)
        if word:
            yield _literal_log_dir(script, setting, directory, word, context)
            continue
        if not fails or not _known(directory):
            continue  # 23.02 on: slurmstepd creates the directory
        if _feeder_decides(script, directory, None if chdir is None else chdir.value):
            continue
        state = _lookup(directory, None if chdir is None else chdir.value, context)
        if state is True:
            continue
        if made is None:
            made = _made_by_script(script)
        line = made.get(directory)
        if isinstance(state, Missing) and not state.explicit and _assembled(script):
            continue
        if state is None and _elsewhere(directory, None if chdir is None else chdir.value):
            continue
        if (
            isinstance(state, Missing)
            and not state.explicit
            and (
                _driver_decides(script, _long_name(setting), directory, context)
                or _wrapper_decides(script, _long_name(setting), directory, context)
            )
        ):
            continue
        if isinstance(state, Missing) and (line is None or state.explicit):
            yield _missing(script, setting, state, context)
        elif line is not None and not _submits_itself_after(script, line):
            yield _made_too_late(script, setting, directory, line, context)


# How many files beside a script are read for a driver that submits it, and how much of each.
_MAX_SIBLINGS = 64
_MAX_DRIVER = 256 * 1024
_ENV_LOG = {"output": "SBATCH_OUTPUT=", "error": "SBATCH_ERROR="}
_OPTION_LOG = {
    "output": re.compile(r"(?:^|\s)(?:-o|--output)(?:[=\s]|\S)"),
    "error": re.compile(r"(?:^|\s)(?:-e|--error)(?:[=\s]|\S)"),
}


def _work_dir(script: Script, chdir: Setting, context: LintContext) -> Iterator[Finding]:
    """A relative ``--chdir`` that is missing, where Slurm opens the default log.

    sbatch makes a relative ``--chdir`` absolute under the submit directory, and
    slurmstepd opens the default log (``slurm-%j.out``, ``slurm-%A_%a.out``) in that
    work directory (``expand_stdio_fields`` prefixes a relative log with the job's
    work_dir, src/common/print_fields.c): before 23.02 a missing one fails the job at
    once with no log, like a missing ``--output`` directory (``-D ./log/`` that the
    repository does not ship). Judged like a log directory; an ``--output`` of its own
    is judged instead (its directory under the work directory).
    """
    value = chdir.value or ""
    if not _known(value) or posixpath.isabs(value) or _template(value):
        return
    directory = posixpath.normpath(value)
    if directory == "." or _documented_override(script, "output"):
        return
    if _feeder_decides(script, directory, None):
        return
    state = _lookup(directory, None, context)
    if state is True or not isinstance(state, Missing):
        return
    if not state.explicit and (
        _assembled(script) or _driver_decides(script, "output", directory, context)
    ):
        return
    line = _made_by_script(script).get(directory)
    if line is None or state.explicit:
        yield _missing(script, chdir, state, context, work=True)
    elif not _submits_itself_after(script, line):
        yield _made_too_late(script, chdir, directory, line, context)


def _documented_override(script: Script, name: str) -> bool:
    """Whether the script's own comments submit it with another log (its usage line).

    ``# sbatch --output="$LOG_ROOT/%x_%j.log" slurm/pretrain.sbatch`` beside a directive
    ``--output=logs/%x_%j.log`` says the directive is a default the documented
    submission replaces (sbatch(1): the command line over the script's directives);
    which directory that one lands in is the submitter's. Read once per script.
    """
    memo = script.memo
    if "usage_lines" not in memo:
        memo["usage_lines"] = _usage_lines(script)
    usage: list[str] = memo["usage_lines"]
    own = posixpath.basename(script.path)
    return any(_overrides(line, own, name) for line in usage)


def _usage_lines(script: Script) -> list[str]:
    """The script's comment lines that run sbatch on the script itself (``# sbatch … x.sh``)."""
    own = posixpath.basename(script.path)
    if not own or own == "-" or own not in script.text:
        return []
    named = re.compile(r"(?<![\w.-])" + re.escape(own) + r"(?![\w.-])")
    found: list[str] = []
    for stripped in _prose_comments(script):
        text = stripped.lstrip("#")
        if _SBATCH_WORD.search(text) and named.search(text):
            found.append(text)
    return found


def _prose_comments(script: Script) -> Iterator[str]:
    """The script's comment lines, stripped, less its directives and its ``#!`` line:
    where a usage note says how the script is submitted."""
    for line in script.lines:
        stripped = line.lstrip()
        if stripped.startswith("#") and not stripped.startswith(("#SBATCH", "#!")):
            yield stripped


def _driver_decides(script: Script, name: str, directory: str, context: LintContext) -> bool:
    """Whether a driver beside the script submits it and settles this log first.

    Job scripts of a pipeline are submitted by the repository's own driver (``outer.sh``
    runs ``mkdir -p ./logs`` and then ``sbatch ./inner.sh``; ``SBATCH_OUTPUT=$LOGS/%x.log
    sbatch 01.merge``): its ``mkdir`` of the directory before the sbatch makes it in
    time, and an ``SBATCH_OUTPUT``/``SBATCH_ERROR`` or ``--output``/``--error`` it gives
    overrides the directive (sbatch(1): the command line, then the environment, then
    the script). A driver that does neither leaves the directory missing. ``name``:
    which log (``output``/``error``) the directory is for.
    """
    own = posixpath.basename(script.path)
    for logical, submitted in _submissions(script, context):
        env = False
        made: set[str] = set()
        here: frozenset[str] = frozenset()
        at = set(submitted)
        for index, line in enumerate(logical.lines[: submitted[-1] + 1]):
            if index in at:
                if env or logical.overrides(index, own, name):
                    return True
                if directory in made:
                    return True
            env = env or _ENV_LOG[name] in line
            here_name = _PWD_NAME.match(line)
            if here_name is not None:
                here = here | {here_name.group(1)}
            made |= _made_in(line, here)
    return False


# A usage comment that runs another file on this one (``# Submit with:  bash hpc/submit.sh
# hpc/x.sbatch``): the wrapper's path, then the words up to the script's own name.
_WRAPPER = re.compile(r"(?:^|\s)(?:(?:bash|sh|zsh)\s+)?((?:\.{0,2}/)?[\w./-]*[\w-]\.(?:sh|bash))\s")


def _wrapper_decides(script: Script, name: str, directory: str, context: LintContext) -> bool:
    """Whether the script's own comment submits it through a wrapper that settles the log.

    ``# Submit with:  bash hpc/submit.sh hpc/08g_selection.sbatch``: the wrapper runs the
    sbatch, so what it does first decides (BristolProject's ``submit.sh`` runs ``mkdir -p
    logs`` before its sbatch). The wrapper is looked for where the script may be submitted
    from (its directory, up to the checkout's top): found, its ``mkdir`` of the directory
    or its ``SBATCH_OUTPUT``/``--output`` settles the log, and a wrapper that does neither
    leaves it missing; not found (a copy of the script alone), it is unknown.
    """
    own = posixpath.basename(script.path)
    named = re.compile(r"(?<![\w.-])" + re.escape(own) + r"(?![\w.-])")
    wrappers: list[str] = []
    for stripped in _prose_comments(script):
        own_at = named.search(stripped)
        if own_at is None:
            continue
        before = stripped[: own_at.start()]
        if _SBATCH_WORD.search(before):
            continue  # an sbatch usage line: _documented_override's
        for match in _WRAPPER.finditer(before):
            wrapper = match.group(1)
            if posixpath.basename(wrapper) != own:
                wrappers.append(wrapper)
    if not wrappers:
        return False
    top = None if context.script_dir is None else _work_tree(context.script_dir)
    if context.script_dir is None or top is None:
        return True  # a wrapper named and nowhere to look for it: unknown
    for wrapper in wrappers:
        text = _wrapper_text(wrapper, context.script_dir, top)
        if text is None:
            return True
        lines = text.splitlines()
        if _ENV_LOG[name] in text or any(
            _OPTION_LOG[name].search(line) for line in lines if _SBATCH_WORD.search(line)
        ):
            return True
        if any(directory in _made_in(line) for line in lines):
            return True
    return False


def _wrapper_text(wrapper: str, script_dir: str, top: str) -> str | None:
    """The wrapper's text, found under one of the script's submit directories; None: not there."""
    for submit in _submit_candidates(script_dir, top):
        path = posixpath.normpath(posixpath.join(submit, wrapper))
        if os.path.isfile(path):
            return _driver_text(path)
    return None


# The sbatch word of a submission (not SBATCH_OUTPUT=, not a path ending in sbatch.sh).
_SBATCH_WORD = re.compile(r"(?<![\w.-])sbatch(?![\w.-])")


def _overrides(command: str, own: str, name: str) -> bool:
    """Whether a submission replaces the directive's log: an ``SBATCH_OUTPUT=``-style
    variable before the job script's name, or ``--output``/``-o`` among sbatch's own
    options (between the sbatch word and the name).

    What follows the name is the job's own arguments or another command (``| grep -o``);
    what precedes the sbatch word is another command (``[ -e f ] && sbatch``).
    """
    end = command.find(own)
    words = command if end < 0 else command[:end]
    if _ENV_LOG[name] in words:
        return True
    starts = [match.start() for match in _SBATCH_WORD.finditer(words)]
    options = words[starts[-1] :] if starts else words
    return _OPTION_LOG[name].search(options) is not None


class _Logical:
    """A driver's logical lines (``\\`` continuations joined), each built once.

    The bounds of every continuation run are found in one pass: a run of 14,000
    continued lines, each naming the job, was once rebuilt per line (quadratic).
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.first = _run_starts(lines)
        self.built: dict[int, str] = {}
        self.judged: dict[tuple[int, str, str], bool] = {}

    def text(self, index: int) -> str:
        first = self.first[index]
        built = self.built.get(first)
        if built is None:
            end = first
            while end + 1 < len(self.lines) and self.first[end + 1] == first:
                end += 1
            built = self.built[first] = "\n".join(self.lines[first : end + 1])
        return built

    def overrides(self, index: int, own: str, name: str) -> bool:
        key = (self.first[index], own, name)
        if key not in self.judged:
            self.judged[key] = _overrides(self.text(index), own, name)
        return self.judged[key]


def _run_starts(lines: list[str]) -> list[int]:
    """For each line, the first line of the ``\\`` continuation run holding it."""
    starts: list[int] = []
    for index in range(len(lines)):
        continued = index > 0 and lines[index - 1].rstrip().endswith("\\")
        starts.append(starts[-1] if continued else index)
    return starts


def _long_name(setting: Setting) -> str:
    """``output`` or ``error``: which log the directive names (``-e``, ``--err``: error)."""
    written = setting.written.lstrip("-").split("=", 1)[0]
    return "error" if written.startswith("e") else "output"


_MKDIR = re.compile(r"(?<![\w-])mkdir\s+(.*)")
# Where a command ends on a driver's line (``mkdir logs; fi``, ``mkdir logs && sbatch``).
_COMMAND_END = re.compile(r";|&&|\|\||[|)]")
# NAME=$PWD (also ${PWD}, $(pwd), `pwd`): a name for the driver's working directory.
_PWD_NAME = re.compile(
    r"^\s*(?:export\s+)?([A-Za-z_]\w*)=[\"']?(?:\$PWD|\$\{PWD\}|\$\(pwd\)|`pwd`)[\"']?\s*(?:#.*)?$"
)


def _made_in(line: str, here: frozenset[str] = frozenset()) -> set[str]:
    """Directories a driver's line makes with ``mkdir``, normalised, relative to where it runs.

    ``$PWD/log`` (or ``$WORKDIR/logs`` with ``WORKDIR=$PWD``: a name in ``here``) is
    ``log`` under the driver's working directory, where its sbatch runs: the submit
    directory. What follows the ``mkdir`` command (``; fi``) is not a directory.
    """
    made: set[str] = set()
    match = _MKDIR.search(line)
    if match is not None:
        for word in _COMMAND_END.split(match.group(1), maxsplit=1)[0].split():
            word = _under_pwd(word.replace('"', "").replace("'", ""), here)
            if word.startswith("-") or not word or not _known(word):
                continue
            made.add(posixpath.normpath(word))
    return made


def _under_pwd(word: str, here: frozenset[str]) -> str:
    """``$PWD/x``, ``${PWD}/x``, ``$NAME/x`` (NAME in ``here``) as ``x``; else as it is."""
    for name in ("PWD", *here):
        for prefix in (f"${name}/", f"${{{name}}}/"):
            if word.startswith(prefix):
                return word[len(prefix) :] or "."
    return word


# Each driver's lines (continuations joined once) and the indices of its submissions.
Submissions = list[tuple[_Logical, list[int]]]


def _submissions(script: Script, context: LintContext) -> Submissions:
    """Each file beside the script that submits it: its lines, the submission lines' indices.

    Read once per script (its ``memo``), only when a log directory would be missing.
    """
    memo = script.memo
    if "driver_submissions" not in memo:
        memo["driver_submissions"] = _read_submissions(script, context)
    found: Submissions = memo["driver_submissions"]
    return found


def _read_submissions(script: Script, context: LintContext) -> Submissions:
    where = context.script_dir
    if where is None or script.origin is not None:
        return []
    own = posixpath.basename(script.path)
    named = re.compile(r"(?<![\w.-])" + re.escape(own) + r"(?![\w.-])")
    found: Submissions = []
    for name, text in _sibling_texts(where, context):
        if name == own or own not in text:
            continue
        lines = text.splitlines()
        logical = _Logical(lines)
        holders = _holders(lines, named)
        submitted = [
            i
            for i, line in enumerate(lines)
            if (named.search(line) or (holders and _refers(line, holders)))
            and "sbatch" in logical.text(i)
        ]
        if submitted:
            found.append((logical, submitted))
    return found


# NAME=value at the start of a line (also ``export``/``local``/``readonly``).
_HOLDER = re.compile(r"^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_]\w*)=(\S+)")


def _holders(lines: list[str], named: re.Pattern[str]) -> frozenset[str]:
    """Names a driver keeps the job script's name in (``summa_job_file=run_summa.sh``)."""
    found: set[str] = set()
    for line in lines:
        match = _HOLDER.match(line)
        if match is not None and named.search(match.group(2)) and "sbatch" not in line:
            found.add(match.group(1))
    return frozenset(found)


def _refers(line: str, names: frozenset[str]) -> bool:
    """Whether the line expands one of the names (``sbatch ${summa_job_file} ...``)."""
    return any(name in names for name in _REFERENCE.findall(line))


def _sibling_texts(where: str, context: LintContext) -> list[tuple[str, str]]:
    """The texts of the files beside the script that run sbatch (the first 64 by name).

    Kept on the context for the directory last read, so the scripts of one directory
    linted together read their siblings once; a sibling changed since (its size or
    time) is read again.
    """
    try:
        names = heapq.nsmallest(_MAX_SIBLINGS, os.listdir(where))
    except OSError:
        return []
    files = []
    for name in names:
        path = posixpath.join(where, name)
        try:
            status = os.stat(path)
        except OSError:
            continue
        if stat.S_ISREG(status.st_mode):
            files.append((name, status.st_size, status.st_mtime_ns))
    key = (where, tuple(files))
    cached = context.memo.get("sibling_texts")
    if cached is not None and cached[0] == key:
        texts: list[tuple[str, str]] = cached[1]
    else:
        texts = [(name, _driver_text(posixpath.join(where, name))) for name, _, _ in files]
        texts = [(name, text) for name, text in texts if "sbatch" in text]
        context.memo["sibling_texts"] = (key, texts)
    return texts


def _driver_text(path: str) -> str:
    try:
        return read_text_bounded(
            path, what="driver script", max_bytes=_MAX_DRIVER, errors="replace"
        )
    except (OSError, SlurmkitError):
        return ""


def _submits_itself_after(script: Script, line: int) -> bool:
    """Whether the script submits itself by hand after making the directory.

    A script run by hand that goes ``mkdir -p logs; sbatch "$0" "$@"; exit`` before its
    job's work makes its log directory before the job it submits exists: in time. A
    chain that resubmits itself from inside the job (``sbatch "$0"`` after the
    training) is not: its first submission, by hand, still meets no directory. Read
    once per script (its ``memo``).
    """
    memo = script.memo
    if "self_submission" not in memo:
        memo["self_submission"] = max(_hand_submissions(script), default=None)
    submitted: int | None = memo["self_submission"]
    return submitted is not None and submitted > line


# Commands that end a run by hand without doing the job's work.
_NO_WORK = frozenset({"echo", "printf", ":", "true"})


def _hand_submissions(script: Script) -> list[int]:
    """Lines of the self-submissions that end a run by hand before the job's work.

    The ``exit`` follows the ``sbatch "$0"`` unconditionally (no branch, loop or ``||``
    between) and work comes after it: the exit skips the job's work outside a job. An
    exit at the very end skips nothing: that is a chain's last act, in the job.
    """
    commands = script.commands
    work = [
        c.start for c in commands if not c.depth and c.name and c.name not in _NO_WORK | {"exit"}
    ]
    last_work = work[-1] if work else -1
    found: list[int] = []
    pending: Command | None = None
    selves = [c for c in commands if c.name == "sbatch" and _names_itself(c)]
    found += (script.line_of(c.start) for c in _outside_a_job(script, selves))
    for command in commands:
        if command.name == "sbatch" and _names_itself(command):
            pending = command
        elif pending is None or command.name in _NO_WORK or command.depth > pending.depth:
            continue
        else:
            ends = command.name == "exit" and last_work > command.start
            if ends and exits_after(script, pending, command):
                found.append(script.line_of(pending.start))
            pending = None
    return found


def _names_itself(command: Command) -> bool:
    return any(_SELF_WORD.search(w.text) for w in command.argv[1:])


# The words that open, divide and close an ``if``, where a command may start.
_IF_WORD = re.compile(r"(?:^|[;&|(\s])(if|then|elif|else|fi)(?=[\s;)]|$)")
# Tests that the job id is empty (``-z``: run by hand) or set (``-n``: in a job).
_JOB_ID_TEST = re.compile(r"(-[zn])\s+\"?\$\{?SLURM_JOB_?ID(?![\w])")


def _outside_a_job(script: Script, selves: list[Command]) -> list[Command]:
    """The self-submissions in a branch taken only outside a job.

    ``if [ -z "$SLURM_JOB_ID" ]; then mkdir -p logs; sbatch "$0"; else …; fi`` (or the
    ``else`` of a ``-n`` test) runs by hand only: the directory is made before the job
    exists. Read from the lines in one pass; other conditions are not known to be so.
    """
    if not selves:
        return []
    at = {script.parsed.position(c.start): c for c in selves}
    lines = {line for line, _ in at}
    found: list[Command] = []
    stack: list[tuple[str | None, bool]] = []  # per open if: its -z/-n test, in its else
    last = max(lines)
    for number, text in script.code_lines():
        if number > last:
            break
        if number in lines:
            for (line, column), command in at.items():
                if line == number and _runs_outside(_if_state(text[: column - 1], list(stack))):
                    found.append(command)
        stack = _if_state(text, stack)
    return found


def _if_state(text: str, stack: list[tuple[str | None, bool]]) -> list[tuple[str | None, bool]]:
    """The open ifs after ``text``: each one's job-id test and whether in its else."""
    for match in _IF_WORD.finditer(text):
        word = match.group(1)
        if word in ("if", "elif"):
            condition = text[match.end() :].split("then", 1)[0]
            test = None if condition.lstrip().startswith("!") else _JOB_ID_TEST.search(condition)
            frame = (None if test is None or word == "elif" else test.group(1), False)
            if word == "if":
                stack.append(frame)
            elif stack:
                stack[-1] = frame
        elif word == "else" and stack:
            stack[-1] = (stack[-1][0], True)
        elif word == "fi" and stack:
            stack.pop()
    return stack


def _runs_outside(stack: list[tuple[str | None, bool]]) -> bool:
    return any((test == "-z") != in_else for test, in_else in stack if test)


def _feeder_decides(script: Script, directory: str, chdir: str | None) -> bool:
    """Whether the script feeding this heredoc to sbatch settles the log directory first.

    sbatch runs in the feeding shell's working directory: after a ``cd`` (``mkdir -p
    $out && cd $out``) that is wherever the run goes, not the checkout (unknown), and a
    ``mkdir -p logs`` before the sbatch makes the directory in time (the job's own
    mkdir comes too late, the feeder's does not). Absolute paths are judged as ever.
    """
    origin = script.origin
    feeder = None if origin is None else origin.feeder
    if origin is None or feeder is None or posixpath.isabs(directory):
        return False
    submit = origin.submit_line - feeder.line_base
    first_cd, made = _feeder_facts(feeder)
    moved = first_cd is not None and first_cd < submit and not (chdir and posixpath.isabs(chdir))
    line = made.get(posixpath.normpath(posixpath.join(chdir or "", directory)))
    return moved or (line is not None and line < submit)


_MOVES = frozenset({"cd", "pushd"})


def _feeder_facts(feeder: Script) -> tuple[int | None, dict[str, int]]:
    """The feeder's first ``cd``/``pushd`` line (None: none) and the directories it makes.

    Read once per feeder (its ``memo``): its heredocs are judged one after another, and a
    scan per heredoc was quadratic in a file of thousands of heredocs.
    """
    memo = feeder.memo
    if "feeder_facts" not in memo:
        moves = [c for c in feeder.commands if not c.depth and c.name in _MOVES]
        memo["feeder_facts"] = (
            feeder.line_of(moves[0].start) if moves else None,
            _made_by_script(feeder),
        )
    facts: tuple[int | None, dict[str, int]] = memo["feeder_facts"]
    return facts


def _setting(script: Script, name: str) -> Setting | None:
    """The last ``--name`` sbatch reads, also written as getopt's abbreviation (``--err``).

    The job request keys each option by the one it means (``#SBATCH --err=logs/x.err``
    sets the error file like ``--error``); an empty value sets nothing.
    """
    chosen = script.job.get(name)
    return chosen if chosen is not None and chosen.value else None


def _with_job_name(value: str, script: Script) -> str:
    """``%x`` replaced by the job name the script sets, which may add directories.

    Slurm puts the name in as it is: ``--job-name=open_r1/eval`` with
    ``--output=logs/%x-%j.out`` writes into ``logs/open_r1/``. A name the script does
    not set (the file name, or ``sbatch -J``) stays ``%x``: unknown.
    """
    if "x" not in pattern_letters(value):
        return value
    job_name = _setting(script, "job-name")
    name = job_name.value if job_name is not None else None
    if not name or not _known(name):
        return value
    return FILENAME_PATTERN.sub(lambda m: name if m.group(1)[-1] == "x" else m.group(0), value)


# A placeholder to fill in (CASE_DIR/slurm.out, LOG_DIR/x.out): all capitals, a "_".
_PLACEHOLDER = re.compile(r"(?:^|/)[A-Z][A-Z0-9]*_[A-Z0-9_]*(?:/|$)")
# A tag of three or more capitals between percent signs (%JOB_LOGS_PATH%, filled in by
# a launcher's string replacement). Slurm's own patterns are one letter each (%A_%a,
# %x-%j): none has two capitals in a row after the %.
_PERCENT_TAG = re.compile(r"%[A-Z][A-Z0-9_]{2,}%")
# A renderer's tag: {{ x }}, {% x %}, Python's {NAME} (not the shell's ${NAME}), [[NAME]],
# @NAME@ (autoconf), __NAME__, %NAME%. (<name> is for a person to fill in, and usage texts.)
_TAG = re.compile(
    r"\{\{|\{%|(?<!\$)\{[A-Za-z_]\w*\}|\[\[\s*[A-Za-z_]\w*\s*\]\]"
    r"|@[A-Z][A-Z0-9_]*@|__[A-Z][A-Z0-9_]*__|" + _PERCENT_TAG.pattern
)
_ANGLED = re.compile(r"<[A-Za-z_][\w-]*>")
# A word that stands for the reader's own path (localpath/logs, your_dir/, path_to_x/,
# an anonymised xxx/rational_bert/logs/).
_PLACEHOLDER_WORD = re.compile(
    r"(?:^|/)(?:local_?path|your(?:[_-][\w-]*)?|path[_/]?to(?:[_-][\w-]*)?|x{3,})(?:/|$)", re.I
)


def _template(path: str) -> bool:
    """Whether the path has a placeholder to fill in before sbatch: unknown, never wrong.

    A template's placeholder word (``CASE_DIR/slurm.out``, ``localpath/logs``,
    ``your_dir/``), tag (``[[SLURM_DIR]]/x``) or ``<dir>`` is replaced (by sed, a
    renderer, the reader) before submission; a directory literally named so is not a
    published script's intent. A file called a template may still log to ``logs/``.
    """
    return any(p.search(path) is not None for p in (_PLACEHOLDER, _TAG, _ANGLED, _PLACEHOLDER_WORD))


_TEMPLATE_DIRS = frozenset({"template", "templates"})
_TEMPLATE_MARKS = (".template", ".tmpl", ".tpl", ".j2", ".jinja")
# Package data a tool copies or fills in (assets/), and a header another file is
# appended to (slurm_header_x.sh, slurm_headers/): never submitted where it lies.
_DATA_DIRS = frozenset({"assets"})
_HEADER = re.compile(r"(?:^|[^a-z])headers?(?:[^a-z]|$)")


# A file named as a template (as sbatch-unknown-option reads it: header._TEMPLATE_NAME):
# ``disbatch_template.sbatch`` whose ``${LOG_PATH}`` a script fills in before sbatch.
_TEMPLATE_NAME = re.compile(r"templ|tmpl|\.j2$|\.jinja|\.in$|\.tpl$", re.I)


def _variables_filled(path: str) -> bool:
    """Whether the file's shell variables are filled in before sbatch reads it.

    A file named as a template (``x_template.sbatch``, ``job.slurm_template``) is read
    by code that substitutes its ``${NAME}`` words (``--time=${TIME}``, ``-o
    ${LOG_PATH}/x.log``): they are tags, not words sbatch leaves literal. The same
    test tells sbatch-unknown-option that a template's variables are unknown.
    """
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return _rendered(path) or _TEMPLATE_NAME.search(name) is not None


def _rendered(path: str) -> bool:
    """Whether the file is a template a tool renders into the script it submits.

    ``templates/tgi.template.slurm`` is filled in and submitted by the repository's
    own code, which also makes the log directory it names: whether that exists is not
    the checkout's to say (unknown). A file merely called ``template.sbatch`` that is
    submitted as it is stays judged.
    """
    return _in_template_dir(path) or _template_name(path)


def _in_template_dir(path: str) -> bool:
    return any(part in _TEMPLATE_DIRS for part in path.replace("\\", "/").split("/")[:-1])


def _template_name(path: str) -> bool:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return any(mark in name for mark in _TEMPLATE_MARKS)


def _assembled(script: Script) -> bool:
    """Whether the repository's code builds the submitted script from this file.

    A rendered template, a file under ``assets/`` (package data the tool copies into
    its run directory, which it also prepares: ``tool init`` makes ``log/``) or a
    header prepended to generated job bodies is submitted from a directory that code
    makes, not from the checkout: whether its log directory exists is unknown here.
    A file in ``template/`` with no tag to fill in is a copy-and-submit example (the
    same script often lies beside it outside ``template/``): judged as it is. A file
    whose directives hold tags (``cleanrl_1gpu.slurm_template``) is rendered by code
    into the file it submits.
    """
    path = script.path
    parts = path.replace("\\", "/").lower().split("/")
    return (
        _template_name(path)
        or (_in_template_dir(path) and _TAG.search(script.text) is not None)
        or _tagged_directives(script)
        or any(part in _DATA_DIRS for part in parts[:-1])
        or any(_HEADER.search(part) for part in parts)
    )


def _tagged_directives(script: Script) -> bool:
    """Whether a directive holds a renderer's tag (``--ntasks={{ntasks}}``).

    sbatch refuses such a header as it is written, so the file is rendered by the
    repository's code, which writes it where it submits it from (and makes its log
    directory there): not the checkout's to judge. A file of a templated tree
    (``{{cookiecutter.project_slug}}/examples/x.sh``) is rendered with the tree around
    it, whose layout the checkout shows: judged as it is.
    """
    if _TAG.search(script.path):
        return False
    lines = script.lines
    return any(
        0 < d.line <= len(lines) and _TAG.search(lines[d.line - 1]) is not None
        for d in script.directives
    )


def _elsewhere(directory: str, chdir: str | None) -> bool:
    """Whether the log directory is an absolute path (its own, or by ``--chdir``).

    An absolute directory missing here is another host's, in one account's persistent
    storage: the script's own ``mkdir`` of it (too late for the first job) says the
    author keeps it, not that it is missing where the job runs. Unknown, not a warning.
    """
    return posixpath.isabs(directory) or (chdir is not None and posixpath.isabs(chdir))


# A comment (not a directive) that tells the reader to replace a ``$`` word.
_REPLACE_NOTE = re.compile(r"^[ \t]*#(?![ \t]*SBATCH)[^\n]*\breplace\b[^\n]*\$", re.I | re.M)


def _refused_name(setting: Setting) -> bool:
    """Whether sbatch refuses the option as written: ``--workdir``, renamed ``--chdir``.

    sbatch 22.05.8 stops with "unrecognized option '--workdir=./log/'" (exit 255)
    and Slurm 25.11's ``src/common/slurm_opt.c`` has no such name: the script is never
    submitted, so there is no working directory and no log to judge (the refusal is
    ``sbatch-unknown-option``'s).
    """
    return setting.written.lstrip("-").split("=", 1)[0] == "workdir"


# A shell variable or ``~`` that sbatch leaves as it is written (``${___}`` is a masked
# template tag: unknown, never literal).
_VARIABLE = re.compile(r"\$(?:\{[A-Za-z]\w*\}?|[A-Za-z]\w*)|(?:^|/)~")


def _literal_variable(script: Script, path: str) -> str | None:
    """The shell word in a directive's path, which sbatch never expands; None: none.

    A heredoc fed to sbatch unquoted has its variables expanded by the shell that
    writes it, and a template's (``job.template.sbatch``) by whatever renders it, so
    only a script file's own directives are literal. So are the words a comment tells
    the reader to replace (``## Please replace $WORKING_DIR with the absolute path``,
    ``# replace ${value} by whatever you want``): blanks to fill in, not a path.
    """
    if script.origin is not None or _variables_filled(script.path):
        return None
    if _REPLACE_NOTE.search(script.text) is not None:
        return None
    match = _VARIABLE.search(path)
    return match.group(0).lstrip("/") if match else None


def _no_mkdir(context: LintContext) -> str:
    """Which Slurm leaves a missing log directory missing: this version, or those before 23.02."""
    who = f"Slurm {context.version}" if context.version else "Slurm before 23.02"
    return f"{who} does not create it (23.02 and later do)"


def _literal_log_dir(
    script: Script, setting: Setting, directory: str, word: str, context: LintContext
) -> Finding:
    head = (
        f"#SBATCH {setting.written}: sbatch does not expand {word} in a directive, so the "
        f"log goes into a directory literally named {directory}"
    )
    if not context.log_dir_not_created:
        return script.finding(
            setting.line,
            WARNING,
            RULE_LOG_DIR.id,
            f"{head}, which Slurm {context.version} creates under the job's working "
            "directory: the log is not where the path says",
            "write the path out (/home/me/logs/%x-%j.out), keep the log relative to the "
            'submit directory, or pass it on the command line (sbatch --output="$HOME/logs/'
            '%x-%j.out")',
        )
    return script.finding(
        setting.line,
        ERROR,
        RULE_LOG_DIR.id,
        f"{head}, which does not exist, and {_no_mkdir(context)}: the job fails at once and "
        "leaves no log",
        "write the path out (/home/me/logs/%x-%j.out), keep the log relative to the submit "
        'directory, or pass it on the command line (sbatch --output="$HOME/logs/%x-%j.out")',
    )


def _literal_chdir(script: Script, setting: Setting, word: str, context: LintContext) -> Finding:
    head = (
        f"#SBATCH {setting.written}: sbatch does not expand {word} in a directive, so the "
        f"job's working directory is literally {setting.value}, which does not exist; Slurm "
        "opens the job's log (slurm-%j.out, or a relative --output) there"
    )
    tail = (
        ": the job fails at once and leaves no log"
        if context.log_dir_not_created
        else f": Slurm {context.version} creates it for the log where it may, and the job "
        "runs in that literal directory (its relative paths miss) or fails"
    )
    return script.finding(
        setting.line,
        ERROR,
        RULE_LOG_DIR.id,
        head + tail,
        "write the path out, leave --chdir away (the submit directory is the default), "
        'or pass it on the command line (sbatch --chdir="$HOME/run")',
    )


def _per_job(script: Script, setting: Setting, directory: str, context: LintContext) -> Finding:
    return script.finding(
        setting.line,
        ERROR,
        RULE_LOG_DIR.id,
        f"#SBATCH {setting.written}: the directory {directory} names the job itself (%j, %J "
        f"or %A, padded or not), so it cannot exist before the job starts, and "
        f"{_no_mkdir(context)}: the job fails at once and leaves no log",
        "keep the job id in the file name (logs/%x-%j.out) and the directory fixed "
        "(mkdir -p logs before sbatch)",
    )


@dataclass(frozen=True)
class Missing:
    """A directory known to be missing: under --submit-dir (explicit), or not shipped."""

    where: str
    explicit: bool


def _missing(
    script: Script, setting: Setting, missing: Missing, context: LintContext, work: bool = False
) -> Finding:
    """``work``: the directory is the job's working directory (a relative ``--chdir``)."""
    where = missing.where
    what = (
        f"the job's working directory {where}, where Slurm opens the default log (slurm-%j.out),"
        if work
        else f"the directory {where}"
    )
    how = (
        f"{what} does not exist"
        if missing.explicit
        else f"{what} is neither beside the script nor at a level above it "
        "in its git checkout, the checkout does not ship it, and nothing in the script "
        "creates it"
    )
    return script.finding(
        setting.line,
        ERROR,
        RULE_LOG_DIR.id,
        f"#SBATCH {setting.written}: {how}, and {_no_mkdir(context)}: the job fails at "
        "once and leaves no log",
        f"mkdir -p {where} before sbatch (the script's own mkdir comes too late), or ship "
        f"it (a {where}/.gitkeep)",
    )


def _made_too_late(
    script: Script, setting: Setting, directory: str, line: int, context: LintContext
) -> Finding:
    return script.finding(
        setting.line,
        WARNING,
        RULE_LOG_DIR.id,
        f"#SBATCH {setting.written} writes into {directory}/, which this script creates "
        f"only on line {script.shown(line)}: Slurm opens the log before the script runs "
        f"({_no_mkdir(context)}), so where it does not exist yet the job fails at once "
        "with no log",
        f"mkdir -p {directory} before sbatch (or keep the log in the submit directory)",
    )


def _lookup(directory: str, chdir: str | None, context: LintContext) -> bool | Missing | None:
    """True: it exists; Missing: it is known not to; None: unknown from here.

    Absolute paths (the directory's, or an absolute ``--chdir``'s) are another host's
    when missing here, so only their existence says anything. Without a submit
    directory, a script in a git work tree is submitted from its own directory: there
    the directory exists when it is on disk beside the script or the checkout ships it.
    """
    if posixpath.isabs(directory):
        return True if os.path.isdir(directory) else None
    if chdir is not None and not _known(chdir):
        return None
    if chdir is not None and posixpath.isabs(chdir):
        where = posixpath.normpath(posixpath.join(chdir, directory))
        return True if os.path.isdir(where) else None
    if context.submit_dir is not None:
        where = posixpath.normpath(posixpath.join(context.submit_dir, chdir or "", directory))
        return True if os.path.isdir(where) else Missing(where, explicit=True)
    top = None if context.script_dir is None else _work_tree(context.script_dir)
    if context.script_dir is None or top is None:
        return None
    where = posixpath.normpath(posixpath.join(chdir or "", directory))
    if where.split("/", 1)[0] == "..":
        return _climbing(where, context.script_dir, top)
    for submit in _submit_candidates(context.script_dir, top):
        if os.path.isdir(posixpath.join(submit, where)) or shipped(submit, where):
            return True
    return Missing(where, explicit=False)


def _climbing(where: str, script_dir: str, top: str) -> bool | Missing | None:
    """A log directory that climbs out of the submit directory (``../watch_folder``).

    It is written for a submit directory below the checkout's top, where it lands in
    the checkout: that is judged like any directory of the checkout. From a directory
    where it leaves the checkout it is another tree's: those candidates say nothing.
    """
    top = os.path.abspath(top)
    inside = False
    for submit in _submit_candidates(script_dir, top):
        target = posixpath.normpath(posixpath.join(os.path.abspath(submit), where))
        if not target.startswith(top + os.sep):
            continue
        relative = posixpath.relpath(target, top)
        if os.path.isdir(target) or shipped(top, relative):
            return True
        inside = True
    return Missing(where, explicit=False) if inside else None


def _submit_candidates(script_dir: str, top: str) -> list[str]:
    """Where a script of a checkout may be submitted from: its directory, up to the top.

    ``sbatch slurm/train.sbatch`` from the checkout's top is as usual as ``cd slurm``
    first; a script in ``slurm/`` that logs to ``slurm/%x.out`` is written for the
    former. The directory is missing only when it is missing from every one of them.
    """
    candidates = [script_dir]
    current = os.path.abspath(script_dir)
    top = os.path.abspath(top)
    while current != top and current.startswith(top + os.sep):
        current = posixpath.dirname(current)
        candidates.append(current)
    return candidates


def shipped(script_dir: str, *parts: str) -> bool:
    """Whether the git work tree holding ``script_dir`` ships the directory ``parts``.

    Git keeps no empty directory: it ships one through a file in it. Read without
    running git (a clone's config can make git run its commands): a keeper file
    (``.gitkeep``) there, or the path in the work tree's index.
    """
    where = posixpath.normpath(posixpath.join(script_dir, *parts))
    top = _work_tree(script_dir)
    if top is None:
        return False
    if any(os.path.isfile(posixpath.join(where, keeper)) for keeper in _KEEPERS):
        return True
    relative = posixpath.relpath(where, top)
    if relative.startswith(".."):
        return False
    return _indexed(top, relative)


_work_tree = find_work_tree


def _indexed(top: str, relative: str) -> bool:
    """Whether a path under ``relative/`` is in the index (v2/v3 store whole names)."""
    try:
        data = read_bounded(
            posixpath.join(top, ".git", "index"), what="git index", max_bytes=_MAX_INDEX
        )
    except (FileNotFoundError, UsageError):
        return False
    return (relative.encode() + b"/") in data


RULE_LOG_DIR = Rule(
    "output-dir-missing",
    ERROR,
    "--output/--error into a directory that cannot exist or does not exist (Slurm before "
    "23.02 does not create it: the job fails)",
    _log_dir,
)
# The script's own path: $0, ${0}, $BASH_SOURCE, ${BASH_SOURCE[0]} (also ${BASH_SOURCE[0]:-$0}).
_SELF = r"(?:\$\{?0(?![\w])|\$\{?BASH_SOURCE)"
_DIRNAME = re.compile(r"(?<![\w-])dirname(?![\w-])")
# ${0%/*}: the directory by parameter expansion.
_SELF_DIR = re.compile(r"\$\{(?:0|BASH_SOURCE(?:\[0\])?)%/\*\}")
_SELF_WORD = re.compile(_SELF)
# NAME=$(realpath "$0"): the script's path kept for a later dirname.
_SELF_PATH = re.compile(r"^\s*(?:export\s+|local\s+|readonly\s+)?(\w+)=.*" + _SELF)
_SINGLE_QUOTED = re.compile(r"'[^']*'")
_REFERENCE = re.compile(r"\$\{?(\w+)")
# What tells where the job was submitted from, or the script's real path.
_SUBMIT_LOOKUP = re.compile(r"SLURM_SUBMIT_DIR|scontrol\s+show\s+job")


def _spool_dir(script: Script, context: LintContext) -> Iterator[Finding]:
    """The script's own directory from ``$0``/``BASH_SOURCE`` in a batch job.

    slurmd runs a copy of the batch script, ``<SlurmdSpoolDir>/job<ID>/slurm_script``:
    ``$0`` and ``BASH_SOURCE`` name that copy on every cluster, so a directory taken
    from them is the spool directory, and the files the script looks for beside
    itself are not there. A script that reads ``$SLURM_SUBMIT_DIR`` or asks
    ``scontrol show job`` for its real path knows where it came from: a directory it
    keeps may be a fallback the lookup replaces (quiet, unless it is still used past
    the lookup), but a ``source "$(dirname "$0")/env.sh"`` before any lookup reads the
    spool there and then (a file that is never there). A heredoc fed to sbatch had
    ``$0`` expanded by the shell that wrote it (the submitter's). A plain ``cd
    "$SLURM_SUBMIT_DIR"`` is no lookup of $0 (the directory taken after it is the spool
    still); a name that keeps the directory and is never read looks for nothing. A script
    without directives is judged when it is submitted all the same: its own comment
    (``# sbatch -p high slurm.sh``) or a file beside it sbatches it.
    """
    if script.origin is not None:
        return
    text = script.text
    if "dirname" not in text and "%/*}" not in text:
        return
    if not _batch_header(script) and not _submitted(script, context):
        return
    looked = _SUBMIT_LOOKUP.search(text) is not None
    first_lookup = _first_lookup(script) if looked else 0
    paths: set[str] = set()
    kept_dirs: dict[str, int] = {}
    for number, line in script.code_lines():
        if first_lookup and first_lookup <= number:
            yield from _kept_past_lookup(script, first_lookup, kept_dirs)
            if _only_moves(script, first_lookup):
                yield from _taken_after_cd(script, first_lookup, paths)
            return
        if "dirname" in line or "%/*}" in line:
            code = _SINGLE_QUOTED.sub("''", line)
            if not _self_directory(code, paths):
                continue
            if not looked or _SOURCED.match(code):
                if not _unused(script, code, number):
                    yield _spool_finding(script, number)
            elif (name := _assigned(code)) is not None:
                kept_dirs.setdefault(name, number)
        elif kept_dirs and _SOURCED.match(line):
            # source "$SCRIPT_DIR/lib/env.sh" before the lookup: read from the spool there
            # and then, whatever the lookup does later.
            for name in [n for n in _used_in(line) if n in kept_dirs]:
                yield _spool_finding(script, kept_dirs.pop(name))
        elif "=" in line and ("0" in line or "BASH_SOURCE" in line):
            kept = _SELF_PATH.match(_SINGLE_QUOTED.sub("''", line))
            if kept is not None:
                paths.add(kept.group(1))


# ``source DIR/x.sh`` or ``. DIR/x.sh``: a file read from the directory there and then.
_SOURCED = re.compile(r"^\s*(?:source|\.)\s")


_ASSIGNED = re.compile(r"^\s*(?:export\s+|local\s+|readonly\s+)?(\w+)=")
# NAME= anywhere on a line (after ``&&``, ``then``), not an option's --name=.
_ANY_ASSIGNMENT = re.compile(r"(?<![\w$-])([A-Za-z_]\w*)=(?!=)")


# A file test on the directory (``[ -f "$SCRIPT_DIR/x.py" ]``): a fallback that checks.
_TESTED = re.compile(r"-[defrsx]\s+\"?\$\{?(\w+)")


def _assigned(code: str) -> str | None:
    match = _ASSIGNED.match(code)
    return match.group(1) if match else None


def _kept_past_lookup(script: Script, first: int, kept: dict[str, int]) -> Iterator[Finding]:
    """A kept spool directory still used after the submit lookup, which never replaced it.

    ``SCRIPT_DIR=$(dirname "$0")`` then ``cd "$SLURM_SUBMIT_DIR"`` and ``python
    "$SCRIPT_DIR/x.py"``: the lookup moved the shell, not the name, so ``x.py`` is still
    looked for in the spool. A fallback (``${SLURM_SUBMIT_DIR:-$SCRIPT_DIR}``, or an
    ``elif [ -f "$SCRIPT_DIR/x.py" ]`` that checks the file is there before it is taken)
    or a name the script sets again after the lookup (``script_path=$(dirname
    "$(scontrol ...)")``) is quiet.
    """
    if not kept:
        return
    used: set[str] = set()
    replaced: set[str] = set()
    for number, line in script.code_lines():
        if number < first:
            continue
        replaced.update(n for n in _ANY_ASSIGNMENT.findall(line) if n in kept)
        replaced.update(n for n in _TESTED.findall(line) if n in kept)
        if not _SUBMIT_LOOKUP.search(line):
            used.update(n for n in _used_in(line) if n in kept)
    for name in sorted(used - replaced, key=kept.__getitem__):
        yield _spool_finding(script, kept[name])


# Where one command of a line ends and the next begins.
_SEPARATOR = re.compile(r"&&|\|\||[;|]")
_PRINTS = re.compile(r"^\s*(?:echo|printf)(?![\w-])")
# $NAME/ or ${NAME}/: a path under the directory.
_PATH_USE = re.compile(r"\$\{?(\w+)\}?/")


def _used_in(line: str) -> list[str]:
    """Names a line's commands use: any reference, but in ``echo``/``printf`` a path only.

    ``echo "copy is in $SCRIPT_DIR"`` tells where the copy is and opens nothing there;
    ``printf ... > "$SCRIPT_DIR/log"`` or a command's argument is a use.
    """
    used: list[str] = []
    for part in _SEPARATOR.split(line):
        found = _PATH_USE if _PRINTS.match(part) else _REFERENCE
        used += found.findall(part)
    return used


# ``cd "$SLURM_SUBMIT_DIR"`` (``|| exit``, also ``"${SLURM_SUBMIT_DIR:-${PWD}}"``): it moves
# the shell, and $0 stays the spool copy.
_CD_SUBMIT = re.compile(
    r"^\s*cd\s+\"?\$\{?SLURM_SUBMIT_DIR(?::[-?](?:\$\{\w+\}|[^}])*)?\}?\"?\s*"
    r"(?:(?:\|\||&&)\s*exit(?:\s+\d+)?\s*)?;?\s*$"
)


def _first_lookup(script: Script) -> int:
    """The first code line that asks where the job came from (0: none)."""
    return next((n for n, line in script.code_lines() if _SUBMIT_LOOKUP.search(line)), 0)


def _only_moves(script: Script, first: int) -> bool:
    """Whether every lookup from line ``first`` on is a plain ``cd "$SLURM_SUBMIT_DIR"``."""
    return all(
        _CD_SUBMIT.match(line)
        for n, line in script.code_lines()
        if n >= first and _SUBMIT_LOOKUP.search(line)
    )


def _taken_after_cd(script: Script, first: int, paths: set[str]) -> Iterator[Finding]:
    """The script's own directory taken after a plain ``cd "$SLURM_SUBMIT_DIR"``.

    The cd moves the shell, not $0: slurmd runs the copy by its absolute path
    (``<SlurmdSpoolDir>/job<ID>/slurm_script``), so ``HPC_DIR="$(cd "$(dirname
    "${BASH_SOURCE[0]}")" && pwd)"`` after it is still the spool directory (DeepForest's
    ``bash "$HPC_DIR/run_cluster_train.sh"``). A name kept so and then only printed is
    quiet, as before a lookup.
    """
    lines = [(n, line) for n, line in script.code_lines() if n > first]
    for index, (number, line) in enumerate(lines):
        if "dirname" in line or "%/*}" in line:
            code = _SINGLE_QUOTED.sub("''", line)
            if not _self_directory(code, paths):
                continue
            name = None if _SOURCED.match(code) else _assigned(code)
            if name is None or any(name in _used_in(later) for _, later in lines[index + 1 :]):
                yield _spool_finding(script, number)
        elif "=" in line and ("0" in line or "BASH_SOURCE" in line):
            kept = _SELF_PATH.match(_SINGLE_QUOTED.sub("''", line))
            if kept is not None:
                paths.add(kept.group(1))


# Names that hold a script's own directory by convention, never set by the environment.
_DIR_NAMES = frozenset({"SCRIPT_DIR", "SCRIPTDIR", "SCRIPT_PATH", "DIR", "HERE", "ROOT_DIR"})


def _unused(script: Script, code: str, number: int) -> bool:
    """Whether the line keeps the spool directory in a name nothing reads.

    ``DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"`` with no ``$DIR`` anywhere
    after (a leftover of a template) looks for nothing beside the script. An exported
    name is read by the programs the job runs: used.
    """
    match = _ASSIGNED.match(code)
    if match is None or code.lstrip().startswith("export"):
        return False
    name = match.group(1)
    reference = re.compile(r"\$\{?!?" + re.escape(name) + r"(?!\w)|\bexport\s+" + name + r"\b")
    if len(reference.findall(code)) > 0:
        return False
    later = [line for n, line in script.code_lines() if n > number]
    if any(reference.search(line) for line in later):
        return False
    # A path under a name the script never sets ($SCRIPT_DIR/common.sh) may be this
    # directory under another name (set by a file it sources): not known to be unused.
    # A name that says nothing of a directory ($sizex/ in a sed expression s/x=$/x=$sizex/)
    # is not it either.
    assigned = set(_ANY_ASSIGNMENT.findall(script.text))
    return all(
        used in assigned
        or (used.isupper() and used not in _DIR_NAMES)
        or _DIR_LIKE.search(used) is None
        for line in later
        for used in _PATH_USE.findall(line)
    )


# A name that may hold a directory: SCRIPTDIR, here, root, base_path, src, ...
_DIR_LIKE = re.compile(r"dir|path|root|home|base|here|src|top|loc|folder|prefix|where", re.I)


def _batch_header(script: Script) -> bool:
    """Whether the script is written for sbatch: a directive sbatch reads, or a ``#SBATCH``
    line at the start of a line that a command before it made sbatch skip (``set -euo
    pipefail`` above the header: still a job script, run by slurmd from its spool copy)."""
    return any(d.ignored is None or d.text.startswith("#SBATCH") for d in script.directives)


def _submitted(script: Script, context: LintContext) -> bool:
    """A script without directives that is still a batch script: its own comments submit
    it (``# sbatch -p high -t 60 slurm.sh``) or a file beside it does (``sbatch
    jobfile.sh`` in submit.sh, which passes every option on its command line)."""
    return bool(_usage_lines(script)) or bool(_submissions(script, context))


def _self_directory(code: str, paths: set[str]) -> bool:
    """Whether the line takes a directory of the script's own path (or of a kept copy)."""
    if _SELF_DIR.search(code):
        return True
    if not _DIRNAME.search(code):
        return False
    if _SELF_WORD.search(code):
        return True
    return any(name in paths for name in _REFERENCE.findall(code))


def _spool_finding(script: Script, line: int) -> Finding:
    return script.finding(
        line,
        ERROR,
        RULE_SPOOL_DIR.id,
        "the script's own directory from $0/BASH_SOURCE: in a batch job that is slurmd's "
        "spool directory (<SlurmdSpoolDir>/job<ID>/, where sbatch's copy of the script "
        "runs), not where the script lives or was submitted from, so the files looked for "
        "beside it are not there",
        'use "$SLURM_SUBMIT_DIR" (where sbatch was run) or an absolute path; scontrol show '
        "job $SLURM_JOB_ID names the original script (Command=)",
    )


RULE_SPOOL_DIR = Rule(
    "script-dir-in-spool",
    ERROR,
    "the batch script's own directory from $0/BASH_SOURCE (slurmd runs a spool copy)",
    _spool_dir,
)
RULES = (RULE_LOG_DIR, RULE_SPOOL_DIR)
