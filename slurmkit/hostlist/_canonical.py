"""One identity per host name, whatever syntax it arrived in.

A name is split at its *last* run of digits into ``(prefix, number,
suffix)``; the number's zero padding is part of the identity (``n01`` and
``n1`` are different hosts, as in Slurm). A padded number is stored with its
width ``pad`` (``n007`` -> pad 3, value 7), an unpadded one with pad 0.
Ranges from brackets are mapped onto the same keys without listing their
names, so ``n1[0-5]`` and ``n10,...,n15`` are the same set and
``n[1-1000000000]`` costs one tuple.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from itertools import compress, repeat
from operator import itemgetter

from slurmkit.hostlist._expand import heads, pattern_chunks, span_names
from slurmkit.hostlist._intervals import Interval, from_values, normalize
from slurmkit.hostlist._parse import (
    DIGITS,
    MAX_DIGITS,
    Budget,
    Pattern,
    Span,
    number_too_long,
    parse,
)

Key = tuple[str, str, int]  # (prefix, suffix, pad)


def classify(name: str) -> tuple[Key, int] | None:
    """``(key, value)`` of one plain name, or None for a name without digits.

    Linear in the name: the last digit is found with one C-level ``rfind`` per
    digit and the run before it with ``rstrip``. (A regex search for the last
    digit run restarted at every digit, so ``n`` + 40,000 digits + ``a1b``
    took 11 s.)
    """
    end = max(map(name.rfind, DIGITS)) + 1
    if end == 0:
        return None
    start = len(name[:end].rstrip(DIGITS))
    if end - start > MAX_DIGITS:
        raise number_too_long(name)
    digits = name[start:end]
    pad = len(digits) if len(digits) > 1 and digits[0] == "0" else 0
    return (name[:start], name[end:], pad), int(digits)


def span_pieces(head: str, span: Span, tail: str) -> Iterator[tuple[Key, int, int]]:
    """Canonical ``(key, lo, hi)`` pieces of ``head[span]tail`` in ascending order (step 1 only).

    Digits at the end of ``head`` belong to the number (``nid0000[2-7]`` is
    pad-5 nid00002..), so the range is cut where the printed length changes.
    """
    stripped = head.rstrip(DIGITS)
    lead = head[len(stripped) :]
    lo, hi, width = span.lo, span.hi, span.width
    if not lead:
        padded_below = 10 ** (width - 1) if width > 1 else 0
        if lo < padded_below:
            yield (stripped, tail, width), lo, min(hi, padded_below - 1)
        if hi >= padded_below:
            yield (stripped, tail, 0), max(lo, padded_below), hi
        return
    if len(lead) + len(str(hi)) > MAX_DIGITS:
        raise number_too_long(head)
    base, padded = int(lead), lead[0] == "0"
    start = lo
    while start <= hi:
        length = max(width, len(str(start)))
        end = min(hi, 10**length - 1)
        shift = base * 10**length
        yield (stripped, tail, len(lead) + length if padded else 0), shift + start, shift + end
        start = end + 1


def split_numbers(names: list[str]) -> tuple[list[str], list[str], bool]:
    """Prefixes, trailing digit strings ("" when a name does not end in one), and "any padded".

    Usually every name shares the first one's prefix; checking that and
    slicing is three times faster than stripping each name, and one joined
    string answers "all digits?" and "any zero-padded?" without a Python loop.
    """
    prefix = names[0].rstrip(DIGITS)
    if all(map(str.startswith, names, repeat(prefix))):
        digits = list(map(itemgetter(slice(len(prefix), None)), names))
        lines = "\n" + "\n".join(digits) + "\n"
        flat = lines.replace("\n", "")
        if flat.isascii() and flat.isdigit() and "\n\n" not in lines:
            padded = lines.count("\n0") > lines.count("\n0\n")
            return [prefix] * len(names), digits, padded
    prefixes = list(map(str.rstrip, names, repeat(DIGITS)))
    digits = list(map(str.removeprefix, names, prefixes))
    return prefixes, digits, any(len(d) > 1 and d[0] == "0" for d in digits)


class Builder:
    """Collects names and ranges per key, then normalizes each key once (n log n overall).

    ``limit`` bounds what must be listed one by one to build the set (outer
    bracket groups, step ranges, brackets followed by digits); plain ranges
    never count against it.
    """

    def __init__(self, limit: int | None) -> None:
        self.values: defaultdict[Key, list[int]] = defaultdict(list)
        self.spans: defaultdict[Key, list[Interval]] = defaultdict(list)
        self.words: set[str] = set()
        self.budget = Budget(limit, "names or prefixes")

    def add_text(self, text: str) -> None:
        items = parse(text)
        if "[" not in text:
            self.add_names(items)  # type: ignore[arg-type]
            return
        names = [item for item in items if isinstance(item, str)]
        self.add_names(names)
        for item in items:
            if isinstance(item, Pattern):
                self.add_pattern(item, text)

    def add_names(self, names: list[str]) -> None:
        """Bulk path for plain names: the per-name work is C-level ``map`` calls."""
        if not names:
            return
        prefixes, digits, padded = split_numbers(names)
        if "" in digits:
            for name in compress(names, map(str.__eq__, digits, repeat(""))):
                self._add_odd(name)
            keep = list(map(bool, digits))
            prefixes, digits = list(compress(prefixes, keep)), list(compress(digits, keep))
            if not digits:
                return
        try:
            values = list(map(int, digits))
        except ValueError:  # only past Python's int() digit limit
            raise number_too_long(max(digits, key=len)) from None
        if padded:
            pads = [len(d) if len(d) > 1 and d[0] == "0" else 0 for d in digits]
            for prefix, pad, value in zip(prefixes, pads, values, strict=True):
                self.values[(prefix, "", pad)].append(value)
        elif prefixes.count(prefixes[0]) == len(prefixes):
            self.values[(prefixes[0], "", 0)].extend(values)
        else:
            groups: defaultdict[str, list[int]] = defaultdict(list)
            for prefix, value in zip(prefixes, values, strict=True):
                groups[prefix].append(value)
            for prefix, group in groups.items():
                self.values[(prefix, "", 0)].extend(group)

    def _add_odd(self, name: str) -> None:
        found = classify(name)
        if found is None:
            self.words.add(name)
        else:
            self.values[found[0]].append(found[1])

    def add_pattern(self, pattern: Pattern, text: str) -> None:
        literals, fields = pattern.literals, pattern.fields
        tail = literals[-1]
        if any(c in DIGITS for c in tail):
            # The bracket is not the last number of the name: list the names.
            self.budget.spend(pattern.count(), pattern, text)
            self.add_names([name for chunk in pattern_chunks(pattern) for name in chunk])
            return
        self.budget.spend_heads(pattern, text)
        for head in heads(pattern):
            self._add_last_field(head, fields[-1], tail, pattern, text)

    def _add_last_field(
        self, head: str, field: tuple[Span, ...], tail: str, pattern: Pattern, text: str
    ) -> None:
        for span in field:
            if span.step != 1:
                self.budget.spend(span.size(), pattern, text)
                self.add_names(list(span_names(head, span, tail)))
                continue
            for key, lo, hi in span_pieces(head, span, tail):
                self.spans[key].append((lo, hi))

    def build(self) -> tuple[dict[Key, list[Interval]], frozenset[str]]:
        ranges: dict[Key, list[Interval]] = {}
        for key in self.values.keys() | self.spans.keys():
            intervals = from_values(self.values.get(key, ()))
            extra = self.spans.get(key)
            ranges[key] = normalize(intervals + extra) if extra else intervals
        return ranges, frozenset(self.words)
