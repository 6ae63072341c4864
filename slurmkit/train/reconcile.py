"""What a killed or unanswered train command left open, found out and recorded.

Every change to a train writes an intent to the train's journal first (what it will
do, with a token), then acts, then writes the outcome (:mod:`slurmkit.journal`). A
``kill -9``, cron's SIGTERM or a hung slurmctld between "acted" and "recorded" leaves
an intent without an outcome. Before anything else, every train command (and
``train status``) asks Slurm what really happened to each open intent and records
it here:

- ``start``/``extend``: is a job carrying ``--comment=slurmkit:<token>`` queued (squeue,
  then accounting)? Then its array is adopted into ``train.json``, so ``status`` shows
  it and ``stop`` cancels it; an orphan is never left running unseen. "Not there" is
  asked again for a window first: a woken controller may answer before it runs the
  sbatch in its backlog.
- ``hold``/``release``/``stop``: the arrays' state in the queue says whether it was done.
- ``switch``: where ``current`` points now; ``kill-switch``/``save-switch``: whether the
  file exists; ``restart-run``: whether the cancelled task is still running.

An intent Slurm cannot answer for (the controller still hung) stays open, and the
next command asks again. The caller holds the train's lock: a command holding it is
alive, so an open intent seen under the lock was left by one that died (the kill
switch, which never waits for the lock, is the exception: its live pid is skipped).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from slurmkit.errors import SlurmError, SlurmkitError, UsageError
from slurmkit.files import read_bounded
from slurmkit.journal import Entry, JournalProblem, comment_for
from slurmkit.journal import read as read_journal
from slurmkit.slurm import query, recheck
from slurmkit.train.state import (
    ArrayRecord,
    TrainDir,
    TrainState,
    current_user,
    progress,
)

# A job stays in squeue (finished ones too, with --states=all) for MinJobAge after it
# ends (300 s by default), so for an intent younger than this an empty squeue answer
# is the whole truth; an older one is looked up in accounting too.
SQUEUE_REMEMBERS = 60.0
# A command line in /proc is at most ARG_MAX (2 MiB with the usual 8 MiB stack).
PROC_MAX_BYTES = 4 * 1024 * 1024
# sacct's Submit may be a little before the intent's whole-second timestamp.
_SUBMIT_SLACK = timedelta(seconds=2)


def begin(train: TrainDir, action: str, token: str | None = None, **details: object) -> str:
    """Journal the intent of ``action`` before acting; returns its token.

    Raises :class:`JournalProblem` (exit 2) when the journal could not take it (full,
    read-only, missing folder): the caller must then do nothing at all.
    """
    journal = train.journal
    journal.check_writable()
    return _intent(train, action, token, details)


def _intent(train: TrainDir, action: str, token: str | None, details: dict[str, object]) -> str:
    return train.journal.intent(
        action,
        token,
        user=current_user(),
        pid=os.getpid(),
        host=socket.gethostname(),
        **details,
    )


def begin_anyway(train: TrainDir, action: str, **details: object) -> tuple[str | None, str]:
    """(token, "") when the intent was journaled, else (None, why): the caller acts anyway.

    Stopping always works (issue 29): a stop, a hold and the kill switch act even when
    the journal cannot take their intent (a training filling the disk, a read-only
    folder), and say "not journaled". Nothing is lost: the switch file is its own record,
    and a stop or a hold is read back from the queue. So no space check first: the
    write itself is the check (a short one is cut back).
    """
    try:
        return _intent(train, action, None, details), ""
    except JournalProblem as exc:
        return None, str(exc)


def finish(
    train: TrainDir, token: str | None, action: str, result: str, **details: object
) -> str | None:
    """Journal the outcome; a notice (not an error) if that fails, since the change is made.

    The intent stays open then, and the next command reconciles it from Slurm's answer.
    ``token`` None: the intent was not journaled (:func:`begin_anyway`), nothing to close.
    """
    if token is None:
        return None
    try:
        train.journal.outcome(token, action, result, **details)
    except JournalProblem as exc:
        return f"the outcome was not journaled ({exc}); the next train command checks it again"
    return None


# ---------------------------------------------------------------- finding a submission


@dataclass(frozen=True)
class Lookup:
    """The arrays carrying a token; ``answered`` False: Slurm could not say (``why``).

    ``maybe``: arrays of the train's name that may carry it, but whose token cannot be
    read back (the controller has forgotten them, and accounting keeps neither their
    comment nor their submit line). They are never adopted on their own: the intent stays
    open until a person settles it (``slurmkit train settle``).
    """

    job_ids: tuple[str, ...]
    answered: bool
    why: str = ""
    maybe: tuple[str, ...] = ()


@dataclass(frozen=True)
class Found:
    """One reading of the queue and accounting for a token (see :func:`_carrying`)."""

    proven: tuple[str, ...] = ()
    maybe: tuple[str, ...] = ()


def _parse_time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _age(when: datetime | None) -> float | None:
    """Seconds since ``when``, a parsed journal time (None when it did not parse)."""
    return (datetime.now(when.tzinfo) - when).total_seconds() if when else None


def find_submission(name: str, token: str, since: str, known: Sequence[str] = ()) -> Lookup:
    """The arrays of ``name`` (the caller's) that carry ``token``'s comment: one answer.

    For a submission that may still sit in a woken controller's backlog, use
    :func:`find_submission_again`: this one takes the first answer as the truth.
    """
    progress(f"asking squeue for a job of train {name} with --comment={comment_for(token)}")
    try:
        found = _carrying(name, token, since, known)
    except SlurmError as exc:
        return Lookup((), False, f"{exc}")
    return Lookup(found.proven, True, maybe=found.maybe)


def find_submission_again(
    name: str, token: str, since: str, known: Sequence[str] = (), *, silent_sbatch: bool
) -> Lookup:
    """Like :func:`find_submission`, but "absent" is read again for the whole window.

    slurmctld woken from SIGSTOP may answer squeue before it runs the sbatch still in its
    backlog (seen on 25.11): the first "no such job" is no proof that nothing will be
    queued. So a job carrying the token ends the wait at once, and absence is believed
    only after ``recheck.window()`` seconds of asking.

    ``silent_sbatch``: the caller's own sbatch just got no answer (the stderr line says
    so); silences are retried in the same window too, so a controller that wakes during
    it still gets the truthful answer (at most the window plus one MessageTimeout).
    Otherwise (settling an older intent) a silence is "unknown" at once: the intent stays
    open for the next command, and `train status` on a hung controller stays one timeout.
    """
    comment = comment_for(token)
    within = recheck.window()
    what = f"the queue for a job of train {name} with --comment={comment}"
    if not silent_sbatch:
        progress(
            f"asking {what}; absent is asked again for up to {within:g} s "
            "(a controller that was hung may still queue it)"
        )

    found, error = recheck.read_again(
        lambda: _carrying(name, token, since, known),
        what=what,
        notify=progress if silent_sbatch else None,
        until=_proven,  # absent may only mean "not processed yet": look for the whole window
        retry_silence=silent_sbatch,
    )
    if found is None:
        return Lookup((), False, f"{error}")
    return Lookup(found.proven, True, maybe=found.maybe)


def _carrying(name: str, token: str, since: str, known: Sequence[str]) -> Found:
    """The arrays of ``name`` proven to carry ``token``, else those that may.

    Proof is the token read back: the comment squeue shows (it keeps finished jobs for
    MinJobAge), then, for an intent older than that, accounting's comment (stored with
    ``AccountingStoreFlags=job_comment``) or the ``--comment=`` word of its submit line
    (stored by every Slurm since 21.08). A job's name proves nothing: another folder's
    train may have the same one (issue 29: a project's `train stop` cancelled another
    project's array, adopted by name). An array whose comment or submit line carries
    another token is never this intent's; one whose token cannot be read back at all,
    submitted since the intent, is only a *maybe*. Raises :class:`SlurmError` when Slurm
    does not answer.
    """
    comment = comment_for(token)
    user = str(os.getuid())
    jobs = query.commented_jobs(name, user)
    ids = _ids(j.job_id for j in jobs if j.comment == comment)
    if ids:
        return Found(ids)
    when = _parse_time(since)
    age = _age(when)
    if age is not None and age < SQUEUE_REMEMBERS:
        return Found()
    start = (when - timedelta(minutes=1)) if when else since
    history = query.commented_history(name, user, start)
    ids = _ids(h.job_id for h in history if _carries(h, comment))
    if ids:
        return Found(ids)
    # squeue shows the comment of every job it still knows: none of those is ours
    ruled_out = {j.job_id for j in jobs} | {h.job_id for h in history if _foreign(h)}
    ruled_out.update(known)
    maybe = _ids(
        h.job_id
        for h in history
        if h.job_id not in ruled_out
        and (when is None or (h.submit_time is not None and h.submit_time >= when - _SUBMIT_SLACK))
    )
    return Found((), maybe)


def _proven(found: Found | None) -> bool:
    return found is not None and bool(found.proven)


def _ids(job_ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(job_ids))


def _comment_words(submit_line: str) -> list[str]:
    """The ``--comment=`` words of an sbatch command line as accounting stores it."""
    return [w for w in submit_line.split() if w.startswith("--comment=")]


def _carries(record: query.Commented, comment: str) -> bool:
    return record.comment == comment or f"--comment={comment}" in _comment_words(record.submit_line)


def _foreign(record: query.Commented) -> bool:
    """Read back, and not ours: a comment, or a submit line's ``--comment=``, of its own.

    (Called only once :func:`_carries` said no: every sbatch a train makes carries its
    token, so any other comment is another submission's.)
    """
    return bool(record.comment) or bool(_comment_words(record.submit_line))


# ---------------------------------------------------------------- reconcile


def reconcile(train: TrainDir, skip: Collection[str] = ()) -> list[str]:
    """Settle every open intent of ``train`` from Slurm's answer; one line per intent.

    The caller holds the train's lock. An intent that cannot be settled now stays open.
    ``skip``: tokens of intents this command has already asked Slurm about.
    """
    lines: list[str] = []
    for entry in train.journal.open_intents():
        handler = _HANDLERS.get(entry.action)
        switch = entry.action.startswith(("kill-switch", "save-switch"))
        if handler is None or entry.token in skip or (switch and _alive(entry)):
            continue
        what = f"`train {entry.action}` of {entry.time} (killed or unanswered)"
        try:
            lines.append(f"train {train.name}: {handler(train, entry, what)}")
        except SlurmkitError as exc:
            lines.append(f"train {train.name}: could not settle the {what}: {exc}")
    return lines


def _alive(entry: Entry) -> bool:
    """Whether the command that wrote ``entry`` still runs (same host, pid still slurmkit's)."""
    pid = entry.details.get("pid")
    if entry.details.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    try:
        cmdline = read_bounded(f"/proc/{pid}/cmdline", what="cmdline", max_bytes=PROC_MAX_BYTES)
    except (OSError, SlurmkitError):
        return False
    return b"slurmkit" in cmdline


def _submission(train: TrainDir, entry: Entry, what: str) -> str:
    state = train.load_trusted() if train.has_record() else None
    known = state.array_ids if state else []
    found = find_submission_again(train.name, entry.token, entry.time, known, silent_sbatch=False)
    comment = comment_for(entry.token)
    if not found.answered:
        return (
            f"the {what} may have queued an array (--comment={comment}), and Slurm does not "
            f"answer ({found.why}); run `slurmkit train status {train.name}` again once it does"
        )
    if not found.job_ids and found.maybe:
        return unproven(train, found.maybe, what)
    if not found.job_ids:
        _close(train, entry, "failed", why="no job carries its token")
        return f"the {what} queued nothing (no job carries --comment={comment}): nothing to adopt"
    new = [j for j in found.job_ids if j not in known]
    if new:
        adopt(train, state, entry, new)
    _close(train, entry, "done", job_id=found.job_ids[0], adopted=bool(new))
    if not new:
        return f"the {what} was done: array {found.job_ids[0]} is already in the record"
    return (
        f"array {', '.join(new)} of the {what} was queued: adopted into {train.state_file} "
        f"(`slurmkit train stop {train.name}` stops it like the rest)"
    )


def unproven(train: TrainDir, maybe: Sequence[str], what: str) -> str:
    """The line for arrays that may be the train's: the intent stays open, a person decides."""
    arrays = ", ".join(maybe)
    return (
        f"unknown: array {arrays} may be this train's: the {what} may have queued it, and "
        "its token cannot be read back (Slurm has forgotten the job, and accounting keeps "
        f"neither its comment nor its submit line). Look with `sacct -X -j {maybe[0]} "
        "--format=JobID,Submit,WorkDir,SubmitLine`, then `slurmkit train settle "
        f"{train.name} --adopt {maybe[0]}` if it is, or `--none` if it is not; until then "
        "the intent stays open (no `extend`, no second `start`)"
    )


def queued_by(train: TrainDir, tokens: Collection[str]) -> list[str]:
    """The arrays the intents ``tokens`` are now recorded as having queued (outcome done).

    A retried ``extend`` asks this of the extend intents its own settling closed: the
    earlier, unanswered extend's array is the extension asked for, not a reason for two.
    """
    found = []
    for entry in read_journal(train.journal.path).entries:
        job_id = entry.details.get("job_id")
        done = entry.kind == "outcome" and entry.details.get("result") == "done"
        if done and entry.token in tokens and isinstance(job_id, str):
            found.append(job_id)
    return found


def adopt(train: TrainDir, state: TrainState | None, entry: Entry, job_ids: Sequence[str]) -> None:
    """Record arrays an interrupted start/extend queued, so every command sees them."""
    d = entry.details
    runs = d.get("runs") if isinstance(d.get("runs"), int) else 0
    after = d.get("after") if isinstance(d.get("after"), str) else None
    if state is None:
        state = TrainState(
            name=train.name,
            created=entry.time,
            workdir=str(d.get("workdir", "")),
            script=str(d.get("script", "")),
            header=[str(w) for w in d.get("header", [])],
            extra=[str(w) for w in d.get("extra", [])],
        )
    for job_id in job_ids:
        state.arrays.append(
            ArrayRecord(job_id=job_id, runs=int(runs or 0), submitted=entry.time, after=after)
        )
        state.note(
            "adopt", f"array {job_id}, {runs} runs, queued by the {entry.action} of {entry.time}"
        )
    train.save(state)


def _close(train: TrainDir, entry: Entry, result: str, **details: object) -> None:
    train.journal.outcome(entry.token, entry.action, result, reconciled=True, **details)


def _note(train: TrainDir, what: str, detail: str) -> None:
    state = train.load_trusted()
    state.note(what, detail)
    train.save(state)


def _switch(train: TrainDir, entry: Entry, what: str) -> str:
    new, old = entry.details.get("new"), entry.details.get("old")
    target = train.target()
    if target == new:
        _note(train, "switch", f"{old} -> {new} (recorded after the command was interrupted)")
        _close(train, entry, "done")
        return f"the {what} was done: {train.current} -> {new}; now recorded"
    _close(train, entry, "failed", current=target)
    return f"the {what} was not done: {train.current} -> {target or 'missing'}"


def queue_state(arrays: Sequence[str], action: str, now: bool = False) -> bool | None:
    """Whether the queue shows ``action`` (hold, release, stop) done on ``arrays``.

    None: nothing left to judge by (no pending run any more). Raises SlurmError when
    squeue does not answer.
    """
    jobs = query.jobs(job_ids=list(arrays)) if arrays else []
    if action == "stop":
        running = [j for j in jobs if j.is_running or j.state == "COMPLETING"]
        return not [j for j in jobs if j.is_pending] and not (now and running)
    pending = [j for j in jobs if j.is_pending]
    if not pending:
        return None
    held = all(j.held for j in pending)
    return held if action == "hold" else not any(j.held for j in pending)


def _queue_action(train: TrainDir, entry: Entry, what: str) -> str:
    arrays = [str(a) for a in entry.details.get("arrays", [])]
    try:
        done = _queue_state_settled(entry, arrays)
    except SlurmError as exc:
        return f"the {what} is unknown: squeue does not answer ({exc}); asked again next time"
    if done is None:
        _close(train, entry, "moot")
        return f"the {what} no longer matters: no run of array {', '.join(arrays)} is pending"
    if done:
        _note(train, entry.action, f"arrays {', '.join(arrays)} (recorded after an interruption)")
        _close(train, entry, "done")
        return f"the {what} was done (array {', '.join(arrays)}); now recorded"
    _close(train, entry, "failed")
    return (
        f"the {what} was not done (array {', '.join(arrays)}): run "
        f"`slurmkit train {entry.action} {train.name}` again"
    )


def _queue_state_settled(entry: Entry, arrays: Sequence[str]) -> bool | None:
    """:func:`queue_state` for a killed or unanswered hold/release/stop.

    A young intent's "not done" is read again for the window: a controller woken from a
    hang may answer squeue before it runs the scontrol still in its backlog, and "failed,
    run it again" would then be untrue. An old intent's first answer is the truth, and
    a silence is "unknown" at once (the intent stays open), as for a submission.
    """
    now = bool(entry.details.get("now"))
    age = _age(_parse_time(entry.time))
    if age is None or age > SQUEUE_REMEMBERS:
        return queue_state(arrays, entry.action, now)
    progress(
        f"asking the queue whether the {entry.action} was done; 'not yet' is asked again for "
        f"up to {recheck.window():g} s (a controller that was hung may still do it)"
    )
    done, error = recheck.read_again(
        lambda: queue_state(arrays, entry.action, now),
        what=f"the queue for the {entry.action}",
        until=lambda d: d is not False,
        retry_silence=False,
    )
    if error is not None:
        raise error
    return done


def _kill_switch(train: TrainDir, entry: Entry, what: str) -> str:
    path = train.save_switch if entry.action.startswith("save-switch") else train.kill_switch
    on = path.exists()
    wanted = entry.action.endswith(" on")
    done = on == wanted
    _close(train, entry, "done" if done else "failed")
    return f"the {what} was {'done' if done else 'not done'}: the switch is {'on' if on else 'off'}"


def _restart_run(train: TrainDir, entry: Entry, what: str) -> str:
    """Was the running task cancelled? Gone from the queue, or ending: done."""
    task = str(entry.details.get("task", ""))
    try:
        jobs = query.jobs(job_ids=[task]) if task else []
    except SlurmError as exc:
        return f"the {what} is unknown: squeue does not answer ({exc}); asked again next time"
    still = [j for j in jobs if j.display_id == task and (j.is_running or j.is_pending)]
    if still:
        _close(train, entry, "failed")
        return (
            f"the {what} was not done: {task} is still {still[0].state}; run "
            f"`slurmkit train restart-run {train.name}` again"
        )
    _note(train, "restart-run", f"cancelled {task} (recorded after an interruption)")
    _close(train, entry, "done")
    return f"the {what} was done: {task} is no longer running; now recorded"


# ---------------------------------------------------------------- settled by a person


def settle_by_hand(train: TrainDir, adopt_id: str | None, dry_run: bool) -> list[str]:
    """A person's answer for open start/extend intents whose array cannot be proven.

    ``adopt_id``: this array is the train's (adopted for the intent it may belong to);
    None: none of the arrays that may be is (the intents are closed as having queued
    nothing). Such arrays are ones Slurm has forgotten, so finished: the answer changes
    the train's history, never what runs. An intent Slurm can now prove is settled by
    the proof, whatever the answer; one Slurm does not answer for is left open. The
    caller holds the lock (``dry_run``: only says what it would do).
    """
    state = train.load_trusted() if train.has_record() else None
    known = state.array_ids if state else []
    intents = [e for e in train.journal.open_intents() if e.action in ("start", "extend")]
    if not intents:
        raise UsageError(f"train {train.name}: no open start or extend: nothing to settle")
    lines = []
    matched = False
    for entry in intents:
        what = f"`train {entry.action}` of {entry.time}"
        found = find_submission(train.name, entry.token, entry.time, known)
        if not found.answered:
            lines.append(f"the {what} is left open: Slurm does not answer ({found.why})")
        elif found.job_ids and dry_run:
            lines.append(f"the {what} is proven by its token: array {found.job_ids[0]}")
        elif found.job_ids:
            lines.append(_submission(train, entry, what))
        elif adopt_id is not None and adopt_id in found.maybe:
            matched = True
            lines.append(_adopt_by_hand(train, entry, what, adopt_id, dry_run))
            state = train.load_trusted() if not dry_run else state
            known = state.array_ids if state else known
        elif adopt_id is None:
            lines.append(_none_by_hand(train, entry, what, found.maybe, dry_run))
        else:
            lines.append(
                f"the {what} is left open: array {adopt_id} is not one that may be its "
                f"({', '.join(found.maybe) or 'none may be'})"
            )
    if adopt_id is not None and not matched:
        raise UsageError(
            f"train {train.name}: array {adopt_id} is not an array an open start or extend "
            f"may have queued; nothing adopted ({'; '.join(lines)})"
        )
    return lines


def _adopt_by_hand(train: TrainDir, entry: Entry, what: str, job_id: str, dry_run: bool) -> str:
    if dry_run:
        return f"would adopt array {job_id} for the {what} (said by hand)"
    state = train.load_trusted() if train.has_record() else None
    adopt(train, state, entry, [job_id])
    _close(train, entry, "done", job_id=job_id, adopted=True, by_hand=True)
    return f"array {job_id} adopted for the {what} (said by hand): now in {train.state_file}"


def _none_by_hand(
    train: TrainDir, entry: Entry, what: str, maybe: Sequence[str], dry_run: bool
) -> str:
    others = f" (not array {', '.join(maybe)})" if maybe else ""
    if dry_run:
        return f"would close the {what} as having queued nothing{others}"
    _close(train, entry, "failed", why=f"queued nothing{others}, said by hand", by_hand=True)
    return f"the {what} closed as having queued nothing{others} (said by hand)"


_HANDLERS: dict[str, Callable[[TrainDir, Entry, str], str]] = {
    "start": _submission,
    "extend": _submission,
    "switch": _switch,
    "hold": _queue_action,
    "release": _queue_action,
    "stop": _queue_action,
    "kill-switch on": _kill_switch,
    "kill-switch off": _kill_switch,
    "save-switch on": _kill_switch,
    "save-switch off": _kill_switch,
    "restart-run": _restart_run,
}
