"""Folding that keeps the input order (``scontrol show hostlist``) and folding over every number.

Keeping order follows Slurm's ``hostlist_push``: a name or range joins the
previous range only when it continues it (same prefix, next number,
compatible zero padding); duplicates stay. Consecutive ranges with the same
prefix share one bracket.

Multi-dimensional folding works from the last number outwards: names that
share everything but one number become a range, then identical ranges are
grouped by the number before, and so on. Each level is one pass with a
dictionary, so a 2-D diagonal (the worst case for pairwise merging) is linear.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Literal

from slurmkit.hostlist import _intervals as iv
from slurmkit.hostlist._canonical import classify, span_pieces, split_numbers
from slurmkit.hostlist._expand import heads, pattern_chunks
from slurmkit.hostlist._hostset import Block, HostSet, bracketed, merge_classes, number, texts_of
from slurmkit.hostlist._natsort import natkey
from slurmkit.hostlist._parse import (
    MAX_DIGITS,
    Budget,
    Pattern,
    number_too_long,
    parse,
)

# A kept-order entry: [prefix, lo, hi, pad-of-lo] for a range, or [name] for a single host.
Entry = list


def _compatible(pad_a: int, lo_a: int, pad_b: int, lo_b: int) -> bool:
    """Whether one width prints both numbers unchanged (Slurm's ``_width_equiv``)."""
    if pad_a and pad_b:
        return pad_a == pad_b
    if pad_a:
        return len(str(lo_b)) >= pad_a
    if pad_b:
        return len(str(lo_a)) >= pad_b
    return True


class _InOrder:
    """Accumulates entries the way Slurm's ``hostlist_push_range`` does."""

    def __init__(self, limit: int | None) -> None:
        self.entries: list[Entry] = []
        self.budget = Budget(limit)

    def push(self, prefix: str, pad: int, lo: int, hi: int) -> None:
        entries = self.entries
        if entries:
            tail = entries[-1]
            if (
                len(tail) == 4
                and tail[2] == lo - 1
                and tail[0] == prefix
                and _compatible(tail[3], tail[1], pad, lo)
            ):
                tail[2] = hi
                return
        entries.append([prefix, lo, hi, pad])

    def push_names(self, names: list[str]) -> None:
        """``push`` for each plain name, inlined: this loop is the cost of keep-order folding."""
        if not names:
            return
        prefixes, digits, padded = split_numbers(names)
        pads = [len(d) if len(d) > 1 and d[0] == "0" else 0 for d in digits]
        if not padded:
            pads = [0] * len(digits)
        if max(map(len, digits)) > MAX_DIGITS:
            raise number_too_long(max(names, key=len))
        entries = self.entries
        for name, prefix, text, pad in zip(names, prefixes, digits, pads, strict=True):
            if not text:
                self._push_odd(name)
                continue
            value = int(text)
            tail = entries[-1] if entries else None
            if (
                tail is not None
                and len(tail) == 4
                and tail[2] == value - 1
                and tail[0] == prefix
                and (tail[3] == pad or _compatible(tail[3], tail[1], pad, value))
            ):
                tail[2] = value
            else:
                entries.append([prefix, value, value, pad])

    def _push_odd(self, name: str) -> None:
        found = classify(name)
        if found is None or found[0][1]:
            self.entries.append([name])  # Slurm: a single host, never part of a range
        else:
            (prefix, _, pad), value = found
            self.push(prefix, pad, value, value)

    def push_pattern(self, pattern: Pattern, text: str) -> None:
        literals, fields = pattern.literals, pattern.fields
        tail = literals[-1]
        if tail or any(span.step != 1 for span in fields[-1]):
            self.budget.spend(pattern.count(), pattern, text)
            self.push_names([name for chunk in pattern_chunks(pattern) for name in chunk])
            return
        self.budget.spend_heads(pattern, text)
        for head in heads(pattern):
            for span in fields[-1]:
                for (prefix, _, pad), lo, hi in span_pieces(head, span, ""):
                    self.push(prefix, pad, lo, hi)

    def text(self) -> str:
        out: list[str] = []
        entries, i, n = self.entries, 0, len(self.entries)
        while i < n:
            first = entries[i]
            if len(first) == 1:
                out.append(first[0])
                i += 1
                continue
            j = i + 1
            while j < n and len(entries[j]) == 4 and entries[j][0] == first[0]:
                j += 1
            blocks: list[Block] = [(lo, hi, pad) for _, lo, hi, pad in entries[i:j]]
            out.append(bracketed(first[0], blocks))
            i = j
        return ",".join(out)


def fold_in_order(hosts: str | Iterable[str], limit: int | None) -> str:
    """Fold keeping order and duplicates: ``expand(result) == expand(hosts)``."""
    folder = _InOrder(limit)
    for text in texts_of(hosts):
        items = parse(text)
        if "[" not in text:
            folder.push_names(items)  # type: ignore[arg-type]
            continue
        for item in items:
            if isinstance(item, str):
                folder.push_names([item])
            else:
                folder.push_pattern(item, text)
    return folder.text()


# -- multi-dimensional ---------------------------------------------------------

_DIGIT_RUNS = re.compile(r"([0-9]+)")

# a folded piece: its sort key (natkey) and its text
_Piece = tuple[tuple[tuple[int | str, ...], ...], str]
# what _boxes interns: the blocks of the last number, or one folded column over an inner id
_Node = (
    tuple[Literal["blocks"], tuple[Block, ...]]
    | tuple[Literal["dim"], tuple[iv.Interval, ...], int]
)


def fold_multi(hosts: HostSet) -> str:
    """Fold every number of the names, e.g. ``rack[1-2]-n[01-04]``; sorted, no duplicates.

    Within one column, an unpadded number joins the padded ones of the
    widest width it can be printed with unchanged (``node100`` with
    ``node[001-099]``), so common zero-padded clusters fold into one range.
    """
    shapes: defaultdict[tuple[str, ...], list[tuple[list[str], tuple[Block, ...]]]] = defaultdict(
        list
    )
    per_prefix: defaultdict[tuple[str, str], list[tuple[int, list[iv.Interval]]]] = defaultdict(
        list
    )
    for (prefix, suffix, pad), ranges in hosts.ranges().items():
        per_prefix[(prefix, suffix)].append((pad, ranges))
    for (prefix, suffix), classes in per_prefix.items():
        parts = _DIGIT_RUNS.split(prefix)
        shape = (*parts[0::2], suffix)
        shapes[shape].append((parts[1::2], tuple(merge_classes(classes))))
    pieces = [(natkey(word), word) for word in hosts.words()]
    for shape, rows in shapes.items():
        pieces.extend(_fold_shape(shape, rows))
    pieces.sort(key=lambda piece: piece[0])
    return ",".join(text for _, text in pieces)


def _fold_shape(
    shape: tuple[str, ...], rows: list[tuple[list[str], tuple[Block, ...]]]
) -> Iterator[_Piece]:
    columns = list(zip(*(digits for digits, _ in rows), strict=True)) if rows and rows[0][0] else []
    widths = [_column_widths(column) for column in columns]
    by_class: defaultdict[tuple[int, ...], list[tuple[tuple[int, ...], tuple[Block, ...]]]] = (
        defaultdict(list)
    )
    for digits, blocks in rows:
        if any(len(d) > MAX_DIGITS for d in digits):
            raise number_too_long(shape[0] + max(digits, key=len))
        classes = tuple(_width_class(d, w) for d, w in zip(digits, widths, strict=True))
        by_class[classes].append((tuple(map(int, digits)), blocks))
    for classes, points in by_class.items():
        for boxes, blocks in _boxes(points, len(classes)):
            yield _box_text(shape, classes, boxes, list(blocks))


def _column_widths(column: Iterable[str]) -> list[int]:
    return sorted({len(d) for d in column if len(d) > 1 and d[0] == "0"})


def _width_class(digits: str, padded_widths: list[int]) -> int:
    if len(digits) > 1 and digits[0] == "0":
        return len(digits)
    i = bisect_right(padded_widths, len(digits))
    return padded_widths[i - 1] if i else 0


def _boxes(
    points: list[tuple[tuple[int, ...], tuple[Block, ...]]], ndim: int
) -> Iterator[tuple[list[list[iv.Interval]], tuple[Block, ...]]]:
    """Group points into boxes, innermost column first.

    Each ``rest`` id stands for everything folded so far (inner columns and
    the blocks of the last number), interned so that grouping hashes an int.
    """
    table: list[_Node] = []
    ids: dict[_Node, int] = {}

    def intern(value: _Node) -> int:
        found = ids.get(value)
        if found is None:
            found = ids[value] = len(table)
            table.append(value)
        return found

    pairs = [(coords, intern(("blocks", blocks))) for coords, blocks in points]
    for _ in range(ndim):
        groups: defaultdict[tuple[tuple[int, ...], int], list[int]] = defaultdict(list)
        for coords, rest in pairs:
            groups[(coords[:-1], rest)].append(coords[-1])
        pairs = [
            (head, intern(("dim", tuple(iv.from_values(values)), rest)))
            for (head, rest), values in groups.items()
        ]
    for _, rest in pairs:
        dims: list[list[iv.Interval]] = []
        node = table[rest]
        while node[0] == "dim":
            _, intervals, inner = node
            dims.append(list(intervals))
            node = table[inner]
        yield dims, node[1]


def _box_text(
    shape: tuple[str, ...],
    classes: tuple[int, ...],
    dims: list[list[iv.Interval]],
    blocks: list[Block],
) -> _Piece:
    out: list[str] = []
    first: list[str] = []
    for literal, pad, intervals in zip(shape, classes, dims, strict=False):
        out.append(literal)
        first.append(literal)
        out.append(_field_text([(lo, hi, pad) for lo, hi in intervals]))
        first.append(number(intervals[0][0], pad))
    tail = bracketed(shape[-2], blocks, shape[-1])
    out.append(tail)
    first.append(f"{shape[-2]}{number(blocks[0][0], blocks[0][2])}{shape[-1]}")
    return natkey("".join(first)), "".join(out)


def _field_text(blocks: list[Block]) -> str:
    return bracketed("", blocks)
