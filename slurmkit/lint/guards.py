"""Steps that never run: guards on Slurm's own counts, decided before the rules judge steps.

``if [ "$SLURM_NNODES" -gt 1 ]; then srun torchrun …; else torchrun …; fi`` in a job
of ``--nodes=2``: the else branch never runs, so a launcher there is not outside srun
(issue 32 item 6). Read from the lines, for the plain multi-line shapes only: an
``if``/``elif`` whose test compares ``$SLURM_NNODES``, ``$SLURM_JOB_NUM_NODES`` or
``$SLURM_NTASKS`` with a number, and a ``for`` over ``$(seq 1 $((SLURM_NNODES - 1)))``
or ``for ((i = 1; i < SLURM_NNODES; i++))``. The counts come from the header (a fixed
``--nodes``, ``--ntasks``); anything else is unknown, and unknown code runs.

The bodies of functions the script never calls never run either (:func:`uncalled_bodies`).
And the end of the script: nothing after an ``exit`` that always runs is ever read
(:func:`end_of_script`), which the rules of slips, syntax and steps share.
"""

from __future__ import annotations

import re
from itertools import islice

from slurmkit.lint.script import Script

_COUNT = r"\"?\$\{?(SLURM_NNODES|SLURM_JOB_NUM_NODES|SLURM_NTASKS|SLURM_NPROCS)\}?\"?"
_TEST = re.compile(
    r"^(if|elif)\s+(?:\[\[?|test)\s+" + _COUNT + r"\s+(-eq|-ne|-gt|-ge|-lt|-le|==|!=|=)\s+"
    r"\"?(\d+)\"?\s*(?:\]\]?)?\s*;?\s*(?:then)?\s*$"
)
_SEQ_LOOP = re.compile(
    r"^for\s+\w+\s+in\s+\$\(\s*seq\s+(\d+)\s+\$\(\(\s*\$?\{?"
    r"(SLURM_NNODES|SLURM_JOB_NUM_NODES)\}?\s*-\s*(\d+)\s*\)\)\s*\)\s*;?\s*(?:do)?\s*$"
)
_C_LOOP = re.compile(
    r"^for\s*\(\(\s*\w+\s*=\s*(\d+)\s*;\s*\w+\s*<\s*\$?\{?(SLURM_NNODES|SLURM_JOB_NUM_NODES)"
    r"\}?\s*;[^)]*\)\)\s*;?\s*(?:do)?\s*$"
)
# The first words that open, divide or close what dead_lines judges.
_KEYWORDS = frozenset({"if", "elif", "else", "fi", "fi;", "for", "while", "until", "done", "done;"})
_COMPARE = {
    "-eq": lambda a, b: a == b,
    "==": lambda a, b: a == b,
    "=": lambda a, b: a == b,
    "-ne": lambda a, b: a != b,
    "!=": lambda a, b: a != b,
    "-gt": lambda a, b: a > b,
    "-ge": lambda a, b: a >= b,
    "-lt": lambda a, b: a < b,
    "-le": lambda a, b: a <= b,
}


def counts(script: Script) -> dict[str, int]:
    """Slurm's counts that the header fixes."""
    known: dict[str, int] = {}
    nodes = script.job.nodes
    if nodes is not None and nodes[0] == nodes[1]:
        known["SLURM_NNODES"] = known["SLURM_JOB_NUM_NODES"] = nodes[0]
    ntasks = script.job.integer("ntasks")
    if ntasks is not None:
        known["SLURM_NTASKS"] = known["SLURM_NPROCS"] = ntasks
    return known


def dead_lines(script: Script) -> set[int]:
    """Lines of the script that never run in this job: branches its counts rule out, and
    the bodies of functions nothing calls."""
    return _decided_by_counts(script) | {
        number
        for start, end in uncalled_bodies(script)
        for number in range(script.line_of(start), script.line_of(end - 1) + 1)
    }


def _decided_by_counts(script: Script) -> set[int]:
    known = counts(script)
    if not known or not any(name in script.text for name in known):
        return set()
    lines = list(script.code_lines())
    dead: set[int] = set()
    # (kind, [(branch keyword line, verdict)], ...): an if's branches, or a loop.
    stack: list[tuple[str, list[tuple[int, bool | None]]]] = []
    for number, raw in lines:
        words = raw.split(None, 1)  # the same first word as the stripped line's
        if not words or words[0] not in _KEYWORDS:
            continue  # most lines: judged without stripping them
        first, line = words[0], raw.strip()
        if first in ("if", "elif"):
            verdict = _verdict(line, known)
            if first == "if":
                stack.append(("if", [(number, verdict)]))
            elif stack and stack[-1][0] == "if":
                stack[-1][1].append((number, verdict))
            if line.endswith(("fi", "fi;")) and first == "if":
                stack.pop()  # a one-line if: not judged
        elif first == "else" and stack and stack[-1][0] == "if":
            stack[-1][1].append((number, None if not _decided(stack[-1][1]) else _else(stack)))
        elif first in ("fi", "fi;") and stack and stack[-1][0] == "if":
            _, branches = stack.pop()
            dead |= _dead_branches(branches, number)
        elif first == "for":
            runs = _loop_runs(line, known)
            stack.append(("for", [(number, runs)]))
            if re.search(r"\bdone\s*;?$", line):
                stack.pop()
        elif first in ("while", "until"):
            stack.append(("for", [(number, None)]))
        elif first in ("done", "done;") and stack and stack[-1][0] == "for":
            _, ((start, runs),) = stack.pop()
            if runs is False:
                dead |= set(range(start + 1, number))
    return dead


# Commands that may run a function the text never names: `eval "$cmd"`, `"$@"`, `$launcher`.
_DYNAMIC = frozenset({"eval"})


def uncalled_bodies(script: Script) -> list[tuple[int, int]]:
    """The bodies of the functions the script never calls: their steps never run.

    A function is called when its name appears anywhere else in the text (a call, a
    trap, a comment: any mention counts). A command that runs or evaluates a word only
    known at run time (``"$@"``, ``$launcher``, ``eval``) may call any function, unless
    it stands in such a body itself. A batch script is run, never sourced.
    """
    functions = script.parsed.functions
    if not functions:
        return []
    text = script.text
    unnamed = [span for name, span in functions.items() if _mentions(text, name) < 2]
    for command in script.commands if unnamed else ():
        argv = command.argv
        if not argv or (argv[0].literal and argv[0].text not in _DYNAMIC):
            continue
        if not any(start <= command.start < end for start, end in unnamed):
            return []
    return unnamed


def _mentions(text: str, name: str) -> int:
    """How often ``name`` stands as a word of its own in ``text`` (its definition is one)."""
    return len(re.findall(rf"(?<![\w.:-]){re.escape(name)}(?![\w.:-])", text))


def _verdict(line: str, known: dict[str, int]) -> bool | None:
    match = _TEST.match(line)
    if match is None or match.group(2) not in known:
        return None
    return bool(_COMPARE[match.group(3)](known[match.group(2)], int(match.group(4))))


def _decided(branches: list[tuple[int, bool | None]]) -> bool:
    """Whether every branch so far was decided (else's fate is known only then)."""
    return all(verdict is not None for _, verdict in branches)


def _else(stack: list[tuple[str, list[tuple[int, bool | None]]]]) -> bool:
    """The else branch runs when no earlier branch did."""
    return not any(verdict for _, verdict in stack[-1][1])


def _dead_branches(branches: list[tuple[int, bool | None]], end: int) -> set[int]:
    """Lines of the branches that never run: decided False, or after one decided True."""
    dead: set[int] = set()
    taken = False
    for index, (start, verdict) in enumerate(branches):
        stop = branches[index + 1][0] if index + 1 < len(branches) else end
        if taken or verdict is False:
            dead |= set(range(start + 1, stop))
        if verdict is None and not taken:
            break  # unknown: this and every later branch may run
        taken = taken or verdict is True
    return dead


def _loop_runs(line: str, known: dict[str, int]) -> bool | None:
    """False when a loop bounded by the node count runs no iteration."""
    for pattern, bound in ((_SEQ_LOOP, _seq_bound), (_C_LOOP, _c_bound)):
        match = pattern.match(line)
        if match is not None and match.group(2) in known:
            return bound(match, known[match.group(2)])
    return None


def _seq_bound(match: re.Match[str], nodes: int) -> bool:
    return int(match.group(1)) <= nodes - int(match.group(3))


def _c_bound(match: re.Match[str], nodes: int) -> bool:
    return int(match.group(1)) < nodes


# ``exit`` alone on its line at the left margin (``exit``, ``exit 0``, ``exit $rc``).
_EXIT_LINE = re.compile(r"exit(?:[ \t]+[^\s;&|]+)?[ \t]*;?[ \t]*")
# What closes a block: an exit just before one is the end of that block, not of the script.
_CLOSERS = ("done", "fi", "esac", "}", ";;", ")")
# ``do``/``done`` as words: the loops open before a line.
_LOOP_WORD = re.compile(r"(?<![\w$-])(do|done)(?![\w-])")


def end_of_script(script: Script) -> int:
    """The line of the script's first unconditional top-level ``exit``; past the end if none.

    bash reads and runs a script one command at a time, so nothing after such an ``exit``
    is read at all: a polyglot job script (``#!/usr/bin/env sh``, ``#=`` … ``exit`` …
    ``=#`` and Julia below, run with ``julia $0``) is bash only up to its exit, and a step
    kept for later below an ``exit`` never starts. Only an ``exit`` alone on a line at the
    left margin counts, outside every function, if, case and loop, and not the last line
    of a block (the next code line closing it).
    """
    memo = script.memo
    found = memo.get("end_of_script")
    if found is None:
        found = memo["end_of_script"] = _first_exit(script)
    return int(found)


def _first_exit(script: Script) -> int:
    past_end = len(script.lines) + 1
    if "exit" not in script.text:
        return past_end
    parsed = script.parsed
    functions = list(parsed.functions.values())
    loops = _LoopDepth(script)
    for command in script.commands:
        words = command.words  # the raw first word: a command's name is built when asked
        if not words or words[0].raw != "exit" or command.depth or command.background:
            continue
        if command.pipeline is not None:
            continue
        start = command.start
        line = script.line_of(start)
        text = script.lines[line - 1]
        code = text.split("#", 1)[0] if "#" in text else text
        if not _EXIT_LINE.fullmatch(code):
            continue
        if any(a <= start < b for a, b in functions):
            continue
        if any(ranges[0][0] <= start < ranges[-1][1] for ranges in parsed.branches):
            continue
        rest = islice(script.lines, line, None)
        after = next((t.strip() for t in rest if t.strip()[:1] not in "#"), "")
        if after.startswith(_CLOSERS) or loops.open_before(line):
            continue
        return line
    return past_end


class _LoopDepth:
    """How many loops are open before a line, counted once over the code lines in order
    (the candidates come in line order, so the whole script is read at most once)."""

    def __init__(self, script: Script) -> None:
        self._lines = iter(script.code_lines())
        self._current = next(self._lines, None)
        self._opened = 0

    def open_before(self, number: int) -> bool:
        while self._current is not None and self._current[0] < number:
            for match in _LOOP_WORD.finditer(self._current[1]):
                self._opened += 1 if match[1] == "do" else -1
            self._current = next(self._lines, None)
        return self._opened > 0
