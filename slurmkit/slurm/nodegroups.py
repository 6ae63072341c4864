"""The nodes of a node group (``@partition:gpu``, ``@state:drain`` ...): one Slurm call each.

:mod:`slurmkit.nodesel` parses node selections and asks this module for the
members of each group; here is only "which Slurm call answers which group, and
what its answer means". Each function runs exactly one Slurm command, whatever
the number of nodes, and returns names or a hostlist the caller folds.

Unknown names are refused with a message a user recognises ("no such
partition 'nope'"), never an empty list: an empty answer would make the caller
act on nothing at best and, where a missing list means "every node", on the
whole cluster at worst.
"""

from __future__ import annotations

from slurmkit.errors import NotFound, SlurmError, UsageError
from slurmkit.slurm import _exec, query
from slurmkit.slurm.parse_records import parse_kv
from slurmkit.slurm.parse_text import parse_names

_NO_VALUE = "(null)"


def every_node_argv(fmt: str) -> list[str]:
    """``sinfo`` asked about every node, one line each in ``fmt`` (once per partition).

    The one spelling of "every node" for node groups and for completion
    (:mod:`slurmkit.slurm.quick`), so TAB offers exactly the names and features
    that ``@all`` and ``@feature:`` resolve: ``--all`` counts hidden partitions too.
    """
    return ["sinfo", "--all", "--noheader", "--Node", f"--format={fmt}"]


def all_nodes_argv() -> list[str]:
    return every_node_argv("%N")


def features_argv() -> list[str]:
    # The features column has no spaces in it (Slurm feature names are words,
    # comma-separated), and node names have none either: one space is a safe separator.
    return every_node_argv("%N %f")


def reservation_argv(name: str) -> list[str]:
    return ["scontrol", "show", "reservation", name]


def partition_nodes(name: str) -> str:
    """The hostlist of partition ``name`` (``scontrol show partition NAME``, or pyslurm)."""
    try:
        return query.partition_nodelist(name)
    except NotFound:
        raise NotFound(f"no such partition {name!r}", query.partitions_argv(name)) from None


def state_nodes(state: str) -> list[str]:
    """Nodes in a state as ``sinfo -t`` spells it (``drain``, ``idle,mix``, ``down``...).

    sinfo matches the state, so every word it knows works; a word it does not
    know is a usage error naming sinfo's own list of states.
    """
    try:
        return query.nodes_in_state(state)
    except SlurmError as exc:
        if "state" in str(exc).lower():
            raise UsageError(f"no such node state {state!r} ({_valid_states(exc)})") from None
        raise


def _valid_states(exc: SlurmError) -> str:
    for line in (exc.stderr or "").splitlines():
        if "valid states" in line:
            return line.split("error:", 1)[-1].strip()
    return "see sinfo --help for the states"


def job_nodes(job_id: str) -> str:
    """The hostlist of a job (all running tasks of an array id); a pending job is an error."""
    return query.job_nodelist(job_id)


def reservation_nodes(name: str) -> str:
    """The hostlist of reservation ``name`` (``scontrol show reservation NAME``).

    scontrol says "Reservation NAME not found" (exit 1), which the Slurm
    layer's classifier does not know as a not-found message: read it here.
    """
    argv = reservation_argv(name)
    result = _exec.run_slurm(argv, check=False)
    text = result.stdout + result.stderr
    if "not found" in text.lower() or "no reservations" in text.lower():
        raise NotFound(f"no such reservation {name!r}", argv, result.returncode, result.stderr)
    if _exec.failed(result):
        raise _exec.classify(result)
    return parse_reservation_nodes(result.stdout, name)


def parse_reservation_nodes(text: str, name: str) -> str:
    """``Nodes=`` of the record named ``name`` in ``scontrol show reservation`` output."""
    record: dict[str, str] = {}
    for line in text.splitlines():
        fields = parse_kv(line.strip())
        if "ReservationName" in fields:
            if record.get("ReservationName") == name:
                break
            record = {}
        record.update(fields)
    if record.get("ReservationName") != name:
        raise NotFound(f"no such reservation {name!r}", reservation_argv(name))
    nodes = record.get("Nodes", "")
    return "" if nodes == _NO_VALUE else nodes


def feature_nodes(feature: str) -> list[str]:
    """Nodes offering ``feature`` among their available features (one ``sinfo -N``)."""
    return parse_feature_nodes(_exec.run_slurm(features_argv()).stdout, feature)


def parse_feature_nodes(text: str, feature: str) -> list[str]:
    """Names whose feature list (``%f``: comma-separated, ``(null)`` for none) holds ``feature``."""
    found = (name for name, features in parse_node_features(text) if feature in features)
    return list(dict.fromkeys(found))


def parse_node_features(text: str) -> list[tuple[str, list[str]]]:
    """``(name, features)`` per line of :func:`features_argv`'s output; ``(null)`` is none."""
    rows: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        name, _, column = line.strip().partition(" ")
        if name:
            features = [f for f in column.strip().split(",") if f and f != _NO_VALUE]
            rows.append((name, features))
    return rows


def all_nodes() -> list[str]:
    """Every node in a partition, hidden ones included (``sinfo --all -N``)."""
    return parse_names(_exec.run_slurm(all_nodes_argv()).stdout)
