"""The Slurm queries commands use: one Slurm call each, answered with records.

Each query is a pure argv builder (``*_argv``) plus a parser from
:mod:`.parse_text` or :mod:`.parse_records`, glued by
:func:`slurmkit.slurm._exec.run_slurm`; queries take lists or hostlists and never
loop over nodes, so a command touching 1000 nodes still costs slurmctld one RPC.

Text rather than ``--json`` everywhere: the text forms work on every version,
honour filters (22.05's ``squeue --json`` ignores them and its ``sacct --json``
reports exit code 0 for failed jobs), carry what JSON lacks (per-node GRES
indices of ``scontrol show job -d``) and are far smaller. There is no JSON
parser: one that only its own tests called was deleted (issue 15).

The read-only queries (nodes, jobs, job, partitions, drain reasons, job and
partition nodelists) may instead be answered by pyslurm with the same records
(:mod:`.backend` decides, :mod:`.backend_pyslurm` answers); these functions stay
the one entry point either way. State changes always run the commands.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from slurmkit import _proc
from slurmkit.errors import NotFound, SlurmParseError
from slurmkit.grammar import idrange
from slurmkit.slurm import _exec, backend
from slurmkit.slurm.backend import NodeNames, Words
from slurmkit.slurm.parse_records import (
    parse_scontrol_jobs,
    parse_scontrol_nodes,
    parse_scontrol_partitions,
)
from slurmkit.slurm.parse_text import (
    DELIMITER,
    REASON_COLUMNS,
    SACCT_COLUMNS,
    SQUEUE_COLUMNS,
    SQUEUE_NODELIST_COLUMNS,
    Column,
    field_list,
    format_string,
    parse_listpids,
    parse_names,
    parse_sacct,
    parse_sinfo_reasons,
    parse_squeue,
    parse_time,
    parse_version,
    split_records,
)
from slurmkit.slurm.records import DrainReason, Job, Node, Partition, ProcessInfo, SlurmVersion

# Print array task expressions in full instead of cutting them at 64 bytes.
_SQUEUE_ENV = {"SLURM_BITSTR_LEN": "0"}


def _joined(values: Words) -> str:
    return values if isinstance(values, str) else ",".join(values)


def hostlist_word(nodes: NodeNames) -> str:
    """The one argv word Slurm takes for nodes: a HostSet folded, names joined by commas."""
    if isinstance(nodes, str):  # annotated out; kept whole while callers move (issue 30)
        return nodes
    return ",".join(nodes) if isinstance(nodes, Sequence) else str(nodes)


def _stdout(argv: list[str], env: dict[str, str] | None = None) -> str:
    return _exec.run_slurm(argv, env=env).stdout


def _renamed(exc: NotFound, message: str) -> NotFound:
    return NotFound(f"{message} ({exc})", exc.argv, exc.returncode, exc.stderr)


# ---------------------------------------------------------------- argv builders


def version_argv() -> list[str]:
    return ["sinfo", "--version"]


def nodes_argv(names: NodeNames | None = None, *, oneliner: bool = True) -> list[str]:
    """``oneliner=False`` for exact reasons (see :func:`parse_scontrol_nodes`)."""
    form = ["--oneliner"] if oneliner else []
    return ["scontrol", "--all", *form, "show", "node", *([hostlist_word(names)] if names else [])]


def squeue_argv(
    job_ids: Words | None = None,
    user: str | None = None,
    name: str | None = None,
    states: Words | None = None,
    nodelist: NodeNames | None = None,
    columns: Sequence[Column] = SQUEUE_COLUMNS,
) -> list[str]:
    argv = ["squeue", "--all", "--noheader", f"--format={format_string(columns)}"]
    argv += [f"--jobs={_joined(job_ids)}"] if job_ids else []
    argv += [f"--user={user}"] if user else []
    argv += [f"--name={name}"] if name else []
    argv += [f"--states={_joined(states)}"] if states else []
    argv += [f"--nodelist={hostlist_word(nodelist)}"] if nodelist else []
    return argv


def job_argv(job_id: str) -> list[str]:
    return ["scontrol", "--details", "show", "job", job_id]


def partitions_argv(name: str | None = None) -> list[str]:
    return ["scontrol", "--all", "show", "partition", *([name] if name else [])]


def drain_reasons_argv() -> list[str]:
    return [
        "sinfo",
        "--all",
        "--list-reasons",
        "--noheader",
        f"--format={format_string(REASON_COLUMNS)}",
    ]


def nodes_in_state_argv(state: str) -> list[str]:
    return ["sinfo", "--all", "--noheader", "--Node", f"--states={state}", "--format=%N"]


def listpids_argv(job_id: str, node: str | None = None) -> list[str]:
    return ["scontrol", "listpids", job_id, *([node] if node else [])]


def sacct_argv(
    job_ids: Words | None = None,
    user: str | None = None,
    start: datetime | str | None = None,
    end: datetime | str | None = None,
    states: Words | None = None,
    name: str | None = None,
) -> list[str]:
    argv = ["sacct", "--allocations", "--parsable2", "--noheader", f"--delimiter={DELIMITER}"]
    argv += [f"--format={field_list(SACCT_COLUMNS)}"]
    argv += [f"--jobs={_joined(job_ids)}"] if job_ids else []
    argv += [f"--user={user}"] if user else ["--allusers"]
    argv += [f"--starttime={_when(start)}"] if start else []
    argv += [f"--endtime={_when(end)}"] if end else []
    argv += [f"--state={_joined(states)}"] if states else []
    argv += [f"--name={name}"] if name else []
    return argv


def _when(moment: datetime | str) -> str:
    """sacct wants local ``YYYY-MM-DDTHH:MM:SS``; aware datetimes are converted first."""
    if isinstance(moment, str):
        return moment
    if moment.tzinfo is not None:
        moment = moment.astimezone().replace(tzinfo=None)
    return moment.isoformat(timespec="seconds")


# ---------------------------------------------------------------- queries


@functools.lru_cache(maxsize=1)
def version() -> SlurmVersion:
    """The installed Slurm's version; asked once per process (``version.cache_clear()``)."""
    return parse_version(_stdout(version_argv()))


def nodes(names: NodeNames | None = None, *, exact_reasons: bool = False) -> list[Node]:
    """All nodes, or those named (``HostSet("node-[1-4]")``), in one Slurm call.

    ``exact_reasons`` reads the multi-line form, the only one where a reason holding
    `` Comment=`` or a newline is read whole: for anything that acts on reasons (undrain).
    Raises NotFound naming the first unknown node.
    """
    return backend.current().nodes(names, exact_reasons=exact_reasons)


def jobs(
    job_ids: Words | None = None,
    user: str | None = None,
    name: str | None = None,
    states: Words | None = None,
    nodelist: NodeNames | None = None,
) -> list[Job]:
    """Jobs in the queue matching every filter given (one ``squeue``).

    Default states are squeue's (pending, running, completing); pass
    ``states="all"`` to include recently finished jobs. Unknown job ids give
    an empty list: a job that left the queue is not an error here.
    """
    return backend.current().jobs(job_ids, user, name, states, nodelist)


def job(job_id: str) -> Job:
    """One job with ``scontrol show job -d`` detail (per-node GRES, exit code, paths).

    For an array id that names several records, the one whose own id or
    ``4_1``-style id matches is returned, else the first.
    """
    return backend.current().job(job_id)


def partitions() -> list[Partition]:
    return backend.current().partitions()


def drain_reasons() -> list[DrainReason]:
    """Nodes that are down, drained, draining or failing, grouped by reason (``sinfo -R``)."""
    return backend.current().drain_reasons()


def job_nodelist(jobid: str) -> str:
    """The compact nodelist of a job (or of all running tasks of an array id).

    Raises NotFound for an unknown job and a SlurmkitError for a job that has
    no nodes yet (pending), so callers never act on an empty list by accident.
    """
    return backend.current().job_nodelist(jobid)


def partition_nodelist(name: str) -> str:
    """The compact nodelist of a partition; NotFound when there is no such partition."""
    return backend.current().partition_nodelist(name)


class CommandsBackend:
    """The read-only queries answered by Slurm's clients' text (every version)."""

    def nodes(self, names: NodeNames | None = None, *, exact_reasons: bool = False) -> list[Node]:
        return parse_scontrol_nodes(_stdout(nodes_argv(names, oneliner=not exact_reasons)))

    def jobs(
        self,
        job_ids: Words | None = None,
        user: str | None = None,
        name: str | None = None,
        states: Words | None = None,
        nodelist: NodeNames | None = None,
    ) -> list[Job]:
        argv = squeue_argv(job_ids, user, name, states, nodelist)
        try:
            return parse_squeue(_stdout(argv, _SQUEUE_ENV))
        except NotFound:
            if job_ids:
                return []
            raise

    def job(self, job_id: str) -> Job:
        try:
            found = parse_scontrol_jobs(_stdout(job_argv(job_id)))
        except NotFound as exc:
            raise _renamed(exc, f"unknown job {job_id}") from exc
        if not found:
            raise NotFound(f"unknown job {job_id}", job_argv(job_id))
        return backend.record_asked(job_id, found)

    def partitions(self) -> list[Partition]:
        return parse_scontrol_partitions(_stdout(partitions_argv()))

    def drain_reasons(self) -> list[DrainReason]:
        return parse_sinfo_reasons(_stdout(drain_reasons_argv()))

    def job_nodelist(self, jobid: str) -> str:
        argv = squeue_argv(job_ids=jobid, columns=SQUEUE_NODELIST_COLUMNS)
        try:
            rows = parse_squeue(_stdout(argv, _SQUEUE_ENV), SQUEUE_NODELIST_COLUMNS)
        except NotFound as exc:
            raise _renamed(exc, f"unknown job {jobid}") from exc
        return backend.nodelist_of_job(jobid, rows, argv)

    def partition_nodelist(self, name: str) -> str:
        try:
            found = parse_scontrol_partitions(_stdout(partitions_argv(name)))
        except NotFound as exc:
            raise _renamed(exc, f"unknown partition {name}") from exc
        return backend.partition_named(name, found, partitions_argv(name)).nodes


_: backend.QueryBackend = CommandsBackend()  # mypy: the commands implement the protocol


def nodes_in_state(state: str) -> list[str]:
    """Expanded names of the nodes in a Slurm state (``idle``, ``drain``, ``down``, ``mix``...).

    sinfo does the matching, so every state word and combination it knows
    works (``drain`` covers drained and draining nodes).
    """
    return parse_names(_stdout(nodes_in_state_argv(state)))


def listpids(job_id: str, node: str | None = None) -> list[ProcessInfo]:
    """Processes of a job on a node; scontrol asks the slurmd of ``node`` (or the local one)."""
    return parse_listpids(_stdout(listpids_argv(job_id, node)))


def sacct_jobs(
    job_ids: Words | None = None,
    user: str | None = None,
    start: datetime | str | None = None,
    end: datetime | str | None = None,
    states: Words | None = None,
    name: str | None = None,
) -> list[Job]:
    """Job history from accounting (one ``sacct``, allocations only, all users by default).

    Without ``job_ids`` or ``start`` sacct reports jobs since midnight.
    """
    return parse_sacct(_stdout(sacct_argv(job_ids, user, start, end, states, name)))


# ---------------------------------------------------------------- node state changes


def update_node_state_argv(nodelist: NodeNames, state: str, reason: str | None = None) -> list[str]:
    """``scontrol update nodename=<list> state=<state> [reason=...]``: one RPC for all nodes.

    Each value is its own argv word, so a reason with spaces needs no quoting.
    """
    argv = ["scontrol", "update", f"nodename={hostlist_word(nodelist)}", f"state={state}"]
    return [*argv, f"reason={reason}"] if reason else argv


def update_node_state(nodelist: NodeNames, state: str, reason: str | None = None) -> None:
    """Change the state of every node in ``nodelist`` with one ``scontrol update``.

    ``state="undrain"`` clears the drain flag and leaves a DOWN base state
    alone (unlike ``resume``/``idle``). Raises the classified SlurmError on
    failure (NotFound for an unknown node, ControllerUnreachable, ...).
    """
    _exec.run_slurm(update_node_state_argv(nodelist, state, reason))


# ---------------------------------------------------------------- job arrays (trains)
#
# ``scontrol hold/release`` on an array id answers per group of tasks when the
# tasks do not all fare alike, and then exits 1 even if the pending ones were
# changed (22.05.8 on the sandbox, recorded):
#
#     115_1: Job has already finished
#     115_2-4: No error
#
# A non-owner gets ``128_1-3: Invalid user id``. So these calls run unchecked
# and the per-task lines decide what happened.

_TASK_OUTCOME = re.compile(r"(?P<id>\S+?):\s+(?P<message>\S.*)")
_TASK_OK = "no error"
_TASK_FINISHED = "job has already finished"


@dataclass(frozen=True)
class TaskOutcome:
    """One ``<array>_<tasks>: <message>`` line of an ``scontrol hold/release`` answer."""

    job_id: str
    tasks: str | None
    message: str

    @property
    def ok(self) -> bool:
        return self.message.lower() == _TASK_OK

    @property
    def finished(self) -> bool:
        return self.message.lower() == _TASK_FINISHED


@dataclass(frozen=True)
class ControlResult:
    """What one ``scontrol hold|release`` did: no outcomes means every task was changed."""

    argv: tuple[str, ...]
    outcomes: tuple[TaskOutcome, ...] = ()

    @property
    def changed(self) -> bool:
        """At least one task was held/released (a silent exit 0 means all were)."""
        return not self.outcomes or any(o.ok for o in self.outcomes)

    @property
    def all_finished(self) -> bool:
        return bool(self.outcomes) and all(o.finished for o in self.outcomes)


def parse_task_outcomes(text: str) -> list[TaskOutcome]:
    """The per-task lines of an ``scontrol hold/release`` answer; other lines are skipped."""
    found = []
    for line in text.splitlines():
        match = _TASK_OUTCOME.fullmatch(line.strip())
        if not match:
            continue
        try:
            job = idrange.parse_job_id(match["id"])
        except SlurmParseError:
            continue
        found.append(TaskOutcome(job.job, job.tasks, match["message"].strip()))
    return found


def hold_argv(job_id: str) -> list[str]:
    """Holding an array id holds every task not yet started; a running task keeps running."""
    return ["scontrol", "hold", job_id]


def release_argv(job_id: str) -> list[str]:
    return ["scontrol", "release", job_id]


def cancel_argv(job_ids: Words, pending_only: bool = False) -> list[str]:
    """``scancel [--state=PENDING] ID...``: with ``pending_only`` running tasks are spared."""
    ids = [job_ids] if isinstance(job_ids, str) else list(job_ids)
    return ["scancel", *(["--state=PENDING"] if pending_only else []), *ids]


def pending_start_argv(job_ids: Words) -> list[str]:
    """``squeue --start``: pending jobs with the start time the scheduler expects."""
    return [*squeue_argv(job_ids=job_ids), "--start"]


def _control(argv: list[str]) -> ControlResult:
    return interpret_control(_exec.run_slurm(argv, check=False))


def interpret_control(result: _proc.Completed) -> ControlResult:
    """What an ``scontrol hold|release`` answer means; raises the classified refusal."""
    argv = list(result.argv)
    if not _exec.failed(result):
        return ControlResult(tuple(argv))
    outcomes = parse_task_outcomes(result.stderr)
    if not outcomes:
        raise _exec.classify(result)
    refused = [o for o in outcomes if not o.ok and not o.finished]
    if refused:
        # Classify the refusal itself ("Invalid user id" -> PermissionDenied), naming the tasks.
        first = refused[0]
        where = f"{first.job_id}_{first.tasks}" if first.tasks else first.job_id
        raise _exec.classify(replace(result, stderr=f"{argv[0]}: error: {where}: {first.message}"))
    return ControlResult(tuple(argv), tuple(outcomes))


def hold(job_id: str) -> ControlResult:
    """``scontrol hold`` one job or a whole array (idempotent).

    Raises PermissionDenied when Slurm refuses (another user's job), NotFound
    for an unknown id; tasks that already finished are reported, not raised.
    """
    return _control(hold_argv(job_id))


def release(job_id: str) -> ControlResult:
    """``scontrol release``: the counterpart of :func:`hold`, with the same outcomes."""
    return _control(release_argv(job_id))


def cancel(job_ids: Words, pending_only: bool = False) -> None:
    """``scancel`` (only the pending tasks with ``pending_only``); unknown ids are no error."""
    _exec.run_slurm(cancel_argv(job_ids, pending_only))


def pending_starts(job_ids: Words) -> list[Job]:
    """Pending records of ``job_ids`` with their expected start (``start_time``, None if N/A)."""
    try:
        return parse_squeue(_stdout(pending_start_argv(job_ids), _SQUEUE_ENV))
    except NotFound:
        return []


# ---------------------------------------------------------------- job changes


def update_job_argv(job_id: str, *assignments: str) -> list[str]:
    """``scontrol update JobId=<id> <assignments>``: JobId first, as increments (``+=``) require."""
    return ["scontrol", "update", f"JobId={job_id}", *assignments]


def update_job(job_id: str, *assignments: str) -> None:
    """Change a job with one ``scontrol update`` (e.g. ``TimeLimit+=30``).

    Raises NotFound for an unknown job, PermissionDenied when Slurm refuses
    (users cannot raise their own running job's time limit), else SlurmError.
    """
    try:
        _exec.run_slurm(update_job_argv(job_id, *assignments))
    except NotFound as exc:
        raise _renamed(exc, f"unknown job {job_id}") from exc


# ---------------------------------------------------------------- cancelling by name


def cancel_by_name_argv(name: str, user: str) -> list[str]:
    """``scancel --name=N --user=U``: every job (pending or running) of a name and user.

    Both filters are required: an empty name would turn this into "all of U's jobs".
    """
    if not name or not user:
        raise ValueError("cancel_by_name needs a job name and a user")
    return ["scancel", f"--name={name}", f"--user={user}"]


def cancel_by_name(name: str, user: str) -> None:
    """Cancel a user's jobs of one name in one ``scancel``; no match is not an error."""
    _exec.run_slurm(cancel_by_name_argv(name, user))


# ---------------------------------------------------------------- finding a submission by token
#
# A submission whose sbatch got no answer (a hung slurmctld, a killed slurmkit) may still
# have been queued. slurmkit submits with ``--comment=slurmkit:<token>`` (see
# :mod:`slurmkit.journal`), so the job can be found again by that comment.

COMMENT_SQUEUE_COLUMNS: tuple[Column, ...] = (
    ("job_id", "%A"),
    ("array_job_id", "%F"),
    ("name", "%j"),
    ("state", "%T"),
    ("comment", "%k"),
)
COMMENT_SACCT_COLUMNS: tuple[Column, ...] = (
    ("job_id", "JobIDRaw"),
    ("display_id", "JobID"),
    ("name", "JobName"),
    ("state", "State"),
    ("submit_time", "Submit"),
    ("comment", "Comment"),
    ("submit_line", "SubmitLine"),
)


@dataclass(frozen=True)
class Commented:
    """A job (array) and its comment: ``job_id`` is the array's id for an array task."""

    job_id: str
    name: str
    state: str
    comment: str
    submit_time: datetime | None = None
    # sbatch's command line as accounting keeps it (every Slurm since 21.08, whatever
    # AccountingStoreFlags): it holds the --comment=slurmkit:<token> word.
    submit_line: str = ""


def commented_jobs_argv(name: str, user: str) -> list[str]:
    """squeue of a user's jobs of one name, finished ones still known included, with comments."""
    return squeue_argv(user=user, name=name, states="all", columns=COMMENT_SQUEUE_COLUMNS)


def commented_jobs(name: str, user: str) -> list[Commented]:
    """The controller's jobs named ``name`` of ``user`` with their comments (one squeue)."""
    text = _stdout(commented_jobs_argv(name, user), _SQUEUE_ENV)
    rows = split_records(text, COMMENT_SQUEUE_COLUMNS, what="squeue")
    return [
        Commented(
            job_id=r["array_job_id"] if r["array_job_id"].isdigit() else r["job_id"],
            name=r["name"],
            state=r["state"],
            comment=r["comment"],
        )
        for r in rows
    ]


def commented_history_argv(name: str, user: str, since: datetime | str) -> list[str]:
    """sacct of a user's jobs of one name since ``since``, with comments (when stored)."""
    argv = ["sacct", "--allocations", "--parsable2", "--noheader", f"--delimiter={DELIMITER}"]
    argv += [f"--format={field_list(COMMENT_SACCT_COLUMNS)}"]
    return [*argv, f"--user={user}", f"--name={name}", f"--starttime={_when(since)}"]


def commented_history(name: str, user: str, since: datetime | str) -> list[Commented]:
    """Accounting's jobs named ``name`` of ``user`` since ``since``, with comments.

    The comment is empty unless the cluster stores it (``AccountingStoreFlags=job_comment``);
    the submit line, with sbatch's ``--comment=`` word, is stored without it (seen on 22.05,
    24.11 and 26.05 with the flags unset).
    """
    text = _stdout(commented_history_argv(name, user, since))
    found = []
    for row in split_records(text, COMMENT_SACCT_COLUMNS, what="sacct"):
        if "." in row["display_id"]:
            continue
        array = row["display_id"].split("_", 1)[0]
        found.append(
            Commented(
                job_id=array if array.isdigit() else row["job_id"],
                name=row["name"],
                state=row["state"].split()[0] if row["state"] else "",
                comment=row["comment"],
                submit_time=parse_time(row["submit_time"]),
                submit_line=row["submit_line"],
            )
        )
    return found
