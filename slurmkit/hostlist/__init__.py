"""Slurm hostlists without Slurm: expand, fold, count and set algebra on ranges.

    >>> from slurmkit.hostlist import expand, fold, count, HostSet
    >>> expand("rack[1-2]-n[01-02]")
    ['rack1-n01', 'rack1-n02', 'rack2-n01', 'rack2-n02']
    >>> fold(["n3", "n1", "n2", "n10"])
    'n[1-3,10]'
    >>> count("n[1-1000000000]")
    1000000000
    >>> str(HostSet("n[1-10000000]") - HostSet("n[5-6]"))
    'n[1-4,7-10000000]'

The behaviour is Slurm 22.05's (``scontrol show hostnames``,
``hostlistsorted``, ``hostlist``), checked against it by a property test, with
three deliberate differences: malformed input is an error with a position
instead of a guess; numbers past 2**64 stay exact instead of being clamped;
and text after the last bracket (``n[1-2]-ib``) and step ranges
(``n[1-9/2]``) are accepted, as in ClusterShell.

This package imports nothing outside the standard library,
:mod:`slurmkit.errors` and :mod:`slurmkit._lazy` (standard library only).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeAlias

from slurmkit import _lazy
from slurmkit.errors import HostlistParseError

if TYPE_CHECKING:
    from slurmkit.hostlist._expand import count, expand, iter_expand
    from slurmkit.hostlist._hostset import HostSet

    Hosts: TypeAlias = str | Iterable[str] | HostSet

DEFAULT_LIMIT = 1_000_000

# Loaded on first use (PEP 562): ``slurmkit nodes expand`` only pays for the parser.
_LAZY = {
    "count": "_expand",
    "expand": "_expand",
    "iter_expand": "_expand",
    "HostSet": "_hostset",
}


__getattr__ = _lazy.attributes(__name__, _LAZY)


__all__ = [
    "DEFAULT_LIMIT",
    "HostSet",
    "HostlistParseError",
    "count",
    "difference",
    "expand",
    "fold",
    "intersection",
    "iter_expand",
    "symmetric_difference",
    "targets",
    "union",
]


def fold(
    hosts: str | Iterable[str],
    sort: bool = True,
    *,
    multi_dim: bool = False,
    limit: int | None = DEFAULT_LIMIT,
) -> str:
    """Fold names (or hostlists) into one hostlist.

    ``sort=True`` de-duplicates and matches ``scontrol show hostlistsorted``;
    ``sort=False`` keeps order and duplicates, like ``scontrol show hostlist``,
    so that ``expand(fold(x, sort=False)) == expand(x)``. ``multi_dim`` also
    folds numbers that are not the last one (``rack[1-2]-n[1-4]``); its output
    may use text after a bracket, which only slurmkit/ClusterShell read back.
    """
    from slurmkit.hostlist._hostset import HostSet

    if not sort:
        if multi_dim:
            raise ValueError("multi-dimensional folding always sorts")
        from slurmkit.hostlist._fold import fold_in_order

        return fold_in_order(hosts, limit)
    hostset = HostSet(hosts, limit=limit)
    if multi_dim:
        from slurmkit.hostlist._fold import fold_multi

        return fold_multi(hostset)
    return str(hostset)


def targets(text: str, *, what: str, limit: int | None = DEFAULT_LIMIT) -> HostSet:
    """The nodes a command is told to act on: the one parse every acting command uses.

    An empty list (``""``, ``" "``, ``","``) is an error here, never "no limit":
    callers treat a missing node list as "every node", so an empty one that slipped
    through as falsy would widen the action to the whole cluster. ``what`` names
    the option in the message (``--nodes``). Ranges stay unexpanded.
    """
    from slurmkit.hostlist._hostset import HostSet

    empty = HostlistParseError(f"{what}: {text!r} names no node (an empty list is refused)")
    if not text.replace(",", " ").split():
        raise empty
    try:
        hosts = HostSet(text, limit=limit)
    except HostlistParseError as exc:
        raise HostlistParseError(f"{what}: {exc}") from None
    if not hosts:
        raise empty
    return hosts


def union(*hosts: Hosts, limit: int | None = DEFAULT_LIMIT) -> HostSet:
    from slurmkit.hostlist._hostset import HostSet

    return HostSet(None, limit=limit).union(*hosts)


def intersection(first: Hosts, *others: Hosts, limit: int | None = DEFAULT_LIMIT) -> HostSet:
    return _as_hostset(first, limit).intersection(*others)


def difference(first: Hosts, *others: Hosts, limit: int | None = DEFAULT_LIMIT) -> HostSet:
    return _as_hostset(first, limit).difference(*others)


def symmetric_difference(first: Hosts, second: Hosts, limit: int | None = DEFAULT_LIMIT) -> HostSet:
    return _as_hostset(first, limit).symmetric_difference(second)


def _as_hostset(hosts: Hosts, limit: int | None) -> HostSet:
    from slurmkit.hostlist._hostset import HostSet

    return hosts if isinstance(hosts, HostSet) else HostSet(hosts, limit=limit)
