"""``slurmkit nodes``: expand, fold, count and combine hostlists; list a job's or partition's nodes.

Job scripts call these once per step, so this module imports only click and
:mod:`slurmkit.hostlist` at load time; JSON output and the Slurm layer are
imported when used. The hostlist commands never need Slurm or a slurm.conf.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING

import click

from slurmkit import hostlist, nodesel, stderr
from slurmkit.cli._group import LazyGroup, exit_with
from slurmkit.cli._options import exclude_option, json_option
from slurmkit.errors import UsageError

if TYPE_CHECKING:
    from slurmkit.hostlist import HostSet

_CHUNK = 65536  # names per write when streaming an expansion
_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\0": "\0"}

_max_option = click.option(
    "--max",
    "limit",
    type=click.IntRange(min=0),
    default=hostlist.DEFAULT_LIMIT,
    show_default=True,
    metavar="N",
    help="Refuse a LIST that would be written out as more than N names (0: no limit). "
    "Counting and set operations work on ranges and do not list names.",
)
_json_option = json_option()
_exclude_option = exclude_option("Leave these names out of the result (a hostlist; groups too).")


@click.group(
    "nodes",
    cls=LazyGroup,
    invoke_without_command=True,
    lazy_subcommands={
        "drained": (
            "slurmkit.cli.drained:drained_command",
            "Drained, draining and down nodes with reason, who set it, when, and state.",
        )
    },
)
@click.option("--jobid", metavar="ID", help="Nodes allocated to this job.")
@click.option("--partition", metavar="NAME", help="Nodes of this partition.")
@click.option("--state", metavar="STATE", help="Nodes in this state (idle, drain, down, mix...).")
@click.option("--expand", "expand_names", is_flag=True, help="One name per line, not folded.")
@_json_option
@click.pass_context
def nodes_group(
    ctx: click.Context,
    jobid: str | None,
    partition: str | None,
    state: str | None,
    expand_names: bool,
    as_json: bool,
) -> None:
    """Hostlists in Slurm's syntax, e.g. gpu[01-16],login1, and the nodes of a job or partition.

    With --jobid, --partition or --state, print those nodes folded (several
    options: the nodes matching all of them). LIST arguments may be hostlists;
    '-' reads one from stdin (names separated by commas or whitespace).
    """
    chosen = [
        flag
        for flag, value in (("--jobid", jobid), ("--partition", partition), ("--state", state))
        if value is not None
    ]
    extras = [flag for flag, on in (("--expand", expand_names), ("--json", as_json)) if on]
    if ctx.invoked_subcommand is not None:
        if chosen or extras:
            raise UsageError(f"{', '.join(chosen + extras)} cannot be used with a subcommand")
        return
    if not chosen:
        if extras:
            raise UsageError(f"{', '.join(extras)} needs --jobid, --partition or --state")
        click.echo(ctx.get_help())
        return
    nodes = _query_nodes(jobid, partition, state)
    if not nodes:
        stderr.say("no nodes match")
        exit_with(1)
    if expand_names:
        _print_names(list(nodes), as_json)
    else:
        _print_set(nodes, as_json)


def _query_nodes(jobid: str | None, partition: str | None, state: str | None) -> HostSet:
    """Ask Slurm (one call per option given) and intersect the answers."""
    from slurmkit.slurm import query

    found: list[HostSet] = []
    if jobid is not None:
        found.append(hostlist.HostSet(query.job_nodelist(jobid)))
    if partition is not None:
        found.append(hostlist.HostSet(query.partition_nodelist(partition)))
    if state is not None:
        found.append(hostlist.HostSet(query.nodes_in_state(state)))
    return found[0].intersection(*found[1:])


@nodes_group.command("expand")
@click.argument("hostlists", nargs=-1, required=True, metavar="LIST...")
@click.option(
    "--sep",
    default="\\n",
    show_default=True,
    help=r"Separator between names; \n, \t and \0 are understood.",
)
@_max_option
@_exclude_option
@_json_option
def expand_command(
    hostlists: tuple[str, ...], sep: str, limit: int, exclude: str | None, as_json: bool
) -> None:
    """Print every name of each LIST in Slurm's order, duplicates kept (scontrol show hostnames)."""
    # Build every iterator first: a bad LIST fails before anything is printed.
    resolver = _resolver(limit)
    texts = _read_args(hostlists, resolver)
    names = [hostlist.iter_expand(text, limit=limit or None) for text in texts]
    if exclude is not None:
        removed = nodesel.excluded(exclude, resolver)
        names = [nodesel.without(chunk, removed) for chunk in names]
    if as_json:
        _print_json([name for chunk in names for name in chunk])
        return
    _stream(names, _unescape(sep))


@nodes_group.command("fold")
@click.argument("names", nargs=-1, required=True, metavar="NAMES...")
@click.option(
    "--keep-order",
    is_flag=True,
    help="Keep input order and duplicates (scontrol show hostlist); default: sorted, unique.",
)
@click.option(
    "--multi-dim",
    is_flag=True,
    help="Also fold numbers before the last one: rack[1-2]-n[01-04]. Output may use text "
    "after a bracket, which Slurm 22.05 cannot read back.",
)
@_max_option
@_exclude_option
@_json_option
def fold_command(
    names: tuple[str, ...],
    keep_order: bool,
    multi_dim: bool,
    limit: int,
    exclude: str | None,
    as_json: bool,
) -> None:
    """Fold NAMES (names or hostlists) into one hostlist, like scontrol show hostlistsorted."""
    if keep_order and multi_dim:
        raise UsageError("--keep-order and --multi-dim cannot be combined")
    resolver = _resolver(limit)
    texts = _read_args(names, resolver)
    if exclude is not None:
        removed = nodesel.excluded(exclude, resolver)
        if keep_order:
            texts = list(nodesel.without(_expanded(texts, limit), removed))
        else:
            texts = [str(hostlist.HostSet(texts, limit=limit or None).difference(removed))]
    folded = hostlist.fold(texts, sort=not keep_order, multi_dim=multi_dim, limit=limit or None)
    if as_json:
        _print_json({"nodes": folded, "count": _printable_count(hostlist.count(folded))})
    elif folded:
        click.echo(folded)


@nodes_group.command("count")
@click.argument("hostlists", nargs=-1, required=True, metavar="LIST...")
@click.option("--unique", is_flag=True, help="Count distinct names (default counts duplicates).")
@_max_option
@_exclude_option
@_json_option
def count_command(
    hostlists: tuple[str, ...], unique: bool, limit: int, exclude: str | None, as_json: bool
) -> None:
    """Print how many names the LISTs hold, computed from the ranges (nothing is expanded).

    With -x and without --unique the names are expanded (up to --max) to keep duplicates.
    """
    resolver = _resolver(limit)
    texts = _read_args(hostlists, resolver)
    removed = None if exclude is None else nodesel.excluded(exclude, resolver)
    if unique:
        hosts = hostlist.HostSet(texts, limit=limit or None)
        total = (hosts if removed is None else hosts.difference(removed)).size()
    elif removed is None:
        total = sum(map(hostlist.count, texts))
    else:
        total = sum(1 for _ in nodesel.without(_expanded(texts, limit), removed))
    if as_json:
        _print_json({"count": _printable_count(total)})
    else:
        click.echo(str(_printable_count(total)))


def _set_command(name: str, nargs: int, metavar: str, operation: Callable[..., HostSet]) -> None:
    """Register one set operation; all of them print the folded result (or JSON with its size)."""

    @nodes_group.command(name, help=operation.__doc__)
    @click.argument("hostlists", nargs=nargs, required=True, metavar=metavar)
    @_max_option
    @_exclude_option
    @_json_option
    def command(hostlists: tuple[str, ...], limit: int, exclude: str | None, as_json: bool) -> None:
        resolver = _resolver(limit)
        texts = _read_args(hostlists, resolver)
        result = operation(*[hostlist.HostSet(text, limit=limit or None) for text in texts])
        if exclude is not None:
            result = result.difference(nodesel.excluded(exclude, resolver))
        _print_set(result, as_json)


def _difference(first: HostSet, *others: HostSet) -> HostSet:
    """Print the names of A that are in none of the other LISTs."""
    return first.difference(*others)


def _union(first: HostSet, *others: HostSet) -> HostSet:
    """Print the names in any of the LISTs."""
    return first.union(*others)


def _intersection(first: HostSet, *others: HostSet) -> HostSet:
    """Print the names in every LIST."""
    return first.intersection(*others)


def _symmetric_difference(first: HostSet, second: HostSet) -> HostSet:
    """Print the names in exactly one of A and B."""
    return first.symmetric_difference(second)


_set_command("diff", -1, "A B...", _difference)
_set_command("union", -1, "A B...", _union)
_set_command("intersect", -1, "A B...", _intersection)
_set_command("xor", 2, "A B", _symmetric_difference)


# -- input and output -------------------------------------------------------------


def _read_args(args: Iterable[str], resolver: nodesel.Resolver) -> list[str]:
    """The texts of the arguments, '-' replaced by stdin (allowed once), node groups
    replaced by their nodes (one Slurm call per group; none when no group is named)."""
    args = list(args)
    if args.count("-") > 1:
        raise UsageError("'-' (stdin) can be given only once")
    blank = next((arg for arg in args if not arg.strip()), None)
    if blank is not None:  # as ',' is: a list that names nothing is a mistake, not "none"
        raise UsageError(f"{blank!r} names no node (an empty list is refused)")
    return [resolver.substitute(_stdin_text() if arg == "-" else arg) for arg in args]


def _resolver(limit: int) -> nodesel.Resolver:
    return nodesel.Resolver(limit=limit or None)


def _expanded(texts: Iterable[str], limit: int) -> Iterator[str]:
    for text in texts:
        yield from hostlist.iter_expand(text, limit=limit or None)


def _stdin_text() -> str:
    """stdin as text; bytes that are not UTF-8 are kept as Python keeps them in argv.

    A strict decode raised UnicodeDecodeError on one stray byte; with
    ``surrogateescape`` such a name is an ordinary (odd) host name, written back
    out byte for byte.
    """
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        return sys.stdin.read()
    return stream.read().decode("utf-8", "surrogateescape")


def _unescape(sep: str) -> str:
    for escape, char in _ESCAPES.items():
        sep = sep.replace(escape, char)
    return sep


def _stream(iterators: list[Iterator[str]], sep: str) -> None:
    """Write names in chunks so that a million names never sit in one string; quiet on EPIPE."""
    wrote = False
    try:
        for names in iterators:
            while chunk := list(islice(names, _CHUNK)):
                click.echo((sep if wrote else "") + sep.join(chunk), nl=False)
                wrote = True
        if wrote:
            click.echo()
    except BrokenPipeError:  # `| head`: stop quietly, like other Unix filters
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        exit_with(0)


def _print_names(names: list[str], as_json: bool) -> None:
    if as_json:
        _print_json(names)
    else:
        _stream([iter(names)], "\n")


def _printable_count(total: int) -> int:
    """``total``, or one usage error when Python cannot print it.

    Counting needs no limit (``n[1-10**30]`` is one range), but a list of 20,000
    bracket groups holds 2**20000 names, a number past Python's int-to-text limit
    (``sys.get_int_max_str_digits``, 4300 digits); raising that limit for the whole
    process would undo Python's guard against slow conversions.
    """
    try:
        str(total)
    except ValueError:
        raise UsageError(
            f"the count has more than {sys.get_int_max_str_digits()} digits "
            f"(about 10^{int(total.bit_length() * 0.30103)}), more than can be printed"
        ) from None
    return total


def _print_set(hosts: HostSet, as_json: bool) -> None:
    if as_json:
        _print_json({"nodes": str(hosts), "count": _printable_count(hosts.size())})
    elif hosts:
        click.echo(str(hosts))


def _print_json(data: object) -> None:
    from slurmkit.cli._output import print_json

    print_json(data)
