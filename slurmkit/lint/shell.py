"""A small reader of bash: enough of the grammar to find commands, their words and lines.

Not a bash parser. It knows quoting (``'…'``, ``"…"``, ``$'…'``), escapes, comments,
backslash-newline continuations, command and process substitution (``$(…)``,
backticks, ``<(…)``), ``${…}`` and ``$((…))``, heredocs and the control operators.
That is what the lint rules need: an ``srun`` continued over three lines is one
command with the line it starts on; an ``srun`` inside ``$(…)`` is a command too;
the Python a heredoc writes to a file is text, not commands.

Every word and command keeps its offsets in the text, so a caller can map them to
lines and read the exact source of an assignment (heredoc body included).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from slurmkit.errors import UsageError

# Each level of $(…) is a few Python frames; far below the recursion limit, far above
# any real script (a 5000-deep $(…) raised RecursionError).
MAX_DEPTH = 64


class NestingTooDeep(UsageError):
    """Substitutions nested deeper than :data:`MAX_DEPTH`: refused in one line."""


_BLANK = " \t"
_META = frozenset(" \t\n;&|<>()")
# Characters that end a word or start quoting or an expansion; anything else is plain.
_PLAIN = re.compile(r"[^ \t\n;&|<>()\\'\"$`]+")
# A whole word of plain characters, ended by a blank, an operator or the end of the text.
_SIMPLE_WORD = re.compile(r"[^ \t\n;&|<>()\\'\"$`]+(?=[ \t\n;&|<>)]|\Z)")
_SIMPLE_WORD_AND_BLANKS = re.compile(r"([^ \t\n;&|<>()\\'\"$`]+)(?=[ \t\n;&|<>)]|\Z)[ \t]*")
_OPERATORS = (";;&", ";;", ";&", "&&", "||", "|&", ";", "&", "|")
_REDIRECT = re.compile(r"(?:\d+|\{[A-Za-z_]\w*\})?(?:&>>|&>|<<<|<<-|<<|<>|<&|>&|>>|>\||<|>)")
_REDIRECT_START = frozenset("0123456789{<>&")
# Characters a plain word may not start with: blanks, comments, operators, a
# possible redirection (2>, {fd}>), quotes and expansions go the long way.
_NOT_PLAIN_START = frozenset(" \t\n#;&|<>()`'\"$\\0123456789{")
_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)(\[[^\]]*\])?(\+?)=(.*)", re.S)
_ARRAY_START = re.compile(r"[A-Za-z_]\w*\+?=")
_NAME = re.compile(r"[A-Za-z_]\w*")
# Words that may start a command without being its program.
_KEYWORDS = frozenset(
    {"if", "then", "elif", "else", "do", "while", "until", "!", "{", "time", "coproc"}
)
_WRAPPERS = frozenset({"exec", "command", "builtin", "nohup", "stdbuf"})


_T = TypeVar("_T")


class _cached(Generic[_T]):
    """``functools.cached_property`` without its lock (Python 3.11 takes one on every read).

    A non-data descriptor: the first read stores the value in the instance's
    ``__dict__``, which later reads find first. Works on frozen dataclasses.
    """

    def __init__(self, func: Any) -> None:
        self.func = func
        self.name = func.__name__

    def __get__(self, obj: Any, owner: Any = None) -> _T:
        if obj is None:
            return self  # type: ignore[return-value]
        value = obj.__dict__[self.name] = self.func(obj)
        return value


@dataclass(frozen=True)
class Word:
    """A shell word: ``text`` has quotes and escapes removed, expansions left as written."""

    raw: str
    text: str
    literal: bool
    start: int
    end: int


@dataclass(frozen=True)
class Assignment:
    name: str
    value: Word
    append: bool = False


@dataclass(frozen=True)
class Command:
    """A simple command; ``depth`` > 0 when it runs inside ``$(…)`` or backticks."""

    words: tuple[Word, ...]
    start: int
    end: int
    depth: int = 0
    background: bool = False
    after_pipe: bool = False
    pipe_to_next: bool = False

    @_cached
    def prefix(self) -> list[Assignment]:
        """``NAME=value`` words before the program (the whole command if there is none)."""
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
                words.pop(0)
            words = words[1:]  # the duration
        return tuple(words)

    @_cached
    def name(self) -> str | None:
        argv = self.argv
        return argv[0].text if argv else None

    def _after_keywords(self) -> tuple[Word, ...]:
        words = self.words
        index = 0
        while index < len(words) and words[index].raw in _KEYWORDS:
            index += 1
        return words[index:]


@dataclass(frozen=True)
class Heredoc:
    delimiter: str
    quoted: bool
    body: str
    start: int
    end: int
    operator: int


@dataclass(frozen=True)
class Comment:
    start: int
    text: str


@dataclass
class Parsed:
    text: str
    commands: list[Command] = field(default_factory=list)
    heredocs: list[Heredoc] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    _line_starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]

    def line_of(self, offset: int) -> int:
        """1-based line of an offset."""
        return bisect.bisect_right(self._line_starts, offset)

    def source(self, start: int, end: int) -> str:
        return self.text[start:end]


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
    )
    return Assignment(match.group(1), value, append=bool(match.group(3)))


def parse(text: str) -> Parsed:
    """Read ``text``; unbalanced quotes run to the end of the text.

    Raises :class:`NestingTooDeep` for substitutions nested past :data:`MAX_DEPTH`.
    """
    scanner = _Scanner(text)
    scanner.parse_list(depth=0, closer=None)
    result = Parsed(text)
    result.commands = sorted(scanner.commands, key=lambda c: c.start)
    result.heredocs = scanner.heredocs
    result.comments = scanner.comments
    return result


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.commands: list[Command] = []
        self.heredocs: list[Heredoc] = []
        self.comments: list[Comment] = []
        self.pending: list[tuple[str, bool, bool, int]] = []
        self.closers: list[str | None] = []

    # ------------------------------------------------------------ command lists

    def parse_list(self, depth: int, closer: str | None) -> None:
        """Commands up to the end of the text or the ``closer`` (``)`` or a backtick)."""
        if depth > MAX_DEPTH:
            line = self.text.count("\n", 0, self.pos) + 1
            raise NestingTooDeep(
                f"$(…), <(…) or backticks nested more than {MAX_DEPTH} deep at line {line}: "
                "slurmkit cannot read it"
            )
        self.closers.append(closer)
        try:
            self._parse_list(depth, closer)
        finally:
            self.closers.pop()

    def _parse_list(self, depth: int, closer: str | None) -> None:
        text, size = self.text, len(self.text)
        words: list[Word] = []
        after_pipe = False
        parens = 0
        in_test = False

        def finish(background: bool = False, pipe: bool = False) -> None:
            nonlocal words, after_pipe
            if words:
                self.commands.append(
                    Command(
                        words=tuple(words),
                        start=words[0].start,
                        end=words[-1].end,
                        depth=depth,
                        background=background,
                        after_pipe=after_pipe,
                        pipe_to_next=pipe,
                    )
                )
                after_pipe = pipe
            words = []

        while self.pos < size:
            char = text[self.pos]
            if (
                char not in _NOT_PLAIN_START
                and not in_test
                and (simple := _SIMPLE_WORD_AND_BLANKS.match(text, self.pos))
            ):  # the common case first: a plain word (the same Word as _word would make)
                start, self.pos = self.pos, simple.end()  # past the blanks after it, too
                raw = simple.group(1)
                word = Word(raw, raw, True, start, simple.end(1))
                if word.raw == "[[" and all(w.raw in _KEYWORDS for w in words):
                    in_test = True
                words.append(word)
            elif char in _BLANK:
                self.pos += 1
            elif text.startswith("\\\n", self.pos):
                self.pos += 2
            elif char == "\n":
                if words:  # a line ending in | continues the pipeline on the next line
                    finish()
                    after_pipe = False
                in_test = False
                self.pos += 1
                self._read_heredocs()
            elif char == "#" and not in_test:
                end = text.find("\n", self.pos)
                end = size if end < 0 else end
                self.comments.append(Comment(self.pos, text[self.pos : end]))
                self.pos = end
            elif closer is not None and char == closer and (closer == "`" or parens == 0):
                finish()
                self.pos += 1
                return
            elif in_test and char == ";":  # no ]]: not a test after all
                in_test = False
            elif in_test:
                word = self._word(depth, test=True)
                if word.start == word.end:
                    self.pos += 1
                    continue
                words.append(word)
                if word.text == "]]":
                    in_test = False
            elif text.startswith(("<(", ">("), self.pos):
                words.append(self._word(depth))
            elif (
                char in _REDIRECT_START
                and (redirect := _REDIRECT.match(text, self.pos))
                and not _is_operator(text, self.pos)
            ):
                self.pos = redirect.end()
                self._redirection(redirect.group(0), depth)
            elif char in ";&|":
                operator = next(op for op in _OPERATORS if text.startswith(op, self.pos))
                self.pos += len(operator)
                finish(background=operator == "&", pipe=operator in ("|", "|&"))
                after_pipe = operator in ("|", "|&")
            elif text.startswith("((", self.pos) and not words:
                self.pos = _skip_balanced(text, self.pos, "(", ")")
            elif char == "(":
                parens += 1
                finish()
                self.pos += 1
            elif char == ")":
                parens = max(0, parens - 1)
                finish()
                self.pos += 1
            else:
                word = self._word(depth)
                if word.start == word.end:  # nothing a word can start with: skip it
                    self.pos += 1
                    continue
                if word.raw == "[[" and all(w.raw in _KEYWORDS for w in words):
                    in_test = True
                words.append(word)
        finish()

    def _redirection(self, operator: str, depth: int) -> None:
        """Consume a redirection's target; a ``<<`` registers a heredoc read at the newline."""
        self._skip_blanks()
        if self.pos >= len(self.text) or self.text[self.pos] == "\n":
            return
        target = self._word(depth)
        if operator.lstrip("0123456789").endswith(("<<", "<<-")) and "<<<" not in operator:
            quoted = target.raw != target.text or "\\" in target.raw
            self.pending.append((target.text, operator.endswith("-"), quoted, target.start))

    def _read_heredocs(self) -> None:
        text, size = self.text, len(self.text)
        pending, self.pending = self.pending, []
        for delimiter, strip_tabs, quoted, operator in pending:
            body_start = self.pos
            while self.pos < size:
                end = text.find("\n", self.pos)
                end = size if end < 0 else end
                line = text[self.pos : end]
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    body_end = self.pos
                    self.pos = min(end + 1, size)
                    break
                self.pos = min(end + 1, size)
            else:
                body_end = size
            self.heredocs.append(
                Heredoc(
                    delimiter=delimiter,
                    quoted=quoted,
                    body=text[body_start:body_end],
                    start=body_start,
                    end=body_end,
                    operator=operator,
                )
            )

    def _skip_blanks(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in _BLANK:
            self.pos += 1

    # ------------------------------------------------------------ words

    def _word(self, depth: int, test: bool = False) -> Word:
        text, size = self.text, len(self.text)
        start = self.pos
        if not test and (simple := _SIMPLE_WORD.match(text, start)):
            self.pos = end = simple.end()  # the common word: no quotes, no expansions
            word = text[start:end]
            return Word(word, word, True, start, end)
        out: list[str] = []
        literal = True
        if text.startswith(("<(", ">("), self.pos):
            self.pos += 2
            self.parse_list(depth + 1, ")")
            return Word(text[start : self.pos], text[start : self.pos], False, start, self.pos)
        while self.pos < size:
            char = text[self.pos]
            if char in _META and not (test and char in "<>()"):
                if char == "(" and _ARRAY_START.fullmatch(text, start, self.pos):
                    end = _skip_balanced(text, self.pos, "(", ")")
                    out.append(text[self.pos : end])
                    self.pos = end
                    literal = False
                    continue
                if test and char in "&|":
                    out.append(char)
                    self.pos += 1
                    continue
                break
            if char == "\\":
                if text.startswith("\\\n", self.pos):
                    self.pos += 2
                    continue
                out.append(text[self.pos + 1 : self.pos + 2])
                self.pos += 2
            elif char == "'":
                end = text.find("'", self.pos + 1)
                end = size if end < 0 else end
                out.append(text[self.pos + 1 : end])
                self.pos = end + 1
            elif char == '"':
                content, plain = self._double_quoted(depth)
                out.append(content)
                literal = literal and plain
            elif char == "$":
                piece, plain = self._dollar(depth)
                out.append(piece)
                literal = literal and plain
            elif char == "`":
                if self.closers and self.closers[-1] == "`":
                    break  # the end of the backtick substitution this word is in
                begin = self.pos
                self.pos += 1
                self.parse_list(depth + 1, "`")
                out.append(text[begin : self.pos])
                literal = False
            else:  # a run of ordinary characters at once: this loop is lint's inner loop
                plain = _PLAIN.match(text, self.pos)
                end = plain.end() if plain else self.pos + 1
                out.append(text[self.pos : end])
                self.pos = end
        self.pos = min(self.pos, size)
        return Word(text[start : self.pos], "".join(out), literal, start, self.pos)

    def _double_quoted(self, depth: int) -> tuple[str, bool]:
        text, size = self.text, len(self.text)
        self.pos += 1
        out: list[str] = []
        literal = True
        while self.pos < size:
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                break
            if char == "\\" and text[self.pos + 1 : self.pos + 2] in ('"', "\\", "$", "`", "\n"):
                escaped = text[self.pos + 1]
                out.append("" if escaped == "\n" else escaped)
                self.pos += 2
            elif char == "$" and text[self.pos + 1 : self.pos + 2] != "'":
                piece, plain = self._dollar(depth)
                out.append(piece)
                literal = literal and plain
            elif char == "`":
                begin = self.pos
                self.pos += 1
                self.parse_list(depth + 1, "`")
                out.append(text[begin : self.pos])
                literal = False
            else:
                out.append(char)
                self.pos += 1
        return "".join(out), literal

    def _dollar(self, depth: int) -> tuple[str, bool]:
        """An expansion at ``$``: returned as written, and whether it was a plain ``$``."""
        text = self.text
        begin = self.pos
        following = text[self.pos + 1 : self.pos + 2]
        if following == "'":
            end = self.pos + 2
            while end < len(text) and text[end] != "'":
                end += 2 if text[end] == "\\" else 1
            self.pos = min(end + 1, len(text))
            return _ansi_c(text[begin + 2 : end]), True
        if text.startswith("$((", self.pos):
            self.pos = _skip_balanced(text, self.pos + 1, "(", ")")
        elif following == "(":
            self.pos += 2
            self.parse_list(depth + 1, ")")
        elif following == "{":
            self.pos = _skip_balanced(text, self.pos + 1, "{", "}")
        elif following and (following in "@*#?$!-" or following.isdigit()):
            self.pos += 2
        elif match := _NAME.match(text, self.pos + 1):
            self.pos = match.end()
        else:
            self.pos += 1
            return "$", True
        return text[begin : self.pos], False


def _is_operator(text: str, pos: int) -> bool:
    """``&>`` is a redirection, ``&&``/``&`` are operators; digits alone are a word."""
    return text.startswith(("&&", "||"), pos) or (
        text[pos] == "&" and not text.startswith("&>", pos)
    )


def _skip_balanced(text: str, pos: int, opening: str, closing: str) -> int:
    """Offset just past the bracket closing the one at ``pos`` (quotes respected)."""
    depth = 0
    index = pos
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char in "'\"":
            end = text.find(char, index + 1)
            index = len(text) if end < 0 else end + 1
            continue
        if char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return len(text)


_ANSI = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "e": "\x1b"}


def _ansi_c(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ANSI.get(m.group(1), "\\" + m.group(1)), body)
