"""Parsers for ``scontrol show node|job|partition``: ``key=value`` records.

The other grammar of Slurm's text output, beside :mod:`.parse_text`'s delimited
columns; the value words both read (times, counts, ``(null)``) are parsed by
:mod:`.parse_text`'s value helpers, so a record and a row agree on every value.
scontrol cannot be asked for a separator: a key is a word followed by ``=`` after
whitespace, and the few fields whose values may hold spaces or ``=`` (a job's name,
paths and comments; a node's reason) are glued to the end of their line or up to
a known next key. A node's reason may span lines; only the multi-line form (no
``--oneliner``) keeps it whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime

from slurmkit.errors import SlurmParseError
from slurmkit.grammar import gres as gres_grammar
from slurmkit.grammar import timelimit
from slurmkit.slurm.parse_text import (
    parse_exit_code,
    parse_float,
    parse_int,
    parse_time,
    parse_user,
    parse_words,
    text_or_none,
    time_left_of,
)
from slurmkit.slurm.records import (
    HELD_REASONS,
    GresAlloc,
    Job,
    Node,
    Partition,
    job_state,
    node_state,
    plausible_end,
)

_KEY = re.compile(r"(?:(?<=\s)|^)([A-Za-z][A-Za-z0-9_:/]*)=")
# Keys whose values may contain spaces or '=': they run to the end of their
# line (job fields scontrol prints last on a line) or up to a known next key.
_TO_END: frozenset[str] = frozenset()
_JOB_GLUE = {
    key: _TO_END
    for key in (
        "JobName",
        "Command",
        "WorkDir",
        "StdErr",
        "StdIn",
        "StdOut",
        "Comment",
        "AdminComment",
        "SystemComment",
    )
}
_NODE_GLUE = {
    "Reason": frozenset({"Comment", "Extra", "InstanceId", "InstanceType", "ReservationName"})
}
_NOTHING = re.compile(r"^No \w+ in the system$")


def parse_kv(line: str, glue: Mapping[str, frozenset[str]] | None = None) -> dict[str, str]:
    """``A=1 B=two words C=x=y`` -> ``{"A": "1", "B": "two words", "C": "x=y"}``.

    A key is a word followed by ``=`` after whitespace; ``glue`` names keys
    whose value swallows later ``word=`` text until one of the given stop keys
    (an empty set: to the end of the line).
    """
    bounds: list[re.Match[str]] = []
    stops: frozenset[str] | None = None
    for match in _KEY.finditer(line):
        key = match.group(1)
        if stops is not None and key not in stops:
            continue
        bounds.append(match)
        stops = glue.get(key) if glue else None
    values: dict[str, str] = {}
    for match, following in zip(bounds, [*bounds[1:], None], strict=False):
        end = following.start() if following else len(line)
        values[match.group(1)] = line[match.end() : end].strip()
    return values


def _blocks(text: str, lead: str, what: str) -> Iterator[list[str]]:
    """Records of ``scontrol show``: one per line (``--oneliner``) or indented blocks."""
    block: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith(f"{lead}="):
            if block:
                yield block
            block = [line]
        elif block and line[:1].isspace():
            block.append(line)
        elif not _NOTHING.match(line.strip()):
            raise SlurmParseError(f"{what}: unexpected line {line.strip()[:120]!r}")
    if block:
        yield block


def _merge_lines(lines: Sequence[str], glue: Mapping[str, frozenset[str]]) -> dict[str, str]:
    values: dict[str, str] = {}
    last_key = None
    for line in lines:
        pairs = parse_kv(line, glue)
        if not pairs and last_key:
            values[last_key] += "\n" + line.strip()  # continued multi-line Reason
            continue
        values.update(pairs)
        last_key = next(reversed(pairs), last_key)
    return values


def split_node_reason(text: str | None) -> tuple[str | None, str | None, datetime | None]:
    """``Kill task failed [root@2026-11-21T00:04:10]`` -> reason, user, time."""
    reason = text_or_none(text)
    if reason is None:
        return None, None, None
    first, newline, rest = reason.partition("\n")
    match = re.fullmatch(r"(.*?)\s*\[([^\]@]*)@([^\]]*)\]", first.strip())
    if not match:
        return reason, None, None
    return match.group(1) + newline + rest, match.group(2) or None, parse_time(match.group(3))


def _node_from_kv(kv: Mapping[str, str]) -> Node:
    base, flags = node_state([kv.get("State", "UNKNOWN")])
    reason, user, when = split_node_reason(kv.get("Reason"))
    return Node(
        name=kv["NodeName"],
        state=base,
        flags=flags,
        cpus=parse_int(kv.get("CPUTot")),
        cpus_alloc=parse_int(kv.get("CPUAlloc")),
        cpu_load=parse_float(kv.get("CPULoad")),
        real_memory=parse_int(kv.get("RealMemory")),
        alloc_memory=parse_int(kv.get("AllocMem")),
        free_memory=parse_int(kv.get("FreeMem")),
        gres=text_or_none(kv.get("Gres")) or "",
        gres_used=text_or_none(kv.get("GresUsed")) or "",
        partitions=parse_words(kv.get("Partitions")),
        features=parse_words(kv.get("AvailableFeatures")),
        active_features=parse_words(kv.get("ActiveFeatures")),
        reason=reason,
        reason_user=user,
        reason_time=when,
        address=text_or_none(kv.get("NodeAddr")),
        hostname=text_or_none(kv.get("NodeHostName")),
        version=text_or_none(kv.get("Version")),
        boot_time=parse_time(kv.get("BootTime")),
        slurmd_start_time=parse_time(kv.get("SlurmdStartTime")),
        tres=text_or_none(kv.get("CfgTRES")) or "",
        alloc_tres=text_or_none(kv.get("AllocTRES")) or "",
        raw=kv,
    )


def parse_scontrol_nodes(text: str) -> list[Node]:
    """Nodes from ``scontrol show node`` (with or without ``--oneliner``).

    Only the multi-line form reads every reason exactly: there ``Reason=`` has a
    line of its own (its value runs to the line's end, `` Comment=`` and all),
    a reason's later lines are indented deeper than the fields, and the real
    ``Comment=``/``Extra=`` fields follow on lines of their own. ``--oneliner``
    joins all that with spaces, so there a reason is cut at such a word.
    """
    return [_node_from_kv(_merge_node_lines(block)) for block in _node_blocks(text)]


_FIELD_INDENT = 3  # scontrol's indent of a record's fields; a reason's later lines go deeper
_REASON_LINE = " " * 10


def _node_blocks(text: str) -> Iterator[list[str]]:
    """:func:`_blocks` for nodes, where a reason's later line may come unindented (a raw
    newline in the reason): it stays that node's reason instead of failing the whole parse."""
    block: list[str] = []
    in_reason = False
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("NodeName="):
            if block:
                yield block
            block, in_reason = [line], "Reason=" in line
        elif block and line[:1].isspace():
            block.append(line)
            deeper = len(line) - len(line.lstrip()) > _FIELD_INDENT
            in_reason = line.lstrip().startswith("Reason=") or (in_reason and deeper)
        elif block and in_reason:
            block.append(_REASON_LINE + line)
        elif not _NOTHING.match(line.strip()):
            raise SlurmParseError(f"scontrol show node: unexpected line {line.strip()[:120]!r}")
    if block:
        yield block


def _merge_node_lines(block: Sequence[str]) -> dict[str, str]:
    """A record's fields; the common shape in one regex pass, anything else line by line."""
    fast = _merge_plain_node_lines(block)
    return fast if fast is not None else _merge_node_lines_by_line(block)


def _merge_plain_node_lines(block: Sequence[str]) -> dict[str, str] | None:
    """What :func:`_merge_node_lines_by_line` returns, for the shape scontrol prints.

    10,000 nodes are 180,000 lines: one :func:`parse_kv` per line was 60 % of
    ``undrain``'s time at that size. Here the field lines are split at their keys
    in one regex call per run of them, and the ``Reason=`` line (with its deeper
    later lines) is read whole, as there. None (the caller then reads the block
    line by line) when the block is not that shape: a glued key (``Reason=``)
    inside a line, text before a line's first key, a value that runs over a line
    break (a bare line), or a blank line.
    """
    values: dict[str, str] = {}
    fields: list[str] = []
    in_reason = False
    for number, line in enumerate(block):
        if in_reason and len(line) - len(line.lstrip()) > _FIELD_INDENT:
            values["Reason"] += "\n" + line.strip()
            continue
        in_reason = False
        if not line.strip():
            return None  # never from _node_blocks; the line reader knows what it means
        if number and line.lstrip().startswith("Reason="):
            if not _merge_fields(fields, values):
                return None
            fields = []
            values["Reason"] = line.strip().removeprefix("Reason=")
            in_reason = True
            continue
        fields.append(line)
    return values if _merge_fields(fields, values) else None


def _merge_fields(lines: list[str], values: dict[str, str]) -> bool:
    """Field lines into ``values``; False when they are not plain ``Key=value`` runs."""
    if not lines:
        return True
    parts = _KEY.split("\n".join(lines))
    keys = parts[1::2]
    if parts[0].strip() or not _NODE_GLUE.keys().isdisjoint(keys):
        return False
    for key, value in zip(keys, parts[2::2], strict=True):
        value = value.rstrip()
        if "\n" in value:
            return False
        values[key] = value.lstrip()
    return True


def _merge_node_lines_by_line(block: Sequence[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    in_reason = False
    for number, line in enumerate(block):
        indent = len(line) - len(line.lstrip())
        if in_reason and number and indent > _FIELD_INDENT:
            values["Reason"] += "\n" + line.strip()
            continue
        stripped = line.strip()
        if number and stripped.startswith("Reason="):
            values["Reason"] = stripped.removeprefix("Reason=")  # a line of its own: all of it
            in_reason = True
            continue
        pairs = parse_kv(line, _NODE_GLUE)
        if not pairs and values:
            # A bare line: a raw newline in some value. Slurm prints only the reason in
            # several lines, and a longer reason never matches one it should not.
            last = "Reason" if "Reason" in values else next(reversed(values))
            values[last] += "\n" + stripped
            in_reason = last == "Reason"
            continue
        values.update(pairs)
        in_reason = bool(pairs) and next(reversed(pairs)) == "Reason"
    return values


def _is_detail(line: str) -> bool:
    return line.startswith("  ") and line.lstrip().startswith("Nodes=")


def _gres_alloc(line: str) -> GresAlloc:
    kv = parse_kv(line.strip())
    return GresAlloc(
        nodes=kv.get("Nodes", ""),
        gres=text_or_none(kv.get("GRES")) or "",
        cpu_ids=text_or_none(kv.get("CPU_IDs")),
        mem=parse_int(kv.get("Mem")),
    )


def _job_reason(value: str | None) -> str | None:
    """scontrol writes free-text reasons with ``_`` for spaces; squeue and JSON do not.

    Reason codes have no underscores and hostnames may not contain them, so
    turning them back into spaces loses nothing.
    """
    reason = text_or_none(value)
    return reason.replace("_", " ") if reason else None


def _job_from_block(block: Sequence[str]) -> Job:
    kv = _merge_lines([line for line in block if not _is_detail(line)], _JOB_GLUE)
    details = tuple(_gres_alloc(line) for line in block if _is_detail(line))
    state, flags = job_state([kv.get("JobState", "UNKNOWN")])
    limit = timelimit.from_slurm(kv.get("TimeLimit"))
    used = timelimit.from_slurm(kv.get("RunTime"))
    reason = _job_reason(kv.get("Reason"))
    exit_code, signal = parse_exit_code(kv.get("ExitCode"))
    nodelist = text_or_none(kv.get("NodeList")) or ""
    alloc = kv.get("AllocTRES", kv.get("TRES", "") if nodelist else "")
    return Job(
        job_id=kv["JobId"],
        name=kv.get("JobName", ""),
        user=parse_user(kv.get("UserId")),
        state=state,
        state_flags=flags,
        reason=reason,
        array_job_id=text_or_none(kv.get("ArrayJobId")),
        array_task_id=text_or_none(kv.get("ArrayTaskId")),
        partition=text_or_none(kv.get("Partition")),
        account=text_or_none(kv.get("Account")),
        qos=text_or_none(kv.get("QOS")),
        nodelist=nodelist,
        batch_host=text_or_none(kv.get("BatchHost")),
        num_nodes=parse_int(kv.get("NumNodes")),
        num_cpus=parse_int(kv.get("NumCPUs")),
        cpus_per_task=parse_int(kv.get("CPUs/Task")),
        gres_per_node=gres_grammar.normalize(kv.get("TresPerNode")),
        gres_detail=details,
        alloc_tres=text_or_none(alloc) or "",
        submit_time=parse_time(kv.get("SubmitTime")),
        accrue_time=parse_time(kv.get("AccrueTime")),
        start_time=parse_time(kv.get("StartTime")),
        end_time=plausible_end(parse_time(kv.get("EndTime")), state, limit),
        time_limit=limit,
        time_used=used,
        time_left=time_left_of(state, limit, used),
        priority=parse_int(kv.get("Priority")),
        held=reason in HELD_REASONS,
        dependency=text_or_none(kv.get("Dependency")),
        exit_code=exit_code,
        exit_signal=signal,
        work_dir=text_or_none(kv.get("WorkDir")),
        std_out=text_or_none(kv.get("StdOut")),
        std_err=text_or_none(kv.get("StdErr")),
        raw=kv,
    )


def parse_scontrol_jobs(text: str) -> list[Job]:
    """Jobs from ``scontrol show job [-d]``, including ``-d``'s per-node GRES lines."""
    return [_job_from_block(block) for block in _blocks(text, "JobId", "scontrol show job")]


def _partition_from_kv(kv: Mapping[str, str]) -> Partition:
    return Partition(
        name=kv["PartitionName"],
        nodes=text_or_none(kv.get("Nodes")) or "",
        default=kv.get("Default") == "YES",
        state=kv.get("State", "UP"),
        max_time=timelimit.from_slurm(kv.get("MaxTime")),
        default_time=timelimit.from_slurm(kv.get("DefaultTime")),
        total_nodes=parse_int(kv.get("TotalNodes")),
        total_cpus=parse_int(kv.get("TotalCPUs")),
        hidden=kv.get("Hidden") == "YES",
    )


def parse_scontrol_partitions(text: str) -> list[Partition]:
    """Partitions from ``scontrol show partition`` (with or without ``--oneliner``)."""
    blocks = _blocks(text, "PartitionName", "scontrol show partition")
    return [_partition_from_kv(_merge_lines(block, {})) for block in blocks]
