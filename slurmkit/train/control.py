"""Changing a running train: hold, release, stop, extend, switch, restart-run.

Every change is planned first (the Slurm argv it will run, what it means for the
train) so ``--dry-run`` prints exactly what a real run does. Only arrays still in
the queue are touched; a train whose arrays all finished is reported as such.

Hold and release act on the array id: Slurm then holds every task that has not
started, while the running task keeps running. Slurm allows that only to the
job's owner, operators and admins (jobs have no group ownership); the refusal is
explained with the way out that works for teammates: the kill switch.

Plan under the lock (issue 29): a change takes the train's lock first, then settles what
a command that died since left open, re-reads ``train.json`` and the queue, and plans
from that; a dry run (the preview a terminal user is shown) plans without the lock, and
is never what gets acted on. Two ``extend`` at once, with squeue answering 2 s late,
planned both after the same array when the queue was read before the lock.

Intent first (issue 22): under the train's lock, each change journals what it will do
(:func:`slurmkit.train.reconcile.begin`; a journal that cannot take it means nothing is
done, except for a hold or a stop: stopping always works, "not journaled"), then acts,
then records ``train.json`` and the outcome. A Slurm call that gets no answer is checked
against the queue before the answer is given; a record that cannot be written after the
change was made is reported as such (exit 1), never as a failure of the change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from slurmkit import faultpoint
from slurmkit.errors import (
    EXIT_FINDINGS,
    ControllerUnreachable,
    EnvironmentProblem,
    PermissionDenied,
    SlurmError,
    SlurmkitError,
    UsageError,
)
from slurmkit.sbatch.header import SbatchHeader, merged, parse_words, read_header
from slurmkit.slurm import query, recheck
from slurmkit.train import reconcile, rules
from slurmkit.train import submit as train_submit
from slurmkit.train.bashcheck import bash_syntax_error
from slurmkit.train.compare import Difference, compare, unified
from slurmkit.train.lintgate import lint_gate
from slurmkit.train.queue import Queue, queue_of
from slurmkit.train.report import Report
from slurmkit.train.state import TrainDir, TrainState, progress


class SwitchRefused(UsageError):
    """The new script asks for resources the running array was not submitted with."""

    def __init__(self, message: str, differences: list[Difference], diff: list[str]) -> None:
        super().__init__(message)
        self.differences = differences
        self.diff = diff


def _finished(state: TrainState, what: str) -> UsageError:
    ids = ", ".join(state.array_ids) or "none"
    return UsageError(
        f"train {state.name}: already finished (array {ids}: no run left in the queue); "
        f"nothing to {what} (see `slurmkit train status {state.name}`)"
    )


def _explain_denied(exc: PermissionDenied, state: TrainState, queue: Queue, array: str) -> NoReturn:
    owners = sorted({j.user for j in queue.of(array) if j.user})
    owner = f"belongs to {', '.join(owners)}" if owners else "is not yours"
    raise PermissionDenied(
        f"train {state.name}: Slurm refused ({exc}): array {array} {owner}, and only a job's "
        "owner, a Slurm operator or an admin may hold, release or cancel it (Slurm has no "
        f"group ownership). A teammate can still stop it: `slurmkit train kill-switch on "
        f"{state.name}` makes every remaining run exit at once",
        exc.argv,
        exc.returncode,
        exc.stderr,
    ) from exc


# ---------------------------------------------------------------- hold / release


@dataclass(frozen=True)
class _Live:
    """The train as read for one plan: its record, the queue, its arrays still queued."""

    state: TrainState
    queue: Queue
    live: list[str]


def _read_live(train: TrainDir, what: str) -> _Live:
    """Record and queue read afresh (under the lock when acting); a finished train is refused."""
    rules.must_exist(train)
    state = train.load_trusted()
    queue = queue_of(state)
    live = queue.live(state)
    if not live:
        raise _finished(state, what)
    return _Live(state, queue, live)


def _settle_again(train: TrainDir, settled: Collection[str]) -> None:
    """Under the lock, before planning: settle what a command that died since left open.

    ``settled``: the tokens this command already asked Slurm about (and could not
    settle) before it took the lock; asking again would cost another timeout.
    """
    for line in reconcile.reconcile(train, skip=settled):
        progress(line)


def _hold_or_release(
    train: TrainDir, dry_run: bool, action: str, settled: Collection[str] = ()
) -> Report:
    call: Callable[[str], query.ControlResult] = query.hold if action == "hold" else query.release
    build = query.hold_argv if action == "hold" else query.release_argv
    if dry_run:
        seen = _read_live(train, action)
        report = Report(seen.state.name, action, True, [build(a) for a in seen.live])
        report.lines = [_effect(seen.queue, a, action, would=True) for a in seen.live]
        return report
    with train.locked():
        _settle_again(train, settled)
        seen = _read_live(train, action)
        state, queue, live = seen.state, seen.queue, seen.live
        report = Report(state.name, action, False, [build(a) for a in live])
        token, unjournaled = _begin(train, action, arrays=live)
        for array in live:
            try:
                result = call(array)
            except PermissionDenied as exc:
                reconcile.finish(train, token, action, "failed", why=str(exc))
                _explain_denied(exc, state, queue, array)
            except ControllerUnreachable as exc:
                _check_unanswered(train, token, action, [array], exc, report)
                result = query.ControlResult(tuple(build(array)))
            report.lines.append(_effect(queue, array, action, would=False, result=result))
        faultpoint.reached(f"train.{action}.done")
        _record(train, token, action, f"arrays {', '.join(live)}", report)
        if token is None:
            report.unrecorded.append(f"the {action} was done, but not journaled ({unjournaled})")
    return report


def _begin(train: TrainDir, action: str, **details: object) -> tuple[str | None, str]:
    """The intent; a hold acts even when it cannot be journaled (stopping always works,
    issue 29), a release does not (nothing was done, exit 2)."""
    if action == "hold":
        return reconcile.begin_anyway(train, action, **details)
    return reconcile.begin(train, action, None, **details), ""


def _check_unanswered(
    train: TrainDir,
    token: str | None,
    action: str,
    arrays: list[str],
    exc: ControllerUnreachable,
    report: Report,
    now: bool = False,
) -> None:
    """A hold, release or cancel that got no answer: the queue says whether it was done.

    Done: a notice, and the command goes on as if answered. Not done: the original
    error, but only after the whole window (``recheck.read_again``): a controller woken
    from a hang may answer squeue before it runs the request still in its backlog. The
    queue silent too: unknown, said so; the intent stays open for the next command
    (``train status``) to settle.
    """
    done, again = recheck.read_again(
        lambda: reconcile.queue_state(arrays, action, now),
        what=f"the queue for array {', '.join(arrays)}",
        notify=progress,
        until=lambda answer: answer is not False,  # "not yet" may be the backlog: ask again
    )
    if again is not None:
        raise EnvironmentProblem(
            f"train {train.name}: {exc}; squeue does not answer either ({again}): whether "
            f"the {action} was done is unknown. `slurmkit train status {train.name}` checks "
            "again once slurmctld answers"
        ) from None
    if done is False:
        reconcile.finish(train, token, action, "failed", why=str(exc))
        raise exc
    report.notices.append(
        f"no answer from Slurm ({exc}), but the queue shows the {action} done "
        f"(array {', '.join(arrays)})"
    )


def _record(train: TrainDir, token: str | None, action: str, detail: str, report: Report) -> None:
    """Record a change that was made; failures become notices (the change stands, exit 1).

    The intent is closed only once the record is written (issue 29: a disk filling after
    restart-run's scancel closed it, and ``train.json`` never got the event): left open,
    the next command settles it from Slurm and writes the event then.
    """
    try:
        state = train.load_trusted()
        state.note(action, detail)
        train.save(state)
    except (OSError, SlurmkitError) as exc:
        kept = "; the next train command records it" if token else ""
        report.unrecorded.append(
            f"the {action} was done, but not recorded in {train.state_file} ({exc}){kept}"
        )
        return
    note = reconcile.finish(train, token, action, "done")
    if note:
        report.unrecorded.append(f"the {action} was done, but {note}")


def _effect(
    queue: Queue,
    array: str,
    action: str,
    *,
    would: bool,
    result: query.ControlResult | None = None,
) -> str:
    pending = queue.pending_runs(array)
    running = ", ".join(j.display_id for j in queue.running(array))
    verb = f"would {action}" if would else {"hold": "held", "release": "released"}[action]
    head = f"{verb} array {array}"
    if result is not None and not result.changed:
        return f"array {array}: nothing left to {action} (every run has finished)"
    effect = (
        f"{pending} pending run(s) will not start until released"
        if action == "hold"
        else f"{pending} pending run(s) may start again"
    )
    tail = f"; {running} keeps running" if running and action == "hold" else ""
    return f"{head}: {effect}{tail}"


def hold(train: TrainDir, dry_run: bool = False, settled: Collection[str] = ()) -> Report:
    """Hold every pending run of the train's live arrays (idempotent)."""
    return _hold_or_release(train, dry_run, "hold", settled)


def release(train: TrainDir, dry_run: bool = False, settled: Collection[str] = ()) -> Report:
    """Release what :func:`hold` held (idempotent)."""
    return _hold_or_release(train, dry_run, "release", settled)


# ---------------------------------------------------------------- stop


@dataclass(frozen=True)
class StopPlan:
    train: TrainDir
    state: TrainState
    queue: Queue
    live: list[str]
    now: bool

    @property
    def argv(self) -> list[str]:
        return query.cancel_argv(self.live, pending_only=not self.now)

    def effects(self) -> list[str]:
        lines = []
        for array in self.live:
            pending = self.queue.pending_runs(array)
            running = ", ".join(j.display_id for j in self.queue.running(array))
            line = f"array {array}: cancel {pending} pending run(s)"
            if running:
                line += f"; {'cancel' if self.now else 'let finish'} running {running}"
            lines.append(line)
        return lines


def plan_stop(train: TrainDir, now: bool) -> StopPlan:
    """What a stop would cancel now: the preview; :func:`stop` plans again under the lock."""
    rules.must_exist(train)
    state = train.load_trusted()
    queue = queue_of(state)
    return StopPlan(train, state, queue, queue.live(state), now)


def stop(
    train: TrainDir, now: bool, dry_run: bool = False, settled: Collection[str] = ()
) -> Report:
    """Cancel the pending runs (and the running one with ``now``); a finished train is a no-op.

    Planned under the lock; after cancelling, the record is read again and an array
    added to it meanwhile (a command that did not wait for the lock: another host on a
    file system without working locks) is cancelled too.
    """
    if dry_run:
        return _stop_report(plan_stop(train, now), dry_run=True)
    with train.locked():
        _settle_again(train, settled)
        plan = plan_stop(train, now)
        report = _stop_report(plan, dry_run=False)
        done: list[str] = []
        for _ in range(_STOP_ROUNDS):
            if not plan.live:
                break
            _cancel(plan, report)
            done += plan.live
            plan = _added_meanwhile(train, done, now)
            if plan.live:
                report.commands.append(plan.argv)
                report.lines += [f"{line} (added while stopping)" for line in plan.effects()]
    return report


# A record that keeps growing while it is being stopped is read again this many times.
_STOP_ROUNDS = 3


def _stop_report(plan: StopPlan, dry_run: bool) -> Report:
    report = Report(plan.state.name, "stop", dry_run)
    if not plan.live:
        report.lines.append("already finished: nothing to cancel")
        return report
    report.commands.append(plan.argv)
    report.lines = plan.effects()
    return report


def _cancel(plan: StopPlan, report: Report) -> None:
    """Journal, cancel and record one stop of ``plan.live``; the caller holds the lock."""
    train = plan.train
    token, unjournaled = reconcile.begin_anyway(train, "stop", arrays=plan.live, now=plan.now)
    try:
        query.cancel(plan.live, pending_only=not plan.now)
    except PermissionDenied as exc:
        reconcile.finish(train, token, "stop", "failed", why=str(exc))
        _explain_denied(exc, plan.state, plan.queue, plan.live[0])
    except ControllerUnreachable as exc:
        _check_unanswered(train, token, "stop", plan.live, exc, report, plan.now)
    faultpoint.reached("train.stop.cancelled")
    detail = f"arrays {', '.join(plan.live)}{' (--now)' if plan.now else ''}"
    _record(train, token, "stop", detail, report)
    if token is None:
        report.unrecorded.append(_read_back(plan, unjournaled))


def _read_back(plan: StopPlan, why: str) -> str:
    """A stop that could not be journaled: the queue is its record, read back once."""
    arrays = ", ".join(plan.live)
    try:
        done = reconcile.queue_state(plan.live, "stop")
    except SlurmError as exc:
        seen = f"the queue could not be read back ({exc})"
    else:
        seen = (
            f"the queue shows no pending run of array {arrays}"
            if done
            else f"the queue still shows pending runs of array {arrays}: "
            f"`slurmkit train stop {plan.state.name}` again"
        )
    return f"the stop was done, but not journaled ({why}); {seen}"


def _added_meanwhile(train: TrainDir, done: list[str], now: bool) -> StopPlan:
    """The record read again after cancelling: its arrays not cancelled yet, still queued."""
    state = train.load_trusted()
    new = [a for a in state.array_ids if a not in done]
    queue = Queue(query.jobs(job_ids=new) if new else [])
    return StopPlan(train, state, queue, [a for a in new if queue.of(a)], now)


# ---------------------------------------------------------------- extend


def extend(
    train: TrainDir,
    runs: int,
    dry_run: bool = False,
    exclude_list: Path | None = None,
    *,
    settled: Collection[str] = (),
    unanswered: Collection[str] = (),
) -> Report:
    """Append ``runs`` runs as a new array that starts after the train's last live array.

    The last array is read under the lock: two extends at once must chain, one after the
    other's array, never both after the same one. ``unanswered``: the extend intents
    that were open when this command began; one settled as queued is the extension
    asked for (a retry after no answer), and nothing more is submitted.
    """
    if dry_run:
        return _extend(train, runs, exclude_list, unanswered, act=False)
    with train.locked():
        _settle_again(train, settled)
        return _extend(train, runs, exclude_list, unanswered, act=True)


def _extend(
    train: TrainDir,
    runs: int,
    exclude_list: Path | None,
    unanswered: Collection[str],
    *,
    act: bool,
) -> Report:
    rules.must_exist(train)
    rules.no_unsettled_submission(train)
    queued = reconcile.queued_by(train, unanswered) if unanswered else []
    if queued:
        line = (
            f"array {', '.join(queued)} of the earlier, unanswered `train extend` is queued: "
            "not extending again (this extend's options were not used; extend again to add more)"
        )
        return Report(train.name, "extend", not act, lines=[line])
    seen = _read_live(train, "extend")
    last = seen.live[-1]
    ext = train_submit.extension(train, seen.state, runs, last, exclude_list)
    report = Report(seen.state.name, "extend", not act, [ext.argv])
    if not act:
        report.lines.append(
            f"would submit {runs} more run(s) after array {last} "
            f"({train.wrapper} on sbatch's stdin)"
        )
        return report
    done = train_submit.run_extension(ext, seen.state)
    report.notices.extend(done.notices)
    report.lines.append(f"submitted array {done.job_id}: {runs} more run(s) after array {last}")
    return report


# ---------------------------------------------------------------- switch


def check_switch(
    state: TrainState, new_script: Path, new_header: SbatchHeader | None = None
) -> list[str]:
    """Refuse ``new_script`` if it needs other resources; return notices for the rest.

    ``new_header``: the script's, when the caller has read it already.
    """
    new_header = read_header(new_script) if new_header is None else new_header
    if not new_header.directives:
        return [f"{new_script} has no #SBATCH header: it runs with the train's resources"]
    kept = [d for d in new_header.directives if d.option not in ("array", "job-name")]
    submitted = SbatchHeader(tuple(parse_words(state.header, "recorded header")))
    new = merged(kept, parse_words(state.extra, "recorded extra options"))
    differences = compare(submitted, new)
    resources = [d for d in differences if d.resource]
    if resources:
        label = f"array {state.array_ids[0] if state.array_ids else '?'} (as submitted)"
        raise SwitchRefused(
            f"switch refused: {new_script} asks for other resources than train {state.name} "
            f"was submitted with ({'; '.join(d.describe() for d in resources)}); resources "
            "are fixed at submission: start a new train for them",
            resources,
            unified(resources, label, str(new_script)),
        )
    return [
        f"{new_script}: {d.describe()} differs from the train's and is ignored "
        "(the array's header is fixed at submission)"
        for d in differences
    ]


def switch(
    train: TrainDir,
    new_script: Path,
    dry_run: bool = False,
    force: bool = False,
    settled: Collection[str] = (),
) -> Report:
    """Point ``current`` at ``new_script``: the next run sources it.

    ``new_script`` must be the caller's, and is read once after that check; it must
    parse as bash and lint without errors (``force``: lint errors become a notice), like
    at ``train start``. The script is checked before the lock
    (the resources it is compared with are fixed at submission); whether the train
    still runs, and where ``current`` points, are read under it.
    """
    rules.must_exist(train)
    state = train.load_trusted()
    if dry_run and not queue_of(state).live(state):
        raise _finished(state, "switch")
    checked = train_submit.read_checked(new_script)
    notices = check_switch(state, new_script, checked.header)
    error = bash_syntax_error(new_script, checked.data)
    if error:
        raise UsageError(f"switch refused: {new_script} does not parse as bash: {error}")
    notices += lint_gate(new_script, "switch", force, checked.data)
    target = checked.path
    if dry_run:
        return _switch_report(train, state, target, notices, dry_run=True)
    with train.locked():
        _settle_again(train, settled)
        seen = _read_live(train, "switch")
        old = train.target()
        report = _switch_report(train, seen.state, target, notices, dry_run=False)
        token = reconcile.begin(train, "switch", old=old, new=str(target))
        try:
            train.point_to(target)
        except EnvironmentProblem as exc:
            reconcile.finish(train, token, "switch", "failed", why=str(exc))
            raise
        faultpoint.reached("train.switch.repointed")
        _record(train, token, "switch", f"{old} -> {target}", report)
    report.lines.append("the next run sources it; the running one keeps its script")
    return report


def _switch_report(
    train: TrainDir, state: TrainState, target: Path, notices: list[str], *, dry_run: bool
) -> Report:
    report = Report(state.name, "switch", dry_run, notices=notices)
    verb = "would point" if dry_run else "pointed"
    report.lines.append(f"{verb} {train.current} -> {target} (was {train.target() or 'missing'})")
    return report


# ---------------------------------------------------------------- restart-run


class NothingRunning(SlurmkitError):
    """``restart-run`` found no running run: nothing was cancelled (exit 1, a finding)."""

    exit_code = EXIT_FINDINGS


def restart_run(
    train: TrainDir, dry_run: bool = False, force: bool = False, settled: Collection[str] = ()
) -> Report:
    """Cancel only the running run (``scancel ARRAY_N``): the next one sources ``current``.

    Never the array id: the seed's warning is that ``scancel JOBID`` kills the whole
    train. The script the next run will source is checked first (bash syntax, lint
    errors; ``force`` skips the lint), since restarting into a broken script wastes the
    run that was going on. No running run: :class:`NothingRunning`, nothing cancelled.
    The running run and the script are found under the lock.
    """
    if dry_run:
        return _restart_plan(train, force, dry_run=True).report
    with train.locked():
        _settle_again(train, settled)
        plan = _restart_plan(train, force, dry_run=False)
        report, task, array = plan.report, plan.task, plan.array
        token = reconcile.begin(train, "restart-run", task=task, array=array)
        try:
            query.cancel([task])
        except PermissionDenied as exc:
            reconcile.finish(train, token, "restart-run", "failed", why=str(exc))
            _explain_denied(exc, plan.seen.state, plan.seen.queue, array)
        except ControllerUnreachable as exc:
            _check_restart_unanswered(train, token, task, exc, report)
        faultpoint.reached("train.restart-run.cancelled")
        _record(train, token, "restart-run", f"cancelled {task}", report)
    return report


@dataclass(frozen=True)
class _RestartPlan:
    seen: _Live
    task: str
    array: str
    report: Report


def _restart_plan(train: TrainDir, force: bool, *, dry_run: bool) -> _RestartPlan:
    rules.must_exist(train)
    state = train.load_trusted()
    queue = queue_of(state)
    live = queue.live(state)
    running = [j for a in live for j in queue.running(a)]
    if not running:
        pending = sum(queue.pending_runs(a) for a in live)
        where = f"{pending} pending" if live else "the train has finished"
        raise NothingRunning(f"train {state.name}: no run is running ({where}): nothing cancelled")
    job = running[0]
    task, array = job.display_id, job.array_job_id or job.job_id
    if job.array_task_id is None or "_" not in task:
        raise UsageError(
            f"train {state.name}: the running job {task} is not a task of an array: "
            "refusing to cancel it (it may be the whole train)"
        )
    notices = _next_script_checked(train, force)
    if len(running) > 1:
        others = ", ".join(j.display_id for j in running[1:])
        notices.append(f"{others} also running: only {task} is cancelled")
    report = Report(state.name, "restart-run", dry_run, [query.cancel_argv([task])])
    report.notices = notices
    pending = queue.pending_runs(array) + sum(queue.pending_runs(a) for a in live if a != array)
    held = any(j.held for a in live for j in queue.of(a) if j.is_pending)
    verb = "would cancel" if dry_run else "cancelled"
    line = f"{verb} run {task} only (not array {array})"
    if not pending:
        line += "; no run is pending, so the train ends here (`slurmkit train extend` adds runs)"
    elif held:
        line += f"; the {pending} pending run(s) are held: the next starts after `train release`"
    else:
        line += f"; the next of {pending} pending run(s) sources {train.target() or 'current'}"
    report.lines.append(line)
    return _RestartPlan(_Live(state, queue, live), task, array, report)


def _next_script_checked(train: TrainDir, force: bool) -> list[str]:
    """The script ``current`` points to must parse, and lint without errors unless ``force``."""
    target = train.target()
    if target is None or not Path(target).is_file():
        raise UsageError(
            f"train {train.name}: {train.current} points to {target or 'nothing'}: the next "
            f"run would fail; `slurmkit train switch SCRIPT {train.name}` first"
        )
    error = bash_syntax_error(Path(target))
    if error:
        raise UsageError(f"restart refused: {target} does not parse as bash: {error}")
    return lint_gate(Path(target), "restart", force)


def _check_restart_unanswered(
    train: TrainDir, token: str, task: str, exc: ControllerUnreachable, report: Report
) -> None:
    """scancel got no answer: the queue says whether ``task`` still runs.

    "Still running" is read again for the whole window, as in :func:`_check_unanswered`.
    """

    def still_running() -> bool:
        return any(j.display_id == task and j.is_running for j in query.jobs(job_ids=[task]))

    running, again = recheck.read_again(
        still_running,
        what=f"the queue for {task}",
        notify=progress,
        until=lambda answer: not answer,
    )
    if again is not None:
        raise EnvironmentProblem(
            f"train {train.name}: {exc}; squeue does not answer either ({again}): whether "
            f"{task} was cancelled is unknown. `slurmkit train status {train.name}` checks "
            "again once slurmctld answers"
        ) from None
    if running:
        reconcile.finish(train, token, "restart-run", "failed", why=str(exc))
        raise exc
    report.notices.append(f"no answer from Slurm ({exc}), but {task} is no longer running")


# ---------------------------------------------------------------- settle by hand


def settle(train: TrainDir, adopt_id: str | None, dry_run: bool = False) -> Report:
    """Record a person's answer for an array Slurm cannot prove is the train's.

    ``adopt_id``: the array is the train's; None: none of them is. Acted on under the
    lock (a dry run only says what it would record).
    """
    if dry_run:
        return Report(
            train.name, "settle", True, lines=reconcile.settle_by_hand(train, adopt_id, True)
        )
    with train.locked():
        lines = reconcile.settle_by_hand(train, adopt_id, dry_run=False)
    return Report(train.name, "settle", False, lines=lines)
