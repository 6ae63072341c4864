"""Node selections: hostlists that may name node groups, minus an exclude list.

A node list anywhere in slurmkit may mix literal hostlists with node groups that
Slurm resolves, as ClusterShell's ``clush -w @slurmpart:gpu -x @slurmstate:drained``
does::

    @partition:gpu,login-1      the gpu partition's nodes, and login-1
    @state:drain                nodes in a state, as ``sinfo -t`` spells it
    @job:1234  @reservation:maint  @feature:ib  @all

Each distinct group costs exactly one Slurm call (:mod:`slurmkit.slurm.nodegroups`),
never one per node, and a list without ``@`` never touches Slurm, so ``nodes
expand`` stays usable where there is no Slurm at all.

The rules that keep selections safe (a missing list means "every node" in some
commands, so an empty one must never slip through as falsy):

* an unknown kind (``@rack:3``) is a usage error listing the kinds;
* a group in the include list that resolves to no node is the empty-list error,
  even beside literal names: the user meant those nodes and there are none;
* in the exclude list an empty group removes nothing (``-x @state:drain`` on a
  cluster with nothing drained is the normal case, not a mistake);
* an exclude list that removes every node is the empty-list error.

Everything is resolved before the caller acts, so bad input means nothing acts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from slurmkit import hostlist
from slurmkit.errors import HostlistParseError, NotFound, SlurmError, UsageError

if TYPE_CHECKING:
    from slurmkit.hostlist import HostSet

# Each kind and what follows its colon; "all" takes nothing.
KINDS: dict[str, str] = {
    "partition": "NAME",
    "state": "STATE",
    "job": "ID",
    "reservation": "NAME",
    "feature": "NAME",
    "all": "",
}
KINDS_TEXT = ", ".join(f"@{kind}:{arg}" if arg else f"@{kind}" for kind, arg in KINDS.items())


@dataclass(frozen=True)
class Group:
    """One ``@kind:value`` item of a node list."""

    kind: str
    value: str = ""

    def __str__(self) -> str:
        return f"@{self.kind}:{self.value}" if self.value else f"@{self.kind}"


Item = str | Group
Lookup = Callable[[Group], "str | Iterable[str]"]


def has_groups(text: str | None) -> bool:
    """True when ``text`` names a node group (cheap: no parse when there is no ``@``)."""
    return text is not None and "@" in text and any(isinstance(i, Group) for i in parse(text))


def split_items(text: str) -> list[str]:
    """The comma- or whitespace-separated items of a node list; commas inside brackets stay.

    Unlike hostlist's strict tokenizer it never raises: a bad item stays whole for it to report.
    """
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
        if depth == 0 and (char == "," or char.isspace()):
            if current:
                items.append("".join(current))
            current = []
            continue
        current.append(char)
    if current:
        items.append("".join(current))
    return items


def parse_group(item: str) -> Group:
    """``@kind:value`` (or ``@all``) as a :class:`Group`; a usage error names the kinds."""
    kind, colon, value = item[1:].partition(":")
    if kind not in KINDS:
        raise UsageError(f"unknown node group {item!r}: the kinds are {KINDS_TEXT}")
    if KINDS[kind] and not value:
        raise UsageError(f"node group {item!r} needs a {KINDS[kind]}: @{kind}:{KINDS[kind]}")
    if not KINDS[kind] and colon:
        raise UsageError(f"node group {item!r} takes no value: write @{kind}")
    return Group(kind, value)


def parse(text: str) -> list[Item]:
    """The items of a node list, groups parsed; literal items are kept as text, in order."""
    return [parse_group(item) if item.startswith("@") else item for item in split_items(text)]


def slurm_lookup(group: Group) -> str | list[str]:
    """The members of ``group`` from Slurm: one call (imported only when a group is used)."""
    from slurmkit.slurm import nodegroups

    answer: dict[str, Callable[[str], str | list[str]]] = {
        "partition": nodegroups.partition_nodes,
        "state": nodegroups.state_nodes,
        "job": nodegroups.job_nodes,
        "reservation": nodegroups.reservation_nodes,
        "feature": nodegroups.feature_nodes,
        "all": lambda _: nodegroups.all_nodes(),
    }
    return answer[group.kind](group.value)


@dataclass
class Resolver:
    """Resolves groups through ``lookup``, each distinct group once per resolver."""

    lookup: Lookup = slurm_lookup
    limit: int | None = hostlist.DEFAULT_LIMIT
    _cache: dict[Group, str] = field(default_factory=dict)

    def members(self, group: Group) -> str:
        """The folded hostlist of ``group`` ("" when it has no node)."""
        if group not in self._cache:
            try:
                found = self.lookup(group)
            except SlurmError as exc:
                # One line naming the group: "nodes expand @partition:gpu" on a laptop
                # must say that the group, not the hostlist, needed Slurm.
                needs = "" if isinstance(exc, NotFound) else " needs Slurm"
                raise type(exc)(
                    f"node group {group}{needs}: {exc}", exc.argv, exc.returncode, exc.stderr
                ) from None
            except UsageError as exc:
                raise UsageError(f"node group {group}: {exc}") from None
            self._cache[group] = str(hostlist.HostSet(found, limit=self.limit))
        return self._cache[group]

    def check_literals(self, text: str) -> list[Item]:
        """The items of ``text``, each literal one parsed: a bad one is refused as typed.

        Run before any group is looked up, so the message quotes what the user wrote (not
        the list with its groups expanded) and a typo costs no Slurm call.
        """
        items = parse(text)
        for item in items:
            if isinstance(item, str):
                hostlist.HostSet(item, limit=self.limit)
        return items

    def substitute(self, text: str, *, empty_ok: bool = False) -> str:
        """``text`` with each group replaced by its members; literal items keep their order.

        Without ``empty_ok`` a group with no node is the empty-list error.
        """
        if "@" not in text:
            return text
        items = self.check_literals(text)
        out: list[str] = []
        for item in items:
            if isinstance(item, str):
                out.append(item)
                continue
            members = self.members(item)
            if not members and not empty_ok:
                raise HostlistParseError(
                    f"node group {item} names no node (an empty list is refused)"
                )
            if members:
                out.append(members)
        return ",".join(out)


@dataclass(frozen=True)
class Selection:
    """What a command was told to act on: ``-w/--nodelist`` (or NODES) and ``-x/--exclude``.

    ``what`` names the include option in messages.
    """

    include: str | None = None
    exclude: str | None = None
    what: str = "--nodelist"

    def resolve(self, resolver: Resolver | None = None) -> HostSet:
        """The sorted, deduplicated nodes; see :func:`resolve`."""
        if self.include is None:
            raise UsageError(f"no node list given ({self.what})")
        return resolve(self.include, self.exclude, what=self.what, resolver=resolver)


def resolve(
    include: str,
    exclude: str | None = None,
    *,
    what: str = "--nodelist",
    resolver: Resolver | None = None,
) -> HostSet:
    """The nodes of ``include`` minus those of ``exclude``, groups resolved: never empty.

    Raises the empty-list error (a usage error, exit 2) when ``include`` names no
    node, when one of its groups has none, or when ``exclude`` removes every node.
    """
    resolver = resolver or Resolver()
    if exclude and "@" in include:  # a typo in -x must cost no lookup of -w's groups
        try:
            resolver.check_literals(exclude)
        except HostlistParseError as exc:
            raise HostlistParseError(f"--exclude: {exc}") from None
    hosts = hostlist.targets(resolver.substitute(include), what=what, limit=resolver.limit)
    if not exclude:
        return hosts
    left = hosts.difference(excluded(exclude, resolver))
    if not left:
        raise HostlistParseError(
            f"{what} {include!r} minus --exclude {exclude!r} names no node "
            "(an empty list is refused)"
        )
    return left


def excluded(exclude: str, resolver: Resolver | None = None) -> HostSet:
    """The nodes of an exclude list (groups with no node remove nothing)."""
    resolver = resolver or Resolver()
    try:
        return hostlist.HostSet(resolver.substitute(exclude, empty_ok=True), limit=resolver.limit)
    except HostlistParseError as exc:
        raise HostlistParseError(f"--exclude: {exc}") from None


def without(names: Iterable[str], removed: HostSet) -> Iterator[str]:
    """``names`` in their order, duplicates kept, minus ``removed`` (hostfiles, ``expand``)."""
    return (name for name in names if name not in removed)
