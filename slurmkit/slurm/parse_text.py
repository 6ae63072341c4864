"""Parsers for Slurm's text output: delimited columns and ``key=value`` records.

Text works on every Slurm version and, unlike the JSON of 22.05, honours
squeue/sinfo filters. Column sets are declared here next to their parsers
(``SQUEUE_COLUMNS`` ...) so the argv builders in :mod:`.query` ask for exactly
what is parsed. Delimited rows are split on :data:`DELIMITER` (unit separators
around a token random per process, so no job name can hold it; job records are cut
at separators, not line ends, so a name or WorkDir may hold newlines) and output
with the wrong number of fields is an error, never guessed at.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime

from slurmkit.errors import SlurmParseError
from slurmkit.grammar import gres as gres_grammar
from slurmkit.grammar import idrange, timelimit
from slurmkit.slurm.records import (
    FINISHED_JOB_STATES,
    HELD_REASONS,
    DrainReason,
    GresAlloc,
    Job,
    Node,
    Partition,
    ProcessInfo,
    SlurmVersion,
    job_state,
    node_state,
    plausible_end,
)

# The field separator slurmkit asks squeue, sacct and sinfo for: ASCII unit separators
# around a token random per process. Any user can put any byte, \x1f and newlines
# included, in a job name or WorkDir; a fixed separator let one such job break the
# parse of every all-users squeue and sacct. Nobody can write a separator they
# cannot know, so every field boundary in the output is Slurm's.
DELIMITER = "\x1f" + os.urandom(6).hex() + "\x1f"

Column = tuple[str, str]  # (record field, Slurm format code or sacct field name)

SQUEUE_COLUMNS: tuple[Column, ...] = (
    ("job_id", "%A"),
    ("array_job_id", "%F"),
    ("array_task_id", "%K"),
    ("name", "%j"),
    ("user", "%u"),
    ("state", "%T"),
    ("reason", "%r"),
    ("partition", "%P"),
    ("account", "%a"),
    ("qos", "%q"),
    ("nodelist", "%N"),
    ("batch_host", "%B"),
    ("num_nodes", "%D"),
    ("num_cpus", "%C"),
    ("gres_per_node", "%b"),
    ("submit_time", "%V"),
    ("start_time", "%S"),
    ("end_time", "%e"),
    ("time_limit", "%l"),
    ("time_used", "%M"),
    ("time_left", "%L"),
    ("priority", "%Q"),
    ("dependency", "%E"),
    ("work_dir", "%Z"),
)
# For job_nodelist(): just enough to tell "no nodes yet" from "unknown".
SQUEUE_NODELIST_COLUMNS: tuple[Column, ...] = (
    ("display_id", "%i"),
    ("state", "%T"),
    ("nodelist", "%N"),
)
SACCT_COLUMNS: tuple[Column, ...] = (
    ("job_id", "JobIDRaw"),
    ("display_id", "JobID"),
    ("name", "JobName"),
    ("user", "User"),
    ("state", "State"),
    ("reason", "Reason"),
    ("exit_code", "ExitCode"),
    ("partition", "Partition"),
    ("account", "Account"),
    ("nodelist", "NodeList"),
    ("num_nodes", "NNodes"),
    ("num_cpus", "AllocCPUS"),
    ("submit_time", "Submit"),
    ("start_time", "Start"),
    ("end_time", "End"),
    ("time_used", "Elapsed"),
    ("time_limit", "Timelimit"),
    ("work_dir", "WorkDir"),
)
REASON_COLUMNS: tuple[Column, ...] = (
    ("reason", "%E"),
    ("user", "%u"),
    ("time", "%H"),
    ("state", "%T"),
    ("nodelist", "%N"),
)

# Words Slurm prints for "no value"; they must never reach a record as data.
_NULLS = frozenset({"", "(null)", "N/A", "n/a", "None", "NONE", "none", "Unknown", "None assigned"})

# ---------------------------------------------------------------- values


def text_or_none(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return None if value in _NULLS else value


def parse_time(value: str | None) -> datetime | None:
    """ISO local time (``SLURM_TIME_FORMAT=standard``) as an aware datetime, or None."""
    text = text_or_none(value)
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text).astimezone()
    except ValueError as exc:
        raise SlurmParseError(f"not a Slurm timestamp: {text!r}") from exc


def parse_int(value: str | None) -> int | None:
    """An integer; ``2-2`` (scontrol's min-max node count) gives the minimum."""
    text = text_or_none(value)
    if text is None:
        return None
    head = text.split("-", 1)[0] if not text.startswith("-") else text
    try:
        return int(head)
    except ValueError as exc:
        raise SlurmParseError(f"not an integer: {text!r}") from exc


def _float(value: str | None) -> float | None:
    text = text_or_none(value)
    try:
        return None if text is None else float(text)
    except ValueError as exc:
        raise SlurmParseError(f"not a number: {text!r}") from exc


def parse_exit_code(value: str | None) -> tuple[int | None, int | None]:
    """``3:0`` -> (3, 0): exit status and the signal that killed the job."""
    text = text_or_none(value)
    if text is None:
        return None, None
    code, _, signal = text.partition(":")
    return parse_int(code), parse_int(signal) if signal else 0


def _words(value: str | None, sep: str = ",") -> tuple[str, ...]:
    text = text_or_none(value)
    return tuple(w.strip() for w in text.split(sep) if w.strip()) if text else ()


def _user(value: str | None) -> str | None:
    """``root(0)`` -> ``root``."""
    text = text_or_none(value)
    return text.split("(", 1)[0] if text else None


def _time_left(state: str, limit: int | None, used: int | None) -> int | None:
    if limit is None or state in FINISHED_JOB_STATES:
        return None
    if state == "PENDING":
        return limit
    return max(limit - (used or 0), 0)


# ---------------------------------------------------------------- delimited rows


def format_string(columns: Sequence[Column], delimiter: str = DELIMITER) -> str:
    """The squeue/sinfo ``-o`` string that prints ``columns`` separated by ``delimiter``."""
    return delimiter.join(code for _, code in columns)


def field_list(columns: Sequence[Column]) -> str:
    """The sacct ``--format`` value for ``columns``."""
    return ",".join(code for _, code in columns)


def split_rows(
    text: str,
    columns: Sequence[Column],
    delimiter: str = DELIMITER,
    *,
    what: str = "output",
    header: bool = False,
) -> list[dict[str, str]]:
    """Rows as ``{field: raw text}``; a row with the wrong field count is an error."""
    lines = [line for line in text.splitlines() if line.strip()]
    if header and lines:
        _check_header(lines.pop(0), columns, delimiter, what)
    rows = []
    for number, line in enumerate(lines, 1):
        values = line.split(delimiter)
        if len(values) != len(columns):
            raise SlurmParseError(
                f"{what}: line {number} has {len(values)} fields, expected {len(columns)} "
                f"separated by {delimiter!r}: {line[:120]!r}"
            )
        rows.append({name: value.strip() for (name, _), value in zip(columns, values, strict=True)})
    return rows


def split_records(
    text: str,
    columns: Sequence[Column],
    delimiter: str = DELIMITER,
    *,
    what: str = "output",
    header: bool = False,
) -> list[dict[str, str]]:
    """Records as ``{field: raw text}``, where any field but the first may hold newlines.

    The output is cut at the separators, never at line ends: a record's last field and
    the next record's first meet in one piece, split at that piece's last newline (the
    first column, a job id, holds none). A job name holding a newline, or a WorkDir
    ending in one, is then read exactly instead of breaking every record after it.
    Output that does not divide into whole records is an error naming the first
    line that looks wrong.
    """
    width = len(columns)
    if not text.strip():
        return []
    if width < 2 or delimiter not in text:
        return split_rows(text, columns, delimiter, what=what, header=header)
    pieces = text.lstrip("\n").split(delimiter)
    if (len(pieces) - 1) % (width - 1):
        split_rows(text, columns, delimiter, what=what, header=header)  # names the bad line
        raise SlurmParseError(
            f"{what}: {len(pieces)} fields do not make whole records of {width} "
            f"separated by {delimiter!r}"
        )
    pieces[-1] = pieces[-1].removesuffix("\n")  # the last record's last field
    records = _cut_records(pieces, width, free_first=False, what=what)
    if header:
        _check_header(delimiter.join(records.pop(0)), columns, delimiter, what)
    return [
        {name: value.strip() for (name, _), value in zip(columns, values, strict=True)}
        for values in records
    ]


def _cut_records(pieces: list[str], width: int, *, free_first: bool, what: str) -> list[list[str]]:
    """Group the pieces of a separator-split output into records of ``width`` fields.

    Where one record ends and the next begins, the two fields meet in one piece, split at
    a line break: the *last* one when the next record's first field holds none (squeue,
    sacct: a job id first), the *first* one when the free-text field comes first
    (``sinfo -R``: the reason) and the last field holds none.
    """
    records: list[list[str]] = []
    current = [pieces[0]]
    for piece in pieces[1:-1]:
        if len(current) < width - 1:
            current.append(piece)
            continue
        if free_first:
            last, newline, first = piece.partition("\n")
        else:
            last, newline, first = piece.rpartition("\n")
        if not newline:
            raise SlurmParseError(f"{what}: no line break between records: {piece[:120]!r}")
        current.append(last)
        records.append(current)
        current = [first]
    current.append(pieces[-1])
    records.append(current)
    return records


def _check_header(line: str, columns: Sequence[Column], delimiter: str, what: str) -> None:
    names = [name.strip().lower() for name in line.split(delimiter)]
    wanted = [code.lower() for _, code in columns]
    if names != wanted:
        raise SlurmParseError(f"{what}: header {names} does not match requested {wanted}")


def _split_display_id(display: str | None) -> tuple[str | None, str | None]:
    """``4_1`` -> (4, 1); ``4_[2-6%1]`` -> (4, 2-6%1); ``7`` -> (None, None)."""
    try:
        job = idrange.parse_job_id(display or "")
    except SlurmParseError:
        return None, None
    return (job.job, job.tasks) if job.tasks is not None else (None, None)


def _array_ids(row: Mapping[str, str]) -> tuple[str | None, str | None]:
    task = text_or_none(row.get("array_task_id"))
    if task is not None:
        return text_or_none(row.get("array_job_id")), task
    return _split_display_id(row.get("display_id"))


def job_from_row(row: Mapping[str, str]) -> Job:
    """A :class:`Job` from named columns (squeue or sacct); missing columns stay None."""
    job_id = row.get("job_id") or row.get("display_id") or ""
    state, flags = job_state([row.get("state") or "UNKNOWN"])
    limit = timelimit.from_slurm(row.get("time_limit"))
    used = timelimit.from_slurm(row.get("time_used"))
    reason = text_or_none(row.get("reason"))
    exit_code, signal = parse_exit_code(row.get("exit_code"))
    array_job_id, array_task_id = _array_ids(row)
    time_left = (
        timelimit.from_slurm(row["time_left"])
        if "time_left" in row
        else _time_left(state, limit, used)
    )
    return Job(
        job_id=job_id,
        name=row.get("name", ""),
        user=text_or_none(row.get("user")),
        state=state,
        state_flags=flags,
        reason=reason,
        array_job_id=array_job_id,
        array_task_id=array_task_id,
        partition=text_or_none(row.get("partition")),
        account=text_or_none(row.get("account")),
        qos=text_or_none(row.get("qos")),
        nodelist=text_or_none(row.get("nodelist")) or "",
        batch_host=text_or_none(row.get("batch_host")),
        num_nodes=parse_int(row.get("num_nodes")),
        num_cpus=parse_int(row.get("num_cpus")),
        gres_per_node=gres_grammar.normalize(row.get("gres_per_node")),
        submit_time=parse_time(row.get("submit_time")),
        start_time=parse_time(row.get("start_time")),
        end_time=plausible_end(parse_time(row.get("end_time")), state, limit),
        time_limit=limit,
        time_used=used,
        time_left=time_left,
        priority=parse_int(row.get("priority")),
        held=reason in HELD_REASONS,
        dependency=text_or_none(row.get("dependency")),
        exit_code=exit_code,
        exit_signal=signal,
        work_dir=text_or_none(row.get("work_dir")),
    )


def parse_squeue(
    text: str, columns: Sequence[Column] = SQUEUE_COLUMNS, delimiter: str = DELIMITER
) -> list[Job]:
    """Jobs from ``squeue -h -o <format_string(columns)>``."""
    rows = split_records(text, columns, delimiter, what="squeue")
    return [job_from_row(row) for row in rows]


def parse_sacct(
    text: str,
    columns: Sequence[Column] = SACCT_COLUMNS,
    delimiter: str = DELIMITER,
    *,
    header: bool = False,
    steps: bool = False,
) -> list[Job]:
    """Jobs from ``sacct -P [-n] --delimiter=... -o <fields>``; steps (``3.batch``) skipped."""
    rows = split_records(text, columns, delimiter, what="sacct", header=header)
    if not steps:
        rows = [r for r in rows if "." not in (r.get("display_id") or r.get("job_id") or "")]
    return [job_from_row(row) for row in rows]


def parse_sinfo_reasons(
    text: str, columns: Sequence[Column] = REASON_COLUMNS, delimiter: str = DELIMITER
) -> list[DrainReason]:
    """Reasons from ``sinfo -R -h -o <format>``; nodes without a reason are skipped.

    A reason may hold newlines (sinfo prints them raw); no other column can, so
    records are cut at the separators, and a reason in the first column ends where
    its record's last separator-free piece has its first newline.
    """
    if columns and columns[0][0] == "reason":
        rows = _split_reason_first(text, columns, delimiter)
    else:
        rows = split_records(text, columns, delimiter, what="sinfo -R")
    reasons = []
    for row in rows:
        reason = text_or_none(row.get("reason"))
        if reason is None:
            continue
        reasons.append(
            DrainReason(
                reason=reason,
                nodelist=row.get("nodelist", ""),
                user=_user(row.get("user")),
                time=parse_time(row.get("time")),
                state=row.get("state", ""),
            )
        )
    return reasons


def _split_reason_first(
    text: str, columns: Sequence[Column], delimiter: str
) -> list[dict[str, str]]:
    """:func:`split_records` mirrored: the *first* field may hold newlines, the last none."""
    width = len(columns)
    body = text.strip("\n")
    if not body.strip():
        return []
    pieces = body.split(delimiter)
    if width < 2 or (len(pieces) - 1) % (width - 1):
        raise SlurmParseError(
            f"sinfo -R: {len(pieces)} fields do not make whole records of {width} "
            f"separated by {delimiter!r}: {body[:120]!r}"
        )
    records = _cut_records(pieces, width, free_first=True, what="sinfo -R")
    return [
        {name: value.strip() for (name, _), value in zip(columns, values, strict=True)}
        for values in records
    ]


def parse_names(text: str) -> list[str]:
    """One name per line (``sinfo -h -N -o %N``, ``scontrol show hostnames``), deduplicated.

    ``sinfo -N`` prints a node once per partition; callers want each node once,
    in Slurm's order.
    """
    names = (line.strip() for line in text.splitlines())
    return list(dict.fromkeys(name for name in names if name))


# ---------------------------------------------------------------- key=value records

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
        cpu_load=_float(kv.get("CPULoad")),
        real_memory=parse_int(kv.get("RealMemory")),
        alloc_memory=parse_int(kv.get("AllocMem")),
        free_memory=parse_int(kv.get("FreeMem")),
        gres=text_or_none(kv.get("Gres")) or "",
        gres_used=text_or_none(kv.get("GresUsed")) or "",
        partitions=_words(kv.get("Partitions")),
        features=_words(kv.get("AvailableFeatures")),
        active_features=_words(kv.get("ActiveFeatures")),
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
        user=_user(kv.get("UserId")),
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
        time_left=_time_left(state, limit, used),
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


# ---------------------------------------------------------------- small outputs


def parse_version(text: str) -> SlurmVersion:
    """``sinfo --version`` output: ``slurm-wlm 22.05.8`` (Debian) or ``slurm 24.11.5``."""
    return SlurmVersion.parse(text)


_LISTPIDS_HEADER = ["PID", "JOBID", "STEPID", "LOCALID", "GLOBALID"]


def parse_listpids(text: str) -> list[ProcessInfo]:
    """Processes from ``scontrol listpids``; ``-`` (no task id) becomes None."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    if lines[0] != _LISTPIDS_HEADER:
        raise SlurmParseError(f"scontrol listpids: unexpected header {lines[0]}")
    processes = []
    for fields in lines[1:]:
        if len(fields) != len(_LISTPIDS_HEADER):
            raise SlurmParseError(f"scontrol listpids: bad line {' '.join(fields)!r}")
        pid, job_id, step, local_id, global_id = (None if f == "-" else f for f in fields)
        processes.append(
            ProcessInfo(
                pid=int(pid or 0),
                job_id=job_id or "",
                step_id=step,
                local_id=parse_int(local_id),
                global_id=parse_int(global_id),
            )
        )
    return processes
