"""sbatch and srun options as getopt reads them: ``--opt=v``, ``--opt v``, ``-N2``, ``-N 2``.

One parser for ``#SBATCH`` lines and ``srun`` command words, so that ``-c 8``,
``--cpus-per-task 8`` and ``--cpus-per-task=8`` are the same option to every rule.
Options are named by their canonical long name (``cpus-per-task``). Long options
whose argument is optional in Slurm (``--exclusive``, ``--kill-on-bad-exit``) take
a value only after ``=``; parsing stops at the first word that is not an option
(srun's program) or after ``--``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SHORT = {
    "A": "account",
    "a": "array",
    "B": "extra-node-info",
    "b": "begin",
    "C": "constraint",
    "c": "cpus-per-task",
    "D": "chdir",
    "d": "dependency",
    "e": "error",
    "F": "nodefile",
    "G": "gpus",
    "i": "input",
    "J": "job-name",
    "L": "licenses",
    "M": "clusters",
    "m": "distribution",
    "N": "nodes",
    "n": "ntasks",
    "o": "output",
    "p": "partition",
    "q": "qos",
    "S": "core-spec",
    "T": "threads",
    "t": "time",
    "w": "nodelist",
    "x": "exclude",
}
# Short options without an argument (srun's and sbatch's together; none clash).
SHORT_FLAGS = {
    "E": "preserve-env",
    "H": "hold",
    "h": "help",
    "I": "immediate",
    "K": "kill-on-bad-exit",
    "k": "no-kill",
    "l": "label",
    "O": "overcommit",
    "Q": "quiet",
    "s": "oversubscribe",
    "u": "unbuffered",
    "V": "version",
    "v": "verbose",
    "W": "wait",
    "X": "disable-status",
    "Z": "no-allocate",
}
ALIASES = {"tasks-per-node": "ntasks-per-node", "workdir": "chdir", "name": "job-name"}
# Long options that take no argument, or one only after "=".
# pyxis (the enroot SPANK plugin) adds these switches to srun and sbatch; each takes no
# value, so the word after one is srun's program, not the switch's argument.
PYXIS_FLAGS = frozenset(
    prefix + name
    for prefix in ("", "no-")
    for name in (
        "container-mount-home",
        "container-remap-root",
        "container-entrypoint",
        "container-writable",
        "container-readonly",
    )
) | {"container-entrypoint-log"}
LONG_FLAGS = PYXIS_FLAGS | frozenset(
    {
        "contiguous",
        "disable-status",
        "exact",
        "exclusive",
        "external-launcher",
        "help",
        "hold",
        "ignore-pbs",
        "immediate",
        "kill-on-bad-exit",
        "label",
        "multi-prog",
        "no-allocate",
        "no-kill",
        "no-requeue",
        "overcommit",
        "overlap",
        "oversubscribe",
        "parsable",
        "preserve-env",
        "propagate",
        "pty",
        "quiet",
        "reboot",
        "requeue",
        "send-libs",
        "spread-job",
        "test-only",
        "unbuffered",
        "usage",
        "use-min-nodes",
        "verbose",
        "version",
        "wait",
        "whole",
    }
)


@dataclass(unsafe_hash=True)
class Option:
    """``name`` is the canonical long name; ``index`` the word it was read from.

    Read-only by convention, not frozen: a frozen dataclass is three times slower to
    build, and lint builds one per option of every ``#SBATCH`` line.
    """

    name: str
    value: str | None
    index: int
    written: str


def canonical(name: str) -> str:
    return ALIASES.get(name, name)


def parse_options(words: Sequence[str]) -> tuple[list[Option], int]:
    """Options from the start of ``words``; also the index of the first non-option word."""
    found: list[Option] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return found, index + 1
        if word.startswith("--") and len(word) > 2:
            index = _long(words, index, found)
        elif word.startswith("-") and len(word) > 1:
            index = _short(words, index, found)
        else:
            break
    return found, index


def _long(words: Sequence[str], index: int, found: list[Option]) -> int:
    word = words[index]
    name, sep, value = word[2:].partition("=")
    name = canonical(name)
    if sep:
        found.append(Option(name, value, index, word))
        return index + 1
    if name in LONG_FLAGS or index + 1 >= len(words):
        found.append(Option(name, None, index, word))
        return index + 1
    found.append(Option(name, words[index + 1], index, f"{word} {words[index + 1]}"))
    return index + 2


def _short(words: Sequence[str], index: int, found: list[Option]) -> int:
    word = words[index]
    position = 1
    while position < len(word):
        letter = word[position]
        if letter in SHORT:
            rest = word[position + 1 :]
            if rest:
                found.append(Option(SHORT[letter], rest, index, word))
                return index + 1
            if index + 1 < len(words):
                value = words[index + 1]
                found.append(Option(SHORT[letter], value, index, f"{word} {value}"))
                return index + 2
            found.append(Option(SHORT[letter], None, index, word))
            return index + 1
        if letter in ("K", "k") and word[position + 1 :].isdigit():
            found.append(Option(SHORT_FLAGS[letter], word[position + 1 :], index, word))
            return index + 1
        found.append(Option(SHORT_FLAGS.get(letter, letter), None, index, word))
        position += 1
    return index + 1
