"""Parsers for Slurm's delimited text output (squeue, sinfo, sacct ``--format``).

Text works on every Slurm version and, unlike the JSON of 22.05, honours
squeue/sinfo filters. Column sets are declared here next to their parsers
(``SQUEUE_COLUMNS`` ...) so the argv builders in :mod:`.query` ask for exactly
what is parsed. Delimited rows are split on :data:`DELIMITER` (unit separators
around a token random per process, so no job name can hold it; job records are cut
at separators, not line ends, so a name or WorkDir may hold newlines) and output
with the wrong number of fields is an error, never guessed at. The value helpers
(times, counts, Slurm's words for "no value") serve both grammars: scontrol's
``key=value`` records are parsed by :mod:`.parse_records` with the same helpers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime

from slurmkit.errors import SlurmParseError
from slurmkit.grammar import gres as gres_grammar
from slurmkit.grammar import idrange, timelimit
from slurmkit.slurm.records import (
    FINISHED_JOB_STATES,
    HELD_REASONS,
    DrainReason,
    Job,
    ProcessInfo,
    SlurmVersion,
    job_state,
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
# The identity and outcome of a job, first in every sacct format slurmkit asks for.
SACCT_HEAD_COLUMNS: tuple[Column, ...] = (
    ("job_id", "JobIDRaw"),
    ("display_id", "JobID"),
    ("name", "JobName"),
    ("user", "User"),
    ("state", "State"),
    ("reason", "Reason"),
    ("exit_code", "ExitCode"),
)
SACCT_COLUMNS: tuple[Column, ...] = (
    *SACCT_HEAD_COLUMNS,
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


def parse_float(value: str | None) -> float | None:
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


def parse_words(value: str | None, sep: str = ",") -> tuple[str, ...]:
    text = text_or_none(value)
    return tuple(w.strip() for w in text.split(sep) if w.strip()) if text else ()


def parse_user(value: str | None) -> str | None:
    """``root(0)`` -> ``root``."""
    text = text_or_none(value)
    return text.split("(", 1)[0] if text else None


def time_left_of(state: str, limit: int | None, used: int | None) -> int | None:
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
        return _split_lines(text, columns, delimiter, what, header)
    pieces = text.lstrip("\n").split(delimiter)
    if (len(pieces) - 1) % (width - 1):
        _split_lines(text, columns, delimiter, what, header)  # names the bad line
        raise SlurmParseError(
            f"{what}: {len(pieces)} fields do not make whole records of {width} "
            f"separated by {delimiter!r}"
        )
    pieces[-1] = pieces[-1].removesuffix("\n")  # the last record's last field
    records = _cut_records(pieces, width, free_first=False, what=what)
    if header:
        _check_header(delimiter.join(records.pop(0)), columns, delimiter, what)
    return _named(columns, records)


def _split_lines(
    text: str, columns: Sequence[Column], delimiter: str, what: str, header: bool
) -> list[dict[str, str]]:
    """Where no field can hold a newline, a line is a record: its field count is checked
    line by line, so the error names the line that is wrong."""
    lines = [line for line in text.splitlines() if line.strip()]
    if header and lines:
        _check_header(lines.pop(0), columns, delimiter, what)
    records = [line.split(delimiter) for line in lines]
    for number, (line, values) in enumerate(zip(lines, records, strict=True), 1):
        if len(values) != len(columns):
            raise SlurmParseError(
                f"{what}: line {number} has {len(values)} fields, expected {len(columns)} "
                f"separated by {delimiter!r}: {line[:120]!r}"
            )
    return _named(columns, records)


def _named(columns: Sequence[Column], records: list[list[str]]) -> list[dict[str, str]]:
    """Each record as ``{field: text}``, its values stripped of the padding around them."""
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
        else time_left_of(state, limit, used)
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
                user=parse_user(row.get("user")),
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
    return _named(columns, _cut_records(pieces, width, free_first=True, what="sinfo -R"))


def parse_names(text: str) -> list[str]:
    """One name per line (``sinfo -h -N -o %N``, ``scontrol show hostnames``), deduplicated.

    ``sinfo -N`` prints a node once per partition; callers want each node once,
    in Slurm's order.
    """
    names = (line.strip() for line in text.splitlines())
    return list(dict.fromkeys(name for name in names if name))


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
