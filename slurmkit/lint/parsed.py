"""A bash script as the lint rules see it: words, commands, heredocs, comments, branches.

Plain data built by :func:`slurmkit.lint.shell.parse`, with the views rules ask for
(a command's program and arguments, its ``NAME=value`` prefix, a pipeline's members,
whether two offsets lie in different branches of one ``if``) computed once on first use.
Offsets are character offsets into the original text.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Generic, NamedTuple, TypeVar

_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)(\[[^\]]*\])?(\+?)=(.*)", re.S)
# Words that may start a command without being its program.
_KEYWORDS = frozenset(
    {"if", "then", "elif", "else", "do", "while", "until", "!", "{", "time", "coproc"}
)
# timeout(1) options whose value is the next word (-k 60, --signal TERM)
_TIMEOUT_VALUED = frozenset({"-k", "--kill-after", "-s", "--signal"})
_WRAPPERS = frozenset({"exec", "command", "builtin", "nohup", "stdbuf"})

_T = TypeVar("_T")


class _cached(Generic[_T]):
    """``functools.cached_property`` without its lock (Python 3.11 takes one on every read).

    A non-data descriptor: the first read stores the value in the instance's
    ``__dict__``, which later reads find first. Works on frozen dataclasses.
    """

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self.func = func
        self.name = func.__name__

    def __get__(self, obj: Any, owner: Any = None) -> _T:
        if obj is None:
            return self  # type: ignore[return-value]
        value = obj.__dict__[self.name] = self.func(obj)
        return value


class Word(NamedTuple):
    """A shell word: ``text`` has quotes and escapes removed, expansions left as written.

    ``expands`` names the variables the shell running this word expands in it (in
    double quotes or bare; never those in single quotes or escaped), and
    ``substitutes`` the programs its ``$(…)``/backticks run, so a rule can tell
    ``"$SLURM_PROCID"`` (expanded here, once) from ``'$SLURM_PROCID'`` (passed on).
    A named tuple, not a dataclass: a 40,000-line script makes 300,000 of them.
    """

    raw: str
    text: str
    literal: bool
    start: int
    end: int
    expands: frozenset[str] = frozenset()
    substitutes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SyntaxProblem:
    """What bash would refuse (or warn about): line and column are 1-based."""

    line: int
    column: int
    message: str
    severity: str = "error"


@dataclass(frozen=True)
class Assignment:
    name: str
    value: Word
    append: bool = False


@dataclass(eq=False)
class Command:
    """A simple command (read-only by convention; not frozen, which made it slow to build).

    ``depth`` > 0 when it runs inside ``$(…)``, backticks or ``<(…)``.

    ``pipeline`` is (pipeline id, position, members) for a member of a pipeline;
    the members of one pipeline are :meth:`Parsed.pipeline_members`.
    """

    words: tuple[Word, ...]
    start: int
    end: int
    depth: int = 0
    background: bool = False
    after_pipe: bool = False
    pipe_to_next: bool = False
    pipeline: tuple[int, int, int] | None = None

    def _plain_start(self) -> bool:
        """The first word is the program itself (no keyword, assignment, wrapper, env or
        timeout before it): most commands, read without building lists."""
        first = self.words[0]
        text = first.text
        return (
            first.raw not in _KEYWORDS
            and "=" not in text
            and text not in _WRAPPERS
            and text != "env"
            and text != "timeout"
        )

    @_cached
    def prefix(self) -> list[Assignment]:
        """``NAME=value`` words before the program (the whole command if there is none)."""
        if self.words and self._plain_start():
            return []
        found = []
        for word in self._after_keywords():
            assignment = as_assignment(word)
            if assignment is None:
                break
            found.append(assignment)
        return found

    @_cached
    def argv(self) -> tuple[Word, ...]:
        """The program and its arguments: keywords, assignments and wrappers removed."""
        if self.words and self._plain_start():
            return self.words
        words = list(self._after_keywords())
        while words and as_assignment(words[0]) is not None:
            words.pop(0)
        while words and words[0].text in _WRAPPERS:
            words.pop(0)
            while words and words[0].text.startswith("-"):
                words.pop(0)
        if words and words[0].text == "env":
            words.pop(0)
            while words and (words[0].text.startswith("-") or as_assignment(words[0])):
                words.pop(0)
        if words and words[0].text == "timeout":
            words.pop(0)
            while words and words[0].text.startswith("-"):
                if words.pop(0).text in _TIMEOUT_VALUED and words:
                    words.pop(0)  # its value: timeout -k 60 --signal TERM 1h cmd
            words = words[1:]  # the duration
        return tuple(words)

    @_cached
    def name(self) -> str | None:
        argv = self.argv
        return argv[0].text if argv else None

    @_cached
    def env_prefix(self) -> list[Assignment]:
        """Assignments before the program, ``env NAME=value`` ones included."""
        found = list(self.prefix)
        words = list(self._after_keywords())[len(found) :]
        while words and words[0].text in _WRAPPERS:
            words.pop(0)
        if words and words[0].text == "env":
            for word in words[1:]:
                if word.text.startswith("-"):
                    continue
                assignment = as_assignment(word)
                if assignment is None:
                    break
                found.append(assignment)
        return found

    def _after_keywords(self) -> tuple[Word, ...]:
        words = self.words
        index = 0
        while index < len(words) and words[index].raw in _KEYWORDS:
            index += 1
            if words[index - 1].raw == "time" and index < len(words) and words[index].raw == "-p":
                index += 1  # bash's time keyword has one option: -p, the POSIX format
        return words[index:]


@dataclass(frozen=True)
class Heredoc:
    """A here-document; ``reader`` is the command whose stdin it is, ``piped_to`` the
    commands that read that command's output (``cat <<EOF | sbatch``), ``target`` the
    file it is written to (``cat > job.sh <<EOF``), if any."""

    delimiter: str
    quoted: bool
    body: str
    start: int
    end: int
    operator: int
    line: int = 0
    reader: Command | None = None
    piped_to: tuple[Command, ...] = ()
    target: str | None = None
    terminated: bool = True


class Comment(NamedTuple):
    """A bash comment (a named tuple: a script of comments makes tens of thousands)."""

    start: int
    text: str


@dataclass
class Parsed:
    text: str
    commands: list[Command] = field(default_factory=list)
    heredocs: list[Heredoc] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    problems: list[SyntaxProblem] = field(default_factory=list)
    # Each if/case: the character ranges of its branches, of which bash runs one.
    branches: list[tuple[tuple[int, int], ...]] = field(default_factory=list)
    # Each function the script defines: name -> the character range of its body, braces
    # (or parentheses) included; a later definition of a name replaces the earlier one.
    functions: dict[str, tuple[int, int]] = field(default_factory=dict)
    _branch_cache: dict[int, dict[int, int]] = field(default_factory=dict, repr=False)
    _line_starts: list[int] = field(default_factory=list, repr=False)
    _pipelines: dict[int, list[Command]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        # 0, then one past each \n: the running sum of the lines' lengths + 1, in C
        ends = accumulate(map((1).__add__, map(len, self.text.split("\n"))))
        self._line_starts = [0, *ends][:-1]

    def exclusive(self, a: int, b: int) -> bool:
        """Whether offsets ``a`` and ``b`` lie in different branches of one if/case."""
        if not self.branches:
            return False
        where, other = self._branch_of(a), self._branch_of(b)
        return any(other.get(block, index) != index for block, index in where.items())

    def _branch_of(self, offset: int) -> dict[int, int]:
        """{if/case number: branch number} of every branch holding ``offset`` (cached)."""
        cache = self._branch_cache
        found = cache.get(offset)
        if found is None:
            found = {}
            for block, ranges in enumerate(self.branches):
                if ranges[0][0] <= offset < ranges[-1][1]:
                    for index, (start, end) in enumerate(ranges):
                        if start <= offset < end:
                            found[block] = index
            cache[offset] = found
        return found

    def line_of(self, offset: int) -> int:
        """1-based line of an offset."""
        return bisect.bisect_right(self._line_starts, offset)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and column of an offset."""
        line = self.line_of(offset)
        return line, offset - self._line_starts[line - 1] + 1

    def source(self, start: int, end: int) -> str:
        return self.text[start:end]

    def pipeline_members(self, command: Command) -> list[Command]:
        """The commands of ``command``'s pipeline, in order (itself alone if none)."""
        if command.pipeline is None:
            return [command]
        return self._pipelines.get(command.pipeline[0], [command])

    @_cached
    def comment_lines(self) -> set[int]:
        return {self.line_of(c.start) for c in self.comments}


def as_assignment(word: Word) -> Assignment | None:
    """``NAME=value`` (or ``NAME+=value``, ``NAME[i]=value``) as written before a program."""
    if "=" not in word.text or word.raw[:1] in "'\"":
        return None
    match = _ASSIGNMENT.fullmatch(word.text)
    raw_match = _ASSIGNMENT.fullmatch(word.raw)
    if not match or not raw_match:
        return None
    value_raw = raw_match.group(4)
    value = Word(
        raw=value_raw,
        text=match.group(4),
        literal=word.literal,
        start=word.end - len(value_raw),
        end=word.end,
        expands=word.expands,
        substitutes=word.substitutes,
    )
    return Assignment(match.group(1), value, append=bool(match.group(3)))
