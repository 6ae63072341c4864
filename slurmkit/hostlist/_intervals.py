"""Sorted lists of disjoint, non-touching closed integer intervals, and set algebra on them.

This is what keeps ``difference("n[1-10000000]", "n[5-6]")`` at a handful
of tuples: every operation walks the two lists once.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

Interval = tuple[int, int]


def from_values(values: Iterable[int]) -> list[Interval]:
    """Runs of consecutive values; duplicates and order do not matter."""
    ordered = sorted(set(values))
    if not ordered:
        return []
    if ordered[-1] - ordered[0] == len(ordered) - 1:
        return [(ordered[0], ordered[-1])]
    out: list[Interval] = []
    lo = prev = ordered[0]
    for value in ordered:
        if value > prev + 1:
            out.append((lo, prev))
            lo = value
        prev = value
    out.append((lo, prev))
    return out


def normalize(intervals: Iterable[Interval]) -> list[Interval]:
    """Sort and merge overlapping or touching intervals."""
    out: list[Interval] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def union(a: list[Interval], b: list[Interval]) -> list[Interval]:
    if not a or not b:
        return list(a or b)
    return normalize(a + b)


def difference(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """Parts of ``a`` not in ``b``; each overlapping pair is visited once."""
    out: list[Interval] = []
    j, nb = 0, len(b)
    for lo, hi in a:
        while j < nb and b[j][1] < lo:
            j += 1
        cur, k = lo, j
        while k < nb and b[k][0] <= hi:
            blo, bhi = b[k]
            if blo > cur:
                out.append((cur, blo - 1))
            cur = max(cur, bhi + 1)
            if bhi > hi:
                break
            k += 1
        if cur <= hi:
            out.append((cur, hi))
    return out


def intersection(a: list[Interval], b: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def size(intervals: list[Interval]) -> int:
    return sum(hi - lo for lo, hi in intervals) + len(intervals)


def contains(intervals: list[Interval], value: int) -> bool:
    i = bisect_right(intervals, (value, float("inf"))) - 1
    return i >= 0 and intervals[i][0] <= value <= intervals[i][1]
