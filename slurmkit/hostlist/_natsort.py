"""Slurm's sort order for hostlists, as a key function.

``scontrol show hostlistsorted`` orders ranges by ``strnatcmp`` of their
prefix (Martin Pool's natural compare), names without a numeric suffix
before ranges of the same prefix, then by the zero-padding class and value.
``strnatcmp`` compares digit runs numerically unless either run starts with
``0``, in which case it compares them character by character; for
whitespace-free ASCII strings that is exactly the tuple order of
:func:`natkey`, which lets Python sort without a comparison function.
"""

from __future__ import annotations

import re

_RUNS = re.compile(r"[0-9]+|[^0-9]")
_ZERO = ord("0")


def natkey(text: str) -> tuple[tuple[int | str, ...], ...]:
    """Sort key equal in order to Slurm's ``strnatcmp`` for ASCII names.

    A digit run starting with ``0`` sorts before any other digit run and
    among such runs as a string; other runs sort by length, then digits.
    A non-digit character sorts against a digit run by its code, like C.
    """
    key: list[tuple[int | str, ...]] = []
    for run in _RUNS.findall(text):
        first = run[0]
        if "0" <= first <= "9":
            key.append((_ZERO, 0, run) if first == "0" else (_ZERO, 1, len(run), run))
        else:
            key.append((ord(first),))
    return tuple(key)


def number_class_key(pad: int, lo: int) -> tuple[int, int, int]:
    """Order of ranges sharing a prefix: padded width-W ones sit just before unpadded W-digit ones.

    This is what Slurm's ``hostrange_cmp`` yields once its pairwise width
    compatibility test is worked out: a padded range (``07``, width 2) sorts
    after every unpadded number shorter than its width and before the rest.
    """
    if pad:
        return (pad, 0, lo)
    return (len(str(lo)), 1, lo)
