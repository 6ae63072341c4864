"""Expansion in Slurm's order, and counting without expanding.

The order is ``scontrol show hostnames``: tokens left to right, duplicates
kept, the last bracket group varying fastest (``rack[1-2]-n[1-2]`` ->
rack1-n1, rack1-n2, rack2-n1, rack2-n2; see :func:`heads` for three or more).
Names are produced with one ``%`` format per range, mapped over ``range()``,
so the per-name work stays in C.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain, product

from slurmkit.hostlist import DEFAULT_LIMIT
from slurmkit.hostlist._parse import Item, Pattern, Span, amount, fail, parse, shorten

_TOKEN_START = re.compile(r"(?:[^\s,\[\]]|\[[^\[\]]*\])+")


def count(text: str) -> int:
    """Number of names ``expand(text)`` would return (duplicates included), computed from ranges."""
    return sum(1 if isinstance(item, str) else item.count() for item in parse(text))


def expand(text: str, limit: int | None = DEFAULT_LIMIT) -> list[str]:
    """All names of ``text`` in Slurm's order; refuses to build more than ``limit`` names."""
    items = parse(text)
    check_limit(items, text, limit)
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        else:
            for names in pattern_chunks(item):
                out.extend(names)
    return out


def iter_expand(text: str, limit: int | None = None) -> Iterator[str]:
    """Like :func:`expand` but lazy: memory stays proportional to the bracket sizes, not the output.

    The limit (if any) is checked on the whole text before the first name is
    produced, so a consumer never sees a partial result followed by an error.
    """
    items = parse(text)
    check_limit(items, text, limit)
    return _iter_items(items)


def _iter_items(items: list[Item]) -> Iterator[str]:
    for item in items:
        if isinstance(item, str):
            yield item
        else:
            yield from chain.from_iterable(pattern_chunks(item))


def check_limit(items: list[Item], text: str, limit: int | None) -> None:
    """Raise at the first token where the running total of names passes ``limit``."""
    if limit is None or limit <= 0:
        return
    total = 0
    for index, item in enumerate(items):
        total += 1 if isinstance(item, str) else item.count()
        if total > limit:
            if isinstance(item, Pattern):
                pos, shown = item.pos, item.text
            else:  # plain names carry no position (fast path): find this token by its index
                pos = _token_start(text, index)
                shown = item
            raise fail(
                f"too many names ({amount(total)}, limit {limit}) from {shorten(shown)}", text, pos
            )


def _token_start(text: str, n: int) -> int:
    """Offset of the n-th token of ``text`` (errors only, so a plain scan is fine)."""
    for i, match in enumerate(_TOKEN_START.finditer(text)):
        if i == n:
            return match.start()
    return 0


def heads(pattern: Pattern) -> Iterator[str]:
    """Everything before the last bracket group, for each combination of the other groups.

    Slurm's order, odd as it is: the group just before the last one varies
    slowest, then the one before it, ..., the first group fastest
    (``a[1-2]b[1-2]c[1-2]`` -> a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 ...), because
    ``_push_range_list`` peels bracket groups off from the right.
    """
    literals = pattern.literals
    outer = [_field_strings(field) for field in reversed(pattern.fields[:-1])]
    for combo in product(*outer):
        yield literals[0] + "".join(
            s + lit for s, lit in zip(reversed(combo), literals[1:-1], strict=True)
        )


def pattern_chunks(pattern: Pattern) -> Iterator[Iterable[str]]:
    """Names of one pattern, one lazy chunk per range of the last bracket group."""
    tail, last = pattern.literals[-1], pattern.fields[-1]
    for head in heads(pattern):
        for span in last:
            yield span_names(head, span, tail)


def span_names(head: str, span: Span, tail: str) -> Iterator[str]:
    """Names of one range; plain ``%d`` wherever no zero padding is needed (it is faster)."""
    head, tail = head.replace("%", "%%"), tail.replace("%", "%%")
    lo, hi, step = span.lo, span.hi, span.step
    padded_below = 10 ** (span.width - 1) if span.width > 1 else 0
    if lo >= padded_below:
        return map(f"{head}%d{tail}".__mod__, range(lo, hi + 1, step))
    return map(f"{head}%0{span.width}d{tail}".__mod__, range(lo, hi + 1, step))


def _field_strings(field: tuple[Span, ...]) -> list[str]:
    out: list[str] = []
    for span in field:
        out.extend(span.strings())
    return out
