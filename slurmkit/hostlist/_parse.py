"""Turn hostlist text into plain names and bracket patterns, or one precise error.

Slurm's own parser is lenient in ways that hide mistakes (22.05 prints ``n]``
for ``n[1-`` and exits 0), so every malformed piece here is an error that
names the piece and its 1-based position. The accepted syntax is Slurm's
(comma/whitespace separated tokens, several bracket groups per name, zero
padding) plus two ClusterShell extensions Slurm 22.05 rejects: text after the
last bracket (``n[1-2]-ib``) and step ranges (``n[1-10/2]``).
"""

from __future__ import annotations

import re
from itertools import repeat

from slurmkit.errors import HostlistParseError

DIGITS = "0123456789"

# Python refuses int() on longer digit strings; no real host number comes close.
MAX_DIGITS = 4000

_SEPARATORS = re.compile(r"[\s,]*")
# A token: runs of ordinary characters and complete bracket groups. Commas and
# spaces inside brackets stay in the token so the range parser can point at them.
_TOKEN = re.compile(r"(?:[^\s,\[\]]+|\[[^\[\]]*\])+")
_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_SPAN = re.compile(r"([0-9]+)(?:-([0-9]+)(?:/([0-9]+))?)?\Z")


class Span:
    """One ``lo-hi/step`` item inside brackets; ``width`` is the length of ``lo`` as typed.

    Slurm pads every number of the range to the width of the *lower* bound,
    so ``[01-100]`` gives 01..99,100 and ``[9-011]`` gives 9,10,11.
    (A plain class, not a dataclass: importing dataclasses would double the
    import time of this package.)
    """

    __slots__ = ("hi", "lo", "step", "width")

    def __init__(self, lo: int, hi: int, width: int, step: int = 1) -> None:
        self.lo, self.hi, self.width, self.step = lo, hi, width, step

    def __len__(self) -> int:
        return self.size()

    def size(self) -> int:
        """How many numbers; unlike ``len()`` never bounded by ``sys.maxsize``."""
        return (self.hi - self.lo) // self.step + 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Span) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Span(lo={self.lo}, hi={self.hi}, width={self.width}, step={self.step})"

    def _key(self) -> tuple[int, int, int, int]:
        return (self.lo, self.hi, self.width, self.step)

    def strings(self) -> list[str]:
        return list(map(f"%0{self.width}d".__mod__, range(self.lo, self.hi + 1, self.step)))


class Pattern:
    """A token with brackets: ``literals[0] field[0] literals[1] ... field[-1] literals[-1]``."""

    __slots__ = ("fields", "literals", "pos", "text")

    def __init__(
        self,
        literals: tuple[str, ...],
        fields: tuple[tuple[Span, ...], ...],
        text: str,
        pos: int,
    ) -> None:
        self.literals, self.fields, self.text, self.pos = literals, fields, text, pos

    def __repr__(self) -> str:
        return f"Pattern({self.text!r})"

    def count(self) -> int:
        return self.head_count() * sum(span.size() for span in self.fields[-1])

    def head_count(self) -> int:
        """How many combinations the groups before the last one make (each one head)."""
        total = 1
        for field in self.fields[:-1]:
            total *= sum(span.size() for span in field)
        return total


Item = str | Pattern


_SHOWN = 120  # longest input quoted whole in an error; longer ones are cut around the fault
_FIELD_END = re.compile(r"[\s,]")


def fail(message: str, text: str, index: int) -> HostlistParseError:
    """The error for ``text`` at 0-based ``index``, shown 1-based.

    A 100k-name list read from stdin must still give one short line, so long
    inputs are quoted from the start of the faulty item, with the item's
    character offset in the whole input added to the message.
    """
    if len(text) <= _SHOWN:
        return HostlistParseError(message, text, index + 1)
    start = max(text.rfind(",", 0, index), max(map(text.rfind, " \t\n", repeat(0), repeat(index))))
    start = max(start + 1, index - _SHOWN // 2)
    end = _FIELD_END.search(text, index + 1)
    excerpt = text[start : min(end.start() if end else len(text), start + _SHOWN)]
    where = f"{message} (character {index + 1} of {len(text)})"
    return HostlistParseError(where, excerpt, index - start + 1)


def amount(number: int) -> str:
    """``number`` as text for a message, even past Python's int-to-text digit limit.

    ``n[1-2][1-2]...`` with 20,000 groups holds 2**20000 names; ``str()`` of that
    raises ValueError (``sys.get_int_max_str_digits``), which would turn a plain
    "too many names" into a traceback.
    """
    digits = int(number.bit_length() * 0.30102999566398120) + 1  # log10(2); may be 1 high
    if digits < 1000:
        return str(number)
    return f"about 10^{digits - 1}"


def shorten(text: str, most: int = 60) -> str:
    """``text`` quoted for a one-line message: a 100,000-character pattern shows its start."""
    return repr(text if len(text) <= most else text[:most] + "...")


class Budget:
    """What building a set or a fold must list one by one, counted against ``limit``.

    Plain ranges cost nothing; names listed singly and the outer bracket groups'
    combinations do. ``None`` or 0: no limit.
    """

    def __init__(self, limit: int | None, listing: str = "names") -> None:
        self.limit, self.listing, self.listed = limit, listing, 0

    def spend(self, n: int, pattern: Pattern, text: str) -> None:
        self.listed += n
        if self.limit and self.listed > self.limit:
            raise fail(
                f"too many {self.listing} to list one by one ({amount(self.listed)}, "
                f"limit {self.limit}) from {shorten(pattern.text)}",
                text,
                pattern.pos,
            )

    def spend_heads(self, pattern: Pattern, text: str) -> None:
        """Each combination of the outer groups is at least one entry: counted before the
        first one is listed, so a[1-200]b[1-200]c[1-2] is refused at once under 1000."""
        heads = pattern.head_count()
        if heads > 1:
            self.spend(heads, pattern, text)


def number_too_long(name: str) -> HostlistParseError:
    """Python cannot print or parse such numbers, and no host has one; quote only the start."""
    shown = name if len(name) <= 40 else name[:40] + "..."
    return HostlistParseError(f"number longer than {MAX_DIGITS} digits in {shown!r}")


def parse(text: str) -> list[Item]:
    """Split hostlist text into plain names (str) and :class:`Pattern` tokens, in order.

    A comma list without a single name (``,,,``) is an error: it is a broken list,
    not an empty one. Blank text is an empty list (stdin may end in blank lines);
    commands that act on nodes refuse that too, through :func:`slurmkit.hostlist.targets`.
    """
    if "[" not in text and "]" not in text:
        names: list[Item] = [*text.replace(",", " ").split()]
        if not names and "," in text:
            raise HostlistParseError("no host names, only commas", text)
        return names
    return [_item(token, start, text) for start, token in _tokens(text)]


def _tokens(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pos, end = 0, len(text)
    while True:
        pos = _SEPARATORS.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= end:
            return out
        match = _TOKEN.match(text, pos)
        if match is None:
            raise _stray_bracket(text, pos)
        out.append((pos, match.group()))
        pos = match.end()


def _stray_bracket(text: str, index: int) -> HostlistParseError:
    if text[index] == "]":
        return fail("']' without a matching '['", text, index)
    closing = text.find("]", index + 1)
    nested = text.find("[", index + 1)
    if nested != -1 and (closing == -1 or nested < closing):
        return fail("'[' inside brackets", text, nested)
    return fail("'[' is never closed", text, index)


def _item(token: str, start: int, text: str) -> Item:
    if "[" not in token:
        return token
    literals: list[str] = []
    fields: list[tuple[Span, ...]] = []
    last = 0
    for match in _BRACKET.finditer(token):
        literals.append(token[last : match.start()])
        fields.append(_spans(match.group(1), start + match.start(1), text))
        last = match.end()
    literals.append(token[last:])
    return Pattern(tuple(literals), tuple(fields), token, start)


def _spans(body: str, offset: int, text: str) -> tuple[Span, ...]:
    if not body:
        raise fail("empty brackets", text, offset - 1)
    spans: list[Span] = []
    for part in body.split(","):
        spans.append(_span(part, offset, text))
        offset += len(part) + 1
    return tuple(spans)


def _span(part: str, offset: int, text: str) -> Span:
    if not part:
        raise fail("empty range in brackets", text, offset)
    match = _SPAN.match(part)
    if match is None:
        raise fail(f"invalid range {part!r}", text, offset)
    lo_s, hi_s, step_s = match.groups()
    if max(len(lo_s), len(hi_s or ""), len(step_s or "")) > MAX_DIGITS:
        raise fail(f"number longer than {MAX_DIGITS} digits", text, offset)
    lo = int(lo_s)
    hi = int(hi_s) if hi_s is not None else lo
    if lo > hi:
        raise fail(f"range {part!r} goes down", text, offset)
    step = int(step_s) if step_s is not None else 1
    if step == 0:
        raise fail(f"step 0 in range {part!r}", text, offset)
    return Span(lo, hi, len(lo_s), step)
