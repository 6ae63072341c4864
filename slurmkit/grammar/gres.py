"""GRES strings, typed and untyped, and the GPU count read from them.

One item is ``name[:type][:count][(detail)]`` (``man slurm.conf``, Gres=; the
count may carry Slurm's K/M/G/T/P suffix, powers of 1024), or the TRES
spelling ``gres/name[:type]=count``. Slurm writes the same request several
ways depending on the version and the command:

- ``gpu:8``, ``gpu:a100:8``, bare ``gpu`` (count 1), ``gpu:a100`` (a type, count 1);
- ``gpu:a100:8(S:0-1)`` (a node's Gres= with socket binding),
  ``gpu:4(IDX:0-3)`` (``scontrol show job -d`` detail);
- ``gres:gpu:4`` (22.05's TresPerNode) and ``gres/gpu:4`` (23.02+);
- ``gres/gpu=4`` and ``gres/gpu:h100=4`` inside TRES lists
  (``cpu=8,mem=1000M,gres/gpu=4``).

Items are separated by commas outside parentheses (``gpu:2(IDX:0,2),mps:100``
has two). Whatever the spelling, :func:`gpu_count` gives the same number:
``gres/gpu:h100=4`` is 4 GPUs everywhere in slurmkit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from slurmkit.errors import SlurmParseError

_EMPTY = ("", "(null)", "N/A", "None")
_SUFFIX = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_COUNT = re.compile(r"(\d+)([KMGTP]?)", re.IGNORECASE)
# 2^64 has 20 digits; Python refuses to read a 5000-digit number (it was a traceback).
_MAX_DIGITS = 20
_ITEM = re.compile(
    r"(?P<name>[A-Za-z][\w./-]*)"
    r"(?P<fields>(?::[^:()=\s,]+)*)"
    r"(?:=(?P<value>[^()=\s,]+))?"
    r"(?:\((?P<detail>[^()]*)\))?"
)
# Flags Slurm accepts between the type and the count in a node's Gres= (slurm.conf).
_FLAGS = frozenset({"no_consume"})


@dataclass(frozen=True)
class GresItem:
    """One GRES: ``gpu:a100:8(S:0-1)`` is name gpu, type a100, count 8, detail ``S:0-1``.

    ``count`` is None for a TRES value that is not a whole count (``mem=1.5G``):
    such items are read, never counted.
    """

    name: str
    type: str | None = None
    count: int | None = 1
    detail: str | None = None
    tres: bool = False  # written ``name=count`` (a TRES list), not ``name:count``

    def __str__(self) -> str:
        """The colon spelling, without the ``gres:``/``gres/`` prefix."""
        text = self.name + (f":{self.type}" if self.type else "")
        text += f":{self.count}" if self.count is not None else ""
        return text + (f"({self.detail})" if self.detail is not None else "")

    @property
    def indices(self) -> str | None:
        """``0-3`` from ``gpu:4(IDX:0-3)``: which devices a job was given (None if not said)."""
        if self.detail is None:
            return None
        match = re.search(r"IDX:([^)]*)$", self.detail)
        return match.group(1) if match else None


def split_items(text: str) -> Iterator[str]:
    """Split on commas outside parentheses: ``gpu:2(IDX:0,2),mps:100`` has two items."""
    depth, start = 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise SlurmParseError(f"unbalanced parentheses in {text!r}")
        elif char == "," and depth == 0:
            yield text[start:i]
            start = i + 1
    if depth != 0:
        raise SlurmParseError(f"unbalanced parentheses in {text!r}")
    yield text[start:]


def _count(text: str) -> int | None:
    match = _COUNT.fullmatch(text)
    if not match:
        return None
    if len(match.group(1)) > _MAX_DIGITS:
        raise SlurmParseError(f"a GRES count of {len(match.group(1))} digits: {text[:30]!r}...")
    return int(match.group(1)) * _SUFFIX[match.group(2).upper()]


def parse_item(raw: str, whole: str | None = None) -> GresItem:
    """One item; raises :class:`SlurmParseError` naming ``whole`` (the full string) if malformed."""
    item = raw.strip()
    prefixed = item[:5].lower() in ("gres:", "gres/")
    if prefixed:
        item = item[5:]
    match = _ITEM.fullmatch(item)
    if not match:
        raise SlurmParseError(f"not a GRES string: {whole if whole is not None else raw!r}")
    fields = [f for f in match.group("fields").split(":") if f and f.lower() not in _FLAGS]
    value = match.group("value")
    if value is not None:
        count = _count(value)
        kind = fields[0] if fields else None
        return GresItem(match.group("name"), kind, count, match.group("detail"), tres=True)
    count = 1
    if fields and _count(fields[-1]) is not None:
        count = _count(fields.pop()) or 0
    kind = ":".join(fields) or None
    return GresItem(match.group("name"), kind, count, match.group("detail"))


def parse(text: str | None) -> tuple[GresItem, ...]:
    """Every item of a GRES or TRES string; ``""``, ``(null)`` and ``N/A`` have none."""
    text = (text or "").strip()
    if text in _EMPTY:
        return ()
    return tuple(parse_item(raw, text) for raw in split_items(text) if raw.strip())


def count(text: str | None, name: str = "gpu") -> int | None:
    """Units of GRES ``name`` in ``text``, summed over types; None when ``text`` names none.

    In a TRES list Slurm may print the total and each type side by side
    (``gres/gpu=4,gres/gpu:h100=4``, with typed TRES accounting): the untyped
    item is then the total, and the typed ones are not added to it.
    """
    items = [i for i in parse(text) if i.name == name and i.count is not None]
    if not items:
        return None
    untyped_tres = [i.count or 0 for i in items if i.tres and i.type is None]
    if untyped_tres:
        return sum(untyped_tres)
    return sum(i.count or 0 for i in items)


def gpu_count(text: str | None) -> int | None:
    """GPUs in a GRES or TRES string; None when it names no GPU at all.

    ``gpu:8``, ``gpu:a100:8(S:0-1)``, ``gres:gpu:8``, ``gres/gpu:8``,
    ``gres/gpu=8`` and ``gres/gpu:a100=8`` are all 8; ``gpu`` and ``gpu:a100``
    are 1; ``gpu:a100:4,gpu:v100:2`` is 6; ``gpu:0`` is 0 (asked for none),
    ``mps:100`` is None (no GPU named). Raises :class:`SlurmParseError` on
    text that is not a GRES string (``gpu::``, ``gpu:4(IDX:0``).
    """
    return count(text, "gpu")


def gpu_indices(text: str | None) -> str | None:
    """``0-3`` from ``gpu:4(IDX:0-3)``: the device ids a job holds; None when not said.

    Several GPU items (``gpu:h100:2(IDX:0,2),gpu:a100:1(IDX:3)``) give ``0,2,3``.
    """
    found = [i.indices for i in parse(text) if i.name == "gpu" and i.indices not in (None, "N/A")]
    return ",".join(x for x in found if x) or None


_TYPED_COUNT = re.compile(r"(?:([^:,()=\s]+):)?(\d{1,20})")


def typed_gpu_count(text: str) -> int:
    """GPUs in ``--gpus``/``SLURM_GPUS_PER_NODE`` form: ``4``, ``a100:4``, ``a100:2,v100:2`` -> sum.

    No GRES name here and the count is never implied, so ``a100`` alone is refused.
    """
    total = 0
    for part in text.strip().split(","):
        match = _TYPED_COUNT.fullmatch(part.strip())
        if not match:
            raise SlurmParseError(f"not a [type:]count list: {text!r}")
        total += int(match.group(2))
    return total


def normalize(text: str | None) -> str:
    """``gres:gpu:4`` (22.05) and ``gres/gpu:4`` (23.02+) both become ``gpu:4``.

    Forgiving on purpose: it only removes the version's prefix, so a value
    this module cannot parse is still shown to the user as Slurm printed it.
    """
    if not text or text.strip() in _EMPTY:
        return ""
    items = [re.sub(r"^gres[:/]", "", item.strip()) for item in text.split(",")]
    return ",".join(item for item in items if item)


def format_items(items: tuple[GresItem, ...] | list[GresItem]) -> str:
    """``items`` in the colon spelling, comma-joined; ``format_items(parse(x))`` canonicalises."""
    return ",".join(str(i) for i in items)
