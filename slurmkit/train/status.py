"""Where a train stands: what runs, what waits, when the next run starts, what it sources.

Three Slurm calls however long the train: ``squeue`` for the live tasks, ``squeue
--start`` for the scheduler's expected start, ``sacct`` for finished runs (their
state and exit code: a run whose script no longer parses shows here as FAILED
with exit 2 while the train goes on). Accounting being down costs only the
history, never the rest of the status: the finished runs are then *unknown*, never
"0". A run still in the queue (a run requeued after its node failed, pending again)
is counted there only, not also as a failed finished run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from slurmkit.errors import SlurmError
from slurmkit.files import refused
from slurmkit.slurm import query
from slurmkit.slurm.records import Job
from slurmkit.train import killswitch
from slurmkit.train.bashcheck import bash_syntax_error
from slurmkit.train.queue import Queue, queue_of
from slurmkit.train.state import TrainDir, TrainState, user_name
from slurmkit.trust import UntrustedPath, check_trusted


@dataclass(frozen=True)
class Run:
    """One run (array task) of the train."""

    id: str
    array: str
    task: int | None
    state: str
    exit_code: int | None = None
    signal: int | None = None
    start: datetime | None = None
    end: datetime | None = None
    elapsed: int | None = None
    time_limit: int | None = None
    nodes: str = ""

    @property
    def failed(self) -> bool:
        return self.state not in ("COMPLETED", "RUNNING", "PENDING", "COMPLETING")

    @classmethod
    def of(cls, job: Job) -> Run:
        task = job.array_task_id
        return cls(
            id=job.display_id,
            array=job.array_job_id or job.job_id,
            task=int(task) if task and task.isdigit() else None,
            state=job.state,
            exit_code=job.exit_code,
            signal=job.exit_signal,
            start=job.start_time,
            end=job.end_time if job.is_finished else None,
            elapsed=job.time_used,
            time_limit=job.time_limit,
            nodes=job.nodelist,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "array": self.array,
            "task": self.task,
            "state": self.state,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "elapsed_s": self.elapsed,
            "time_limit_s": self.time_limit,
            "nodes": self.nodes,
            "failed": self.failed,
        }


@dataclass
class TrainStatus:
    name: str
    path: str
    state: str
    arrays: list[dict[str, Any]]
    total_runs: int
    running: Run | None
    pending: int
    held: bool
    pending_reason: str | None
    # Slurm's priority of the waiting runs: with multifactor's age factor it shows that a
    # released train kept its queue age (0 while held).
    pending_priority: int | None
    next_start: datetime | None
    next_start_note: str
    next_script: str | None
    next_script_exists: bool
    next_script_error: str | None
    kill_switch: killswitch.SwitchState
    # None when accounting did not answer: unknown, not "none finished".
    finished: list[Run] | None = field(default_factory=list)
    never_ran: int = 0
    notices: list[str] = field(default_factory=list)
    last_event: str = ""
    # Who last pointed ``current`` (the link's owner) and when: in a folder teammates
    # can write, the record's events do not prove who re-pointed it.
    current_changed_by: dict[str, Any] | None = None
    current_changed_at: str | None = None
    # None when the next script passes the wrapper's run-time check, else why not.
    next_script_trusted: str | None = None

    @property
    def failed(self) -> list[Run]:
        return [r for r in self.finished or [] if r.failed]

    @property
    def accounting(self) -> str:
        return "unavailable" if self.finished is None else "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "state": self.state,
            "arrays": self.arrays,
            "total_runs": self.total_runs,
            "running": self.running.to_json() if self.running else None,
            "pending": self.pending,
            "held": self.held,
            "pending_reason": self.pending_reason,
            "pending_priority": self.pending_priority,
            "next_start": self.next_start.isoformat() if self.next_start else None,
            "next_start_note": self.next_start_note,
            "next_script": self.next_script,
            "next_script_exists": self.next_script_exists,
            "next_script_error": self.next_script_error,
            "kill_switch": self.kill_switch.to_json(),
            "finished": None if self.finished is None else [r.to_json() for r in self.finished],
            "accounting": self.accounting,
            "failed": [r.id for r in self.failed],
            "never_ran": self.never_ran,
            "notices": self.notices,
            "last_event": self.last_event,
            "current_changed_by": self.current_changed_by,
            "current_changed_at": self.current_changed_at,
            "next_script_trusted": self.next_script_trusted,
        }


def _finished_runs(state: TrainState, queue: Queue, notices: list[str]) -> list[Run] | None:
    """Finished runs from accounting; None (unknown) when accounting does not answer.

    A run that is in the queue now (requeued after a node failure: accounting shows its
    first attempt as NODE_FAIL or REQUEUED) is not finished: the queue counts it.
    """
    if not state.array_ids:
        return []
    try:
        jobs = query.sacct_jobs(job_ids=state.array_ids)
    except SlurmError as exc:
        notices.append(
            f"accounting unavailable: finished runs unknown ({exc}); showing what squeue knows"
        )
        return None
    queued = queue.ids()
    runs = [Run.of(j) for j in jobs if j.is_finished and j.array_task_id]
    runs = [r for r in runs if r.task is not None and r.array in state.array_ids]
    runs = [r for r in runs if r.id not in queued]
    return sorted(runs, key=lambda r: (state.array_ids.index(r.array), r.task or 0))


def _next_start(
    queue: Queue, live: list[str], running: Job | None, held: bool
) -> tuple[datetime | None, str]:
    pending_arrays = [a for a in live if queue.pending_runs(a)]
    if not pending_arrays:
        return None, "no run waiting"
    if held:
        return None, "held: not before `slurmkit train release`"
    expected = [j.start_time for j in query.pending_starts(pending_arrays[0]) if j.start_time]
    if expected:
        return min(expected), "expected by the scheduler (squeue --start)"
    if running is not None:
        end = f" (at the latest {running.end_time.isoformat()})" if running.end_time else ""
        return None, f"when {running.display_id} ends{end}"
    reasons = {j.reason for j in queue.of(pending_arrays[0]) if j.is_pending and j.reason}
    return None, f"not scheduled yet ({', '.join(sorted(reasons)) or 'no reason given'})"


def _state_word(live: list[str], running: Job | None, pending: int, held: bool) -> str:
    if not live:
        return "finished"
    if running is not None:
        return "running, rest held" if held and pending else "running"
    return "held" if held else "pending"


def gather(train: TrainDir) -> TrainStatus:
    """Everything ``train status`` shows, from the record, the queue and accounting."""
    state = train.load()
    queue = queue_of(state)
    live = queue.live(state)
    running_jobs = [j for a in live for j in queue.running(a)]
    running = running_jobs[0] if running_jobs else None
    pending_jobs = [j for j in queue.jobs if j.is_pending]
    pending = sum(queue.pending_runs(a) for a in live)
    held = bool(pending_jobs) and all(j.held for j in pending_jobs)
    reasons = sorted({j.reason for j in pending_jobs if j.reason})
    priorities = [j.priority for j in pending_jobs if j.priority is not None]
    notices: list[str] = []
    finished = _finished_runs(state, queue, notices)
    next_start, note = _next_start(queue, live, running, held)
    total = sum(a.runs for a in state.arrays)
    target = train.target()
    exists = train.current.exists()
    return TrainStatus(
        name=state.name,
        path=str(train.path),
        state=_state_word(live, running, pending, held),
        arrays=[
            {"job_id": a.job_id, "runs": a.runs, "after": a.after, "live": a.job_id in live}
            for a in state.arrays
        ],
        total_runs=total,
        running=Run.of(running) if running else None,
        pending=pending,
        held=held,
        pending_reason=", ".join(reasons) or None,
        pending_priority=max(priorities) if priorities else None,
        next_start=next_start,
        next_start_note=note,
        next_script=target,
        next_script_exists=exists,
        next_script_error=bash_syntax_error(train.current) if exists and live else None,
        kill_switch=killswitch.state(train),
        finished=finished,
        never_ran=max(total - len(finished) - len(running_jobs) - pending, 0)
        if finished is not None
        else 0,
        notices=notices,
        last_event=_last_event(state),
        **_current_link(train, exists),
    )


def _current_link(train: TrainDir, exists: bool) -> dict[str, Any]:
    """Who last pointed ``current`` and when, and whether its script passes the run-time check.

    The check is the wrapper's, made for the train's owner (the uid its runs have).
    """
    changed = train.current_changed()
    if changed is None:
        return {}
    uid, mtime = changed
    problem = None
    if exists:
        try:
            check_trusted(os.path.realpath(train.current), what="script", uid=train.owner())
        except UntrustedPath as exc:
            problem = str(exc)
        except OSError as exc:  # a folder above it the caller cannot look into
            problem = str(refused(exc, f"check {exc.filename}"))
    return {
        "current_changed_by": {"uid": uid, "user": user_name(uid)},
        "current_changed_at": datetime.fromtimestamp(mtime).astimezone().isoformat("T", "seconds"),
        "next_script_trusted": problem,
    }


def _last_event(state: TrainState) -> str:
    if not state.events:
        return ""
    event = state.events[-1]
    return f"{event.what} by {event.user} at {event.at}" + (
        f" ({event.detail})" if event.detail else ""
    )
