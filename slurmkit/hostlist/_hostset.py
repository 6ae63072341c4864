"""HostSet: a set of host names stored as ranges, with ClusterShell-style set methods.

``str(hostset)`` is the folded list exactly as ``scontrol show hostlistsorted``
prints it for the same (duplicate-free) names; ``iter(hostset)`` yields the
names in that order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from operator import itemgetter

from slurmkit.errors import HostlistParseError
from slurmkit.hostlist import DEFAULT_LIMIT
from slurmkit.hostlist import _intervals as iv
from slurmkit.hostlist._canonical import Builder, Key, classify
from slurmkit.hostlist._natsort import natkey, number_class_key
from slurmkit.hostlist._parse import amount

Block = tuple[int, int, int]  # (lo, hi, pad of lo)


def number(value: int, pad: int) -> str:
    return str(value).zfill(pad) if pad else str(value)


def block_text(block: Block) -> str:
    lo, hi, pad = block
    if pad:
        return number(lo, pad) if lo == hi else f"{number(lo, pad)}-{number(hi, pad)}"
    return str(lo) if lo == hi else f"{lo}-{hi}"


def merge_classes(classes: list[tuple[int, list[iv.Interval]]]) -> list[Block]:
    """Blocks of one prefix in Slurm's order, joining ``07-09`` to ``10-..`` as Slurm does."""
    if len(classes) == 1:  # one padding class: value order is Slurm's order, nothing to join
        pad, ranges = classes[0]
        return [(lo, hi, pad) for lo, hi in ranges]
    blocks = sorted(
        ((number_class_key(pad, lo), lo, hi, pad) for pad, ranges in classes for lo, hi in ranges),
        key=itemgetter(0),
    )
    merged: list[Block] = []
    for _, lo, hi, pad in blocks:
        if merged and not pad and merged[-1][2] and merged[-1][1] == lo - 1:
            merged[-1] = (merged[-1][0], hi, merged[-1][2])
        else:
            merged.append((lo, hi, pad))
    return merged


def bracketed(prefix: str, blocks: list[Block], suffix: str = "") -> str:
    if len(blocks) == 1 and blocks[0][0] == blocks[0][1]:
        return f"{prefix}{number(blocks[0][0], blocks[0][2])}{suffix}"
    if any(map(itemgetter(2), blocks)):
        parts = list(map(block_text, blocks))
    else:  # the common case, inlined: no call per block
        parts = [str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi, _ in blocks]
    return f"{prefix}[{','.join(parts)}]{suffix}"


def block_names(prefix: str, blocks: list[Block], suffix: str = "") -> Iterator[str]:
    head, tail = prefix.replace("%", "%%"), suffix.replace("%", "%%")
    for lo, hi, pad in blocks:
        yield from map(f"{head}%0{pad}d{tail}".__mod__, range(lo, hi + 1))


class HostSet:
    """An immutable set of host names, from hostlist text, an iterable of hostlists, or a HostSet.

    Ranges are never expanded to build or combine sets; ``limit`` only bounds
    what has to be listed name by name (outer bracket groups, step ranges,
    names with text after the number when printed Slurm-style).
    """

    __slots__ = ("_len", "_limit", "_ranges", "_words")

    def __init__(
        self,
        hosts: str | Iterable[str] | HostSet | None = None,
        *,
        limit: int | None = DEFAULT_LIMIT,
    ) -> None:
        self._limit = limit
        self._len: int | None = None
        if hosts is None:
            self._ranges: dict[Key, list[iv.Interval]] = {}
            self._words: frozenset[str] = frozenset()
        elif isinstance(hosts, HostSet):
            self._ranges, self._words = hosts._ranges, hosts._words
        else:
            builder = Builder(limit)
            for text in texts_of(hosts):
                builder.add_text(text)
            self._ranges, self._words = builder.build()

    @classmethod
    def _make(
        cls, ranges: dict[Key, list[iv.Interval]], words: frozenset[str], limit: int | None
    ) -> HostSet:
        new = cls(limit=limit)
        new._ranges = {key: value for key, value in ranges.items() if value}
        new._words = words
        return new

    def _coerce(self, other: str | Iterable[str] | HostSet) -> HostSet:
        return other if isinstance(other, HostSet) else HostSet(other, limit=self._limit)

    # -- set algebra, on ranges ------------------------------------------------

    def union(self, *others: str | Iterable[str] | HostSet) -> HostSet:
        ranges = dict(self._ranges)
        words = set(self._words)
        for other in map(self._coerce, others):
            for key, value in other._ranges.items():
                ranges[key] = iv.union(ranges.get(key, []), value)
            words |= other._words
        return HostSet._make(ranges, frozenset(words), self._limit)

    def intersection(self, *others: str | Iterable[str] | HostSet) -> HostSet:
        ranges, words = dict(self._ranges), set(self._words)
        for other in map(self._coerce, others):
            ranges = {
                key: iv.intersection(value, other._ranges[key])
                for key, value in ranges.items()
                if key in other._ranges
            }
            words &= other._words
        return HostSet._make(ranges, frozenset(words), self._limit)

    def difference(self, *others: str | Iterable[str] | HostSet) -> HostSet:
        ranges, words = dict(self._ranges), set(self._words)
        for other in map(self._coerce, others):
            for key, value in other._ranges.items():
                if key in ranges:
                    ranges[key] = iv.difference(ranges[key], value)
            words -= other._words
        return HostSet._make(ranges, frozenset(words), self._limit)

    def symmetric_difference(self, other: str | Iterable[str] | HostSet) -> HostSet:
        other = self._coerce(other)
        return self.difference(other).union(other.difference(self))

    def issubset(self, other: str | Iterable[str] | HostSet) -> bool:
        return not self.difference(other)

    def issuperset(self, other: str | Iterable[str] | HostSet) -> bool:
        return not self._coerce(other).difference(self)

    __or__ = union
    __and__ = intersection
    __sub__ = difference
    __xor__ = symmetric_difference

    # -- container protocol -------------------------------------------------------

    def __len__(self) -> int:
        """The number of names; past ``sys.maxsize`` Python refuses it, use :meth:`size`."""
        return self.size()

    def size(self) -> int:
        """The number of names, from the ranges; as large as it is (``n[1-10**30]``)."""
        if self._len is None:
            self._len = sum(map(iv.size, self._ranges.values())) + len(self._words)
        return self._len

    def __bool__(self) -> bool:
        return bool(self._ranges or self._words)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            found = classify(name)
        except HostlistParseError:
            return False
        if found is None:
            return name in self._words
        key, value = found
        return iv.contains(self._ranges.get(key, []), value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HostSet):
            return NotImplemented
        return self._ranges == other._ranges and self._words == other._words

    __hash__ = None  # type: ignore[assignment]

    def __iter__(self) -> Iterator[str]:
        for _, prefix, blocks in self._groups():
            if blocks is None:
                yield prefix
            else:
                yield from block_names(prefix, blocks)

    def __str__(self) -> str:
        return ",".join(
            prefix if blocks is None else bracketed(prefix, blocks)
            for _, prefix, blocks in self._groups()
        )

    def __repr__(self) -> str:
        return f"HostSet({str(self)!r})"

    # -- Slurm's sorted layout ----------------------------------------------------

    def _groups(self) -> list[tuple[object, str, list[Block] | None]]:
        """Prefix groups and single names in ``hostlistsorted`` order.

        Slurm treats a name with text after its number (``n1-ib``) as a single
        host, so those are listed one by one (bounded by ``limit``).
        """
        classes: dict[str, list[tuple[int, list[iv.Interval]]]] = {}
        singles: list[str] = list(self._words)
        for (prefix, suffix, pad), ranges in self._ranges.items():
            if suffix:
                singles.extend(self._listed(prefix, suffix, pad, ranges))
            else:
                classes.setdefault(prefix, []).append((pad, ranges))
        groups: list[tuple[object, str, list[Block] | None]] = [
            ((natkey(prefix), 1), prefix, merge_classes(found)) for prefix, found in classes.items()
        ]
        groups.extend(((natkey(name), 0), name, None) for name in singles)
        groups.sort(key=itemgetter(0))
        return groups

    def _listed(
        self, prefix: str, suffix: str, pad: int, ranges: list[iv.Interval]
    ) -> Iterator[str]:
        total = iv.size(ranges)
        if self._limit and total > self._limit:
            sample = f"{prefix}{number(ranges[0][0], pad)}{suffix}"
            raise HostlistParseError(
                f"too many names like {sample!r} to print one by one ({amount(total)}, limit "
                f"{self._limit}): Slurm has no syntax for text after a range"
            )
        return block_names(prefix, [(lo, hi, pad) for lo, hi in ranges], suffix)

    def ranges(self) -> dict[Key, list[iv.Interval]]:
        """The canonical form: ``(prefix, suffix, pad) -> intervals``; read-only by convention."""
        return self._ranges

    def words(self) -> frozenset[str]:
        """Names without any digit."""
        return self._words


def texts_of(hosts: str | Iterable[str]) -> Iterable[str]:
    """One text for plain names (so the bulk path sees them all at once), else each hostlist."""
    if isinstance(hosts, str):
        return (hosts,)
    texts = list(hosts)
    joined = "\n".join(texts)
    if "[" in joined or "]" in joined:
        return texts
    return [joined]
