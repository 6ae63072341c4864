"""Variables nobody sets, used where a value is needed (issue 32 item 4).

``srun -N $NODES`` or ``torchrun --nproc_per_node=$GPUS`` with a variable that the
script never assigns and Slurm never sets: empty, the option takes the next word as
its value or gets none. Only counts (nodes, tasks, CPUs, GPUs, processes, parallel
sizes, ranks) are judged: a node name or a job id from the caller is normal. A
warning: sbatch passes the submitting shell's environment to the job (``--export=ALL``
is the default), so the user may set it before sbatch. Nothing is judged in a script
that sources files, loads modules, reads input or loops (any of them may set it), or that
demands a variable of the submitting shell (``${CONT:?}``: configured from there), except
a count in ``$((…))`` or ``seq`` beside a name the script sets that differs by whole words
(``NUM_FILES`` where only ``FILES`` is set): that one was meant to be set here.

A lower-case ``$name`` the script checks for emptiness (``[ -z "$name" ] && exit``, or
``if [ -n "$name" ]`` around its uses) or handles when unset (``${name+x}``), and every
name of a script that defaults its own lower-case inputs (``seed=${seed:-0}``), comes
from the submitting shell (``sbatch --export=…``): no defect, unless the name is a slip
of a name the script sets (``$head_node_io`` beside ``head_node_ip``).

The shell's own variables (``$RANDOM``, ``$HOSTNAME``, ``$PWD``, positional parameters
…) are known here, so that such a word neither fires this rule nor makes a launcher's
options unreadable to the other rules (:mod:`slurmkit.lint.rules.groups`).
"""

from __future__ import annotations

import bisect
import re
import shlex
from collections.abc import Iterator

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import INFO, Finding, Rule
from slurmkit.lint.parsed import Command
from slurmkit.lint.rules.launchers import launcher_in
from slurmkit.lint.script import Script, Srun, is_srun

# Set by bash itself, or by every login environment a batch job starts from.
SHELL_SPECIALS = frozenset(
    {
        "RANDOM",
        "SRANDOM",
        "HOSTNAME",
        "HOSTTYPE",
        "OSTYPE",
        "MACHTYPE",
        "PWD",
        "OLDPWD",
        "USER",
        "LOGNAME",
        "HOME",
        "SHELL",
        "PATH",
        "LANG",
        "TMPDIR",
        "UID",
        "EUID",
        "PPID",
        "BASHPID",
        "SECONDS",
        "LINENO",
        "EPOCHSECONDS",
        "EPOCHREALTIME",
        "BASH",
        "BASH_VERSION",
        "BASH_SOURCE",
        "FUNCNAME",
        "PIPESTATUS",
        "IFS",
        "REPLY",
        "OPTARG",
        "OPTIND",
        "HOSTFILE",
    }
)
# Variable prefixes the job's environment carries: Slurm's, srun's input, MPI's, CUDA's.
_ENV_PREFIXES = ("SLURM_", "SRUN_", "SBATCH_", "SALLOC_", "PMI", "OMPI_", "CUDA_", "NVIDIA_")
# Anything of these may set any variable: then nothing is known to be unset.
_MAY_SET_ANY = re.compile(
    r"^\s*(?:(?:source|eval|module|ml|conda|mamba|micromamba|spack|set\s+-a|read|getopts|"
    r"declare|typeset|local|export\s+-f|while|for|case)\b|\.(?=[ \t]))",
    re.MULTILINE,
)
# Counts: an empty one makes the option take the next word, or fails the launcher.
COUNT_OPTIONS = (
    "nodes",
    "ntasks",
    "ntasks-per-node",
    "cpus-per-task",
    "gpus",
    "gpus-per-node",
    "gpus-per-task",
)
_LAUNCHER_COUNTS = re.compile(
    r"(?:^|\s)--(?:nnodes|nproc[-_]per[-_]node|num[-_]processes|num[-_]machines|num[-_]gpus"
    r"|num[-_]nodes|tensor[-_]parallel[-_]size|pipeline[-_]parallel[-_]size|world[-_]size"
    r"|node[-_]rank|machine[-_]rank)[= ][\"']?\$\{?(?P<name>[A-Za-z_]\w*)\}?(?=[\"'\s]|$)"
)
# ``#SBATCH --nodes=$NUM_NODES``: the author expects the submitting shell's variables
# (sbatch-unknown-option says the directive itself is refused).
_ENV_INPUT = re.compile(r"\$\{?[A-Z_][A-Z0-9_]*")
_WHOLE = re.compile(r"[\"']?\$\{?([A-Za-z_]\w*)\}?[\"']?")


# ``: "${CONT:?CONT not set}"``: the script stops unless the submitting shell gives it.
_DEMANDED = re.compile(r"\$\{([A-Z_][A-Z0-9_]*):?\?")


def _demands_input(text: str, assigned: set[str]) -> bool:
    """Whether the script demands a variable of the submitting shell (``${CONT:?…}``):
    it is configured from there (MLPerf's ``source config_X.sh; sbatch run.sub``), so its
    other counts may come from there too."""
    return any(name not in assigned for name in _DEMANDED.findall(text))


def _counts(script: Script, command: Command, srun: Srun | None) -> Iterator[str]:
    """Variables given as a count: srun's own options, and the launcher's."""
    if srun is not None:
        for name in COUNT_OPTIONS:
            option = srun.option(name)
            whole = _WHOLE.fullmatch(option.value or "") if option else None
            if whole:
                yield whole.group(1)
    source = script.source(command)
    if launcher_in(source):
        yield from (m.group("name") for m in _LAUNCHER_COUNTS.finditer(source))


def has_fallback(name: str, text: str) -> bool:
    """``${NAME:-default}`` (or ``=``, ``+``, ``?``) in ``text``: an unset NAME is handled there."""
    return re.search(rf"\$\{{{name}:?[-=+?]", text) is not None


def is_known(name: str) -> bool:
    """Set by bash or by the job's environment, whatever the script does."""
    return name in SHELL_SPECIALS or name.startswith(_ENV_PREFIXES)


def _never_set(script: Script, context: LintContext) -> Iterator[Finding]:
    if "$" not in script.text or script.origin is not None:
        return  # a job script fed by a heredoc: the outer shell may expand them first
    if not any(d.ignored is None for d in script.directives):
        return  # a fragment or a sourced file: its caller may set anything
    if any(_ENV_INPUT.search(d.text) for d in script.directives if d.ignored is None):
        return  # configured from the submitting shell: its directives name its variables
    assigned = {b.name for b in script.bindings}
    yield from _misspelt_counts(script, assigned)
    if _MAY_SET_ANY.search(script.text) or _demands_input(script.text, assigned):
        return
    reported: set[str] = set()
    sruns = {id(s.command): s for s in script.sruns}
    for command in script.commands:
        if not is_srun(command.name) and launcher_in(script.source(command)) is None:
            continue
        for name in _counts(script, command, sruns.get(id(command))):
            if name in assigned or name in reported or is_known(name):
                continue
            if script.assigned_sources(name) or has_fallback(name, script.text):
                continue
            reported.add(name)
            yield script.finding(
                script.line_of(command.start),
                RULE_NEVER_SET.severity,
                RULE_NEVER_SET.id,
                f"${name} is a count here, but neither the script nor Slurm sets "
                "it: unless the submitting shell exports it, the option gets an empty value "
                "(or takes the next word as its value)",
                f"set {name}=… in the script, or ${{{name}:?set {name} before sbatch}}",
            )


# ``$(( … ))`` on one line: its names are counts (an unset one is 0 there).
_ARITHMETIC = re.compile(r"\$\(\(([^()\n]*(?:\([^()\n]*\)[^()\n]*)*)\)\)")
_OPERAND = re.compile(r"(?<![\w#])\$?\{?([A-Za-z_]\w*)")


def _count_uses(script: Script) -> dict[str, int]:
    """The first line using each name as a count: ``$((A * B))``, ``seq $FIRST $STEP $LAST``."""
    found: dict[str, int] = {}
    for number, line in script.code_lines():
        if "$((" in line:
            for body in _ARITHMETIC.findall(line):
                for name in _OPERAND.findall(body):
                    found.setdefault(name, number)
    for command in script.commands:
        if command.name == "seq":
            for word in command.argv[1:]:
                whole = _WHOLE.fullmatch(word.raw)
                if whole:
                    found.setdefault(whole.group(1), script.line_of(word.start))
    return found


def _shorter_forms(assigned: set[str]) -> dict[tuple[str, ...], str]:
    """Every name's leading and trailing runs of whole ``_`` parts, to the name."""
    forms: dict[tuple[str, ...], str] = {}
    for other in sorted(assigned):
        parts = tuple(other.split("_"))
        for cut in range(1, len(parts)):
            forms.setdefault(parts[:cut], other)
            forms.setdefault(parts[cut:], other)
    return forms


def _near_miss(name: str, assigned: set[str], forms: dict[tuple[str, ...], str]) -> str | None:
    """An assigned name that this one extends or shortens by whole ``_`` parts
    (``NUM_GPUS_PER_NODE`` beside ``GPUS_PER_NODE``, ``NUM_FILES`` beside ``FILES``):
    the evidence that it was meant to be set here, not by a sourced file."""
    parts = tuple(name.split("_"))
    for cut in range(1, len(parts)):
        for shorter in ("_".join(parts[:cut]), "_".join(parts[cut:])):
            if len(shorter) >= 4 and shorter in assigned:
                return shorter
    longer = forms.get(parts)
    return longer if longer is not None and len(name) >= 4 else None


# Ways to set a name that the bindings do not record: ``NAME[0]=``, ``read NAME``,
# ``for NAME in``, ``printf -v NAME``, ``${NAME:=x}``; ``(( NAME == 3 ))`` is kept too.
_SET_OTHERWISE = re.compile(
    r"(?<![$\w{])([A-Za-z_]\w*)(?:\[[^]\n]*\])?\s*\+?="
    r"|\b(?:read|for|export|declare|local|typeset|readonly|getopts|mapfile|printf\s+-v)\b"
    r"([^\n;|&]*)"
    r"|\$\{([A-Za-z_]\w*):?[-=+?]"
)
_BARE = re.compile(r"(?<![$\w{])[A-Za-z_]\w*")


def _set_otherwise(text: str) -> set[str]:
    """Names set or defaulted where the bindings do not say so, in one pass."""
    found: set[str] = set()
    for match in _SET_OTHERWISE.finditer(text):
        if match[2] is not None:
            found.update(_BARE.findall(match[2]))
        else:
            found.add(match[1] if match[1] is not None else match[3])
    return found


def _misspelt_counts(script: Script, assigned: set[str]) -> Iterator[Finding]:
    """A count in arithmetic or ``seq`` that nothing sets, beside a name the script does
    set that differs by whole words: a sourced file or a module is no excuse then."""
    if "$((" not in script.text and "seq" not in script.text:
        return
    uses = {
        name: line
        for name, line in _count_uses(script).items()
        if name not in assigned and name.isupper() and not is_known(name)
    }
    if not uses:
        return
    forms = _shorter_forms(assigned)
    missed = {name: other for name in uses if (other := _near_miss(name, assigned, forms))}
    if missed:
        missed = {n: o for n, o in missed.items() if n not in _set_otherwise(script.text)}
    for name, other in sorted(missed.items(), key=lambda item: uses[item[0]]):
        yield script.finding(
            uses[name],
            RULE_NEVER_SET.severity,
            RULE_NEVER_SET.id,
            f"${name} is a count here, but neither the script nor Slurm sets it (the script "
            f"sets {other}): it is empty (0 in arithmetic), so the count is wrong",
            f"set {name}=… before this line, or use {other}",
        )


# Sourcing a virtual environment or conda sets PATH and its own variables, never a
# script's lowercase names.
_ACTIVATE = re.compile(r"(?:^|/)activate$")
# ``. file`` sources as ``source file`` does (a ``\b`` after the dot would need a letter:
# ``./run.sh``, never ``. ../setting``).
_MAY_SET_LOWERCASE = re.compile(
    r"^\s*(?:(?:eval|set\s+-a|source)\b|\.(?=[ \t]))(?P<rest>[^\n]*)", re.MULTILINE
)


def _sets_unknown_names(text: str) -> bool:
    """``eval``, ``set -a``, or sourcing anything but an environment's activate script."""
    for match in _MAY_SET_LOWERCASE.finditer(text):
        words = match.group("rest").split()
        head = match.group(0).split()[0]
        if head not in (".", "source") or not words or not _ACTIVATE.search(words[0]):
            return True
    return False


# Lower-case names the environment does carry.
_LOWERCASE_ENV = frozenset({"http_proxy", "https_proxy", "ftp_proxy", "no_proxy", "all_proxy", "_"})


_HANDLED = re.compile(r"\$\{([A-Za-z_]\w*):?[-=+?]")
# ``seed=${seed:-0}``: a lower-case name read from the submitting shell on purpose.
_SELF_DEFAULT = re.compile(r"(?<![\w$])([a-z_]\w*)=[\"']?\$\{\1:?[-=]")


def _lowercase_candidates(script: Script) -> set[str]:
    """Names with a lowercase letter that the script only ever expands.

    By convention the environment (modules, Slurm, the submitting shell) carries
    upper-case names; a lower-case one is the script's own. A name seen anywhere as a
    bare word in code (``read name``, ``for name in``, ``local name``, ``name=…``,
    ``((name++))``) may be set there, so only names that occur solely as ``$name`` are kept.
    """
    expanded = set(re.findall(r"\$\{?([A-Za-z_]\w*)", script.text))
    names = {n for n in expanded if not n.isupper() and not is_known(n)} - _LOWERCASE_ENV
    names -= {b.name for b in script.bindings}
    # ``${name:-x}``, ``${name+x}``: the script handles an unset name itself
    names -= set(_HANDLED.findall(script.text))
    if not names:
        return names
    bare = re.compile(r"(?<![$\w{#!-])(" + "|".join(sorted(names)) + r")(?!\w)")
    # a comment sets nothing: ``# name=/old/path``, commented out, leaves it unset
    code = "\n".join(line for _, line in script.code_lines(heredocs=True))
    return names - set(bare.findall(code))


def _test_lines(
    script: Script, names: set[str], slips: set[str]
) -> tuple[dict[str, int], dict[str, list[int]]]:
    """The first line testing each name (``[ "$name" = x ]``: tests are no commands here),
    and the lines testing each name for emptiness (``-z "$name"``, ``-n "$name"``).

    An emptiness test is how a script checks its input (``sbatch --export=name=…``), so it
    counts as a use only for a slip of a name the script sets (``$head_node_io`` beside
    ``head_node_ip``, in ``slips``); :func:`_unguarded` judges the others."""
    alternatives = "|".join(sorted(names))
    test = re.compile(rf"(-[nz]|\[\[?)\s+!?\s*\"?\$\{{?({alternatives})\}}?\b(?!:?[-=+?])")
    found: dict[str, int] = {}
    emptiness: dict[str, list[int]] = {}
    for number, line in script.code_lines():
        if "$" in line:
            for kind, name in test.findall(line):
                if kind.startswith("[") or name in slips:
                    found.setdefault(name, number)
                else:
                    emptiness.setdefault(name, []).append(number)
    return found, emptiness


_EXIT = re.compile(r"(?:^|[;&|{]\s*)exit\b")


def _if_bodies(script: Script) -> tuple[dict[int, int], list[int]]:
    """{``if`` line: its ``fi`` line} for multi-line ifs, and the lines that exit, in one pass."""
    ends: dict[int, int] = {}
    exits: list[int] = []
    open_ifs: list[int] = []
    for number, line in script.code_lines():
        words = line.split(None, 1)
        first = words[0] if words else ""
        if first == "if" and not re.search(r"\bfi\s*;?\s*$", line):
            open_ifs.append(number)
        elif first in ("fi", "fi;") and open_ifs:
            ends[open_ifs.pop()] = number
        if "exit" in line and _EXIT.search(line.strip()):
            exits.append(number)
    return ends, exits


def _exits_within(exits: list[int], first: int, last: int) -> bool:
    """Whether an ``exit`` lies on lines ``first`` to ``last`` (``exits`` sorted)."""
    at = bisect.bisect_left(exits, first)
    return at < len(exits) and exits[at] <= last


def _unguarded(
    script: Script, emptiness: dict[str, list[int]], uses: dict[str, list[int]]
) -> dict[str, int]:
    """The line to report for each name tested for emptiness: none when a test's branch
    exits (the script refuses to run without it) or every use lies inside a test's
    ``if`` (used only when given); else the first test or use."""
    ends, exits = _if_bodies(script)
    report: dict[str, int] = {}
    for name, tests in emptiness.items():
        guarded = _merged([(test, ends.get(test, test)) for test in tests])
        if any(_exits_within(exits, a, b) for a, b in guarded):
            continue
        left = [u for u in uses.get(name, []) if not _inside(guarded, u)]
        if left:
            report[name] = min(tests[0], *left)
    return report


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Line spans sorted and joined where they overlap, so that one bisection finds
    whether a line lies in any of them (a use per test would be quadratic)."""
    merged: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def _inside(merged: list[tuple[int, int]], line: int) -> bool:
    """Whether ``line`` lies in one of the ``merged`` spans."""
    at = bisect.bisect_right(merged, line, key=lambda span: span[0]) - 1
    return at >= 0 and merged[at][1] >= line


# Names longer than this are never seen as slips: the deletion index of a name costs the
# square of its length, and no real script misspells a name this long.
_SLIP_LONGEST = 64


class _Slips:
    """The names a script sets, indexed once so that whether a name is a slip of one of
    them costs the name's own length, not a scan of every name set (quadratic in a
    script of many names and many tests)."""

    def __init__(self, assigned: set[str]) -> None:
        self.assigned = assigned
        self.prefixes = sorted(assigned)
        self.suffixes = sorted(name[::-1] for name in assigned)
        self.deleted: set[str] = set()
        self.replaced: set[tuple[str, int]] = set()
        for name in assigned:
            if len(name) <= _SLIP_LONGEST:
                for at in range(len(name)):
                    cut = name[:at] + name[at + 1 :]
                    self.deleted.add(cut)
                    self.replaced.add((cut, at))

    def __contains__(self, name: str) -> bool:
        """Whether ``name`` is one letter away from a name the script sets (a typo), or
        differs from one by whole ``_`` parts (``rankmap`` beside ``rankmap_file``)."""
        if name in self.assigned:
            return False
        if _has_prefix(self.prefixes, name + "_") or _has_prefix(self.suffixes, name[::-1] + "_"):
            return True
        if len(name) > _SLIP_LONGEST:
            return False
        if name in self.deleted:  # a letter left out
            return True
        for at in range(len(name)):
            cut = name[:at] + name[at + 1 :]
            if cut in self.assigned or (cut, at) in self.replaced:  # one added, one changed
                return True
        return False


def _has_prefix(ordered: list[str], prefix: str) -> bool:
    """Whether a string of the sorted list ``ordered`` starts with ``prefix``."""
    at = bisect.bisect_left(ordered, prefix)
    return at < len(ordered) and ordered[at].startswith(prefix)


def _option_lines(script: Script, names: set[str]) -> dict[str, list[int]]:
    """The lines giving each name as an option's value: ``--opt $name``, ``--opt=$name``."""
    value = re.compile(r"(?:--?[\w.-]+=)?\"?\$\{?([A-Za-z_]\w*)\}?\"?")
    found: dict[str, list[int]] = {}
    for command in script.commands:
        words = command.words
        for index in range(1, len(words)):
            word = words[index]
            if not word.expands & names:
                continue
            match = value.fullmatch(word.raw)
            if match is None or match.group(1) not in names:
                continue
            before = words[index - 1].text
            # ``--seed=$seed $extra``: the option before has its value already
            if "=" in word.raw.split("$", 1)[0] or (before.startswith("-") and "=" not in before):
                found.setdefault(match.group(1), []).append(script.line_of(word.start))
    for name, line in _stored_option_lines(script, names):
        found.setdefault(name, []).append(line)
    for lines in found.values():
        lines.sort()
    return found


# ``--opt $name`` inside a stored command line (``CMD="train.py --ip $name …"``).
_STORED_OPTION = re.compile(
    r"(?:^|\s)--?[A-Za-z][\w.-]*(?:=|[ \t]+(?:\\\n\s*)?)\$\{?([A-Za-z_]\w*)\}?(?=[\s\"'\\]|$)"
)


def _stored_option_lines(script: Script, names: set[str]) -> Iterator[tuple[str, int]]:
    """Names given to an option inside an assigned command line: bash splits the
    value into the command's words when it runs, so an empty one is lost there too."""
    for binding in script.bindings:
        value = binding.value
        if value is None or not value.expands & names or "-" not in value.raw:
            continue
        for match in _STORED_OPTION.finditer(value.raw):
            if match.group(1) in names:
                yield match.group(1), script.line_of(value.start + match.start(1))


def _unset_option(script: Script, context: LintContext) -> Iterator[Finding]:
    if "$" not in script.text or script.origin is not None:
        return  # a heredoc's job script: the outer shell may fill it in first
    yield from _past_the_array(script)
    if not any(d.ignored is None for d in script.directives) or _sets_unknown_names(script.text):
        return  # a fragment, or a script that may set any name
    names = _lowercase_candidates(script)
    if not names:
        return
    slips = _Slips({b.name for b in script.bindings})
    slipped = {name for name in names if name in slips}
    if _SELF_DEFAULT.search(script.text):
        # ``seed=${seed:-0}``: configured by lower-case names from the submitting shell,
        # except a slip of a name the script sets (``$head_node_io``: no one exports that)
        names = slipped
        if not names:
            return
    options = _option_lines(script, names)
    tests, emptiness = _test_lines(script, names, slipped)
    uses = {name: lines[0] for name, lines in options.items() if name not in emptiness}
    uses.update(_unguarded(script, {n: t for n, t in emptiness.items() if n not in tests}, options))
    for name, line in tests.items():
        uses[name] = min(line, uses.get(name, line))
    by_line: dict[int, list[str]] = {}
    for name, line in uses.items():
        by_line.setdefault(line, []).append(name)
    for line, found in sorted(by_line.items()):
        shown = ", ".join(f"${name}" for name in sorted(found))
        yield script.finding(
            line,
            RULE_UNSET_OPTION.severity,
            RULE_UNSET_OPTION.id,
            f"{shown} set nowhere in the script (lower-case: not from Slurm or a module): "
            "empty here, so the option loses its value or the test always goes one way",
            f"assign {sorted(found)[0]}=… before this line (or check its spelling)",
        )


# ``NAMES=( a b c )`` written out word by word: its length is known.
_LITERAL_ARRAY = re.compile(r"(?m)^[ \t]*(?:export[ \t]+)?([A-Za-z_]\w*)=\(([^()$`*?\[{]*)\)")
_BY_TASK = r"\$\{{{name}\[\$?\{{?SLURM_ARRAY_TASK_ID\}}?\]\}}"
_ARRAY_PART = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?")


def _last_task(spec: str) -> int | None:
    """The highest task id of ``--array`` (``0-39%4``, ``1,3,5-9:2``); None: not literal."""
    last = None
    for part in spec.split("%", 1)[0].split(","):
        match = _ARRAY_PART.fullmatch(part.strip())
        if match is None:
            return None
        first, end, step = int(match[1]), match[2], int(match[3] or 1)
        top = first if end is None else first + (int(end) - first) // max(step, 1) * step
        last = top if last is None else max(last, top)
    return last


def _past_the_array(script: Script) -> Iterator[Finding]:
    """``${NAMES[$SLURM_ARRAY_TASK_ID]}`` with --array going past the last element: the
    last tasks get an empty value (a list one short of the range)."""
    spec = script.job.value("array")
    if not spec or "SLURM_ARRAY_TASK_ID]" not in script.text:
        return
    last = _last_task(spec)
    if last is None:
        return
    arrays: dict[str, int] = {}
    for match in _LITERAL_ARRAY.finditer(script.text):
        name = match[1]
        try:
            words = shlex.split(match[2], comments=True)
        except ValueError:
            words = None
        # assigned twice, or quotes lint cannot split: unknown
        arrays[name] = -1 if name in arrays or words is None else len(words)
    for name, size in arrays.items():
        if size < 0 or last < size or re.search(rf"\b{name}\+=|\b{name}\[\w*\]=", script.text):
            continue
        use = re.search(_BY_TASK.format(name=name), script.text)
        if use is None:
            continue
        yield script.finding(
            script.line_of(use.start()),
            RULE_UNSET_OPTION.severity,
            RULE_UNSET_OPTION.id,
            f"--array={spec} runs task {last}, but {name} holds {size} elements (0 to "
            f"{size - 1}): ${{{name}[$SLURM_ARRAY_TASK_ID]}} is empty in the last "
            f"{last - size + 1} task(s)",
            f"--array=0-{size - 1}, or add the missing element(s) to {name}",
        )


# Info since round seven: a variable a framework or the submit environment sets (worker's
# data file, a wrapper's export) is invisible to the script, and the development part's
# seven test parts had it right on 6 of 10 and 12 of 18 findings.
RULE_NEVER_SET = Rule(
    "variable-never-set",
    INFO,
    "an srun or launcher count (-N, --nproc_per_node…) is a variable nobody sets",
    _never_set,
)
RULE_UNSET_OPTION = Rule(
    "unset-variable-option",
    INFO,
    "a lower-case $name the script never sets, used as an option's value or a test operand",
    _unset_option,
)
RULES = (RULE_NEVER_SET, RULE_UNSET_OPTION)
