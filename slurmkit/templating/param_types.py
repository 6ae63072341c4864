"""The value types a template parameter can declare, and how text becomes a checked value.

Values arrive as text (``--set nodes=2``) or as TOML values (``--from-file``, the site
config); both go through :meth:`ParamType.parse`, so ``nodes=two`` fails the same way
wherever it came from. Checked values are what the templates see: ints are ints,
durations know their seconds, lists are lists. Free text is refused when it holds a
line break or a NUL, because it ends up on a single ``#SBATCH`` or shell line.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from slurmkit.errors import UsageError
from slurmkit.grammar import duration, timelimit

_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


class BadValue(ValueError):
    """A value that does not fit its type; the message says what was expected."""


@dataclass(frozen=True)
class Duration:
    """A period such as ``1h``: ``str()`` is its canonical spelling, ``seconds`` its length."""

    seconds: int

    def __str__(self) -> str:
        return duration.format_duration(self.seconds)


class ParamType:
    """Base of the declared types; ``spec`` is how the type is written in a template header."""

    spec: str = ""
    expected: str = ""

    def parse(self, raw: object) -> object:
        raise NotImplementedError

    def render_default(self, value: object) -> str:
        """The value written back as text (``template show``, JSON)."""
        return str(value)

    def _text(self, raw: object) -> str:
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise BadValue(f"{raw!r} is not {self.expected}")
        text = str(raw).strip()
        if _CONTROL.search(text):
            raise BadValue(f"{text!r} holds a line break or control character")
        return text


class StrType(ParamType):
    spec = "str"
    expected = "text"

    def parse(self, raw: object) -> str:
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise BadValue(f"{raw!r} is not text")
        text = str(raw)
        if _CONTROL.search(text):
            raise BadValue(f"{text!r} holds a line break or control character")
        return text


class IntType(ParamType):
    expected = "an integer"

    def __init__(self, minimum: int | None = None) -> None:
        self.minimum = minimum
        self.spec = "int" if minimum is None else f"int>={minimum}"
        if minimum is not None:
            self.expected = f"an integer >= {minimum}"

    def parse(self, raw: object) -> int:
        if isinstance(raw, bool):
            raise BadValue(f"{raw!r} is not {self.expected}")
        if isinstance(raw, int):
            value = raw
        else:
            text = self._text(raw)
            if not re.fullmatch(r"[+-]?\d+", text):
                raise BadValue(f"{text!r} is not {self.expected}")
            value = int(text)
        if self.minimum is not None and value < self.minimum:
            raise BadValue(f"{value} is not {self.expected}")
        return value


class BoolType(ParamType):
    spec = "bool"
    expected = "a boolean (true/false, yes/no, 1/0)"
    _TRUE = frozenset({"true", "yes", "on", "1"})
    _FALSE = frozenset({"false", "no", "off", "0"})

    def parse(self, raw: object) -> bool:
        if isinstance(raw, bool):
            return raw
        text = self._text(raw).lower()
        if text in self._TRUE:
            return True
        if text in self._FALSE:
            return False
        raise BadValue(f"{text!r} is not {self.expected}")

    def render_default(self, value: object) -> str:
        return "true" if value else "false"


class TimeType(ParamType):
    """``sbatch --time`` (:mod:`slurmkit.grammar.timelimit`); the text is kept as typed."""

    spec = "time"
    expected = "a Slurm time limit (MM, HH:MM:SS, D-HH:MM...)"

    def parse(self, raw: object) -> str:
        text = self._text(raw)
        try:
            timelimit.parse_limit(text, what="")
        except UsageError as exc:
            raise BadValue(str(exc)) from None
        return text


class DurationType(ParamType):
    """slurmkit's one human-duration grammar (:mod:`slurmkit.grammar.duration`): no bare numbers."""

    spec = "duration"
    expected = "a duration such as 90s, 30m, 1h, 1d"

    def parse(self, raw: object) -> Duration:
        if isinstance(raw, Duration):
            return raw
        text = self._text(raw)
        try:
            return Duration(duration.parse_duration(text, what=""))
        except UsageError as exc:
            raise BadValue(str(exc)) from None


class ChoiceType(ParamType):
    def __init__(self, choices: Sequence[str]) -> None:
        self.choices = tuple(choices)
        self.spec = f"choice({'|'.join(self.choices)})"
        self.expected = f"one of {', '.join(self.choices)}"

    def parse(self, raw: object) -> str:
        text = self._text(raw)
        if text not in self.choices:
            raise BadValue(f"{text!r} is not {self.expected}")
        return text


class ListType(ParamType):
    """Comma-separated items (or a TOML array); ``allowed`` may end items with ``*`` (a prefix)."""

    def __init__(self, allowed: Sequence[str] = ()) -> None:
        self.allowed = tuple(allowed)
        self.spec = f"list({'|'.join(self.allowed)})" if self.allowed else "list"
        self.expected = (
            f"a comma-separated list of {', '.join(self.allowed)}"
            if self.allowed
            else "a comma-separated list"
        )

    def parse(self, raw: object) -> list[str]:
        if isinstance(raw, (list, tuple)):
            items = [StrType().parse(item).strip() for item in raw]
        else:
            items = [item.strip() for item in self._text(raw).split(",")]
        items = [item for item in items if item]
        for item in items:
            if self.allowed and not any(_allowed(item, pattern) for pattern in self.allowed):
                raise BadValue(f"{item!r} is not allowed: expected {self.expected}")
        return items

    def render_default(self, value: object) -> str:
        return ",".join(value)  # type: ignore[arg-type]


def _allowed(item: str, pattern: str) -> bool:
    if pattern.endswith("*"):
        return item.startswith(pattern[:-1]) and len(item) > len(pattern) - 1
    return item == pattern


class WordsType(ParamType):
    """Shell words, split like the shell would (``--lr 1e-4 --name 'my run'``)."""

    spec = "words"
    expected = "shell words"

    def parse(self, raw: object) -> list[str]:
        if isinstance(raw, (list, tuple)):
            return [StrType().parse(item) for item in raw]
        text = self._text(raw) if not isinstance(raw, str) else StrType().parse(raw)
        try:
            return shlex.split(text)
        except ValueError as exc:
            raise BadValue(f"{text!r} does not split into shell words: {exc}") from None

    def render_default(self, value: object) -> str:
        return shlex.join(value)  # type: ignore[arg-type]


_SIMPLE: dict[str, ParamType] = {
    "str": StrType(),
    "bool": BoolType(),
    "time": TimeType(),
    "duration": DurationType(),
    "words": WordsType(),
}


def parse_type(spec: str) -> ParamType:
    """``int>=1``, ``choice(USR2|USR1|none)``, ``list(a|cmd:*)``... -> a :class:`ParamType`."""
    if spec in _SIMPLE:
        return _SIMPLE[spec]
    match = re.fullmatch(r"int(?:>=(-?\d+))?", spec)
    if match:
        return IntType(int(match.group(1)) if match.group(1) is not None else None)
    match = re.fullmatch(r"(choice|list)\(([^()]*)\)", spec)
    if match:
        options = [opt for opt in match.group(2).split("|") if opt]
        if match.group(1) == "choice":
            if not options:
                raise ValueError("choice() needs at least one option")
            return ChoiceType(options)
        return ListType(options)
    if spec == "list":
        return ListType()
    raise ValueError(
        f"unknown parameter type {spec!r} "
        "(str, int, int>=N, bool, time, duration, choice(a|b), list, list(a|b), words)"
    )
