"""Starting a train (``--array=1-N%1`` of the wrapper) and extending it with another array.

The wrapper's header is the training script's own ``#SBATCH`` header plus the extra
sbatch options, minus what the train sets itself (``--array``, ``--job-name``). A
script without a header, or without a node count, is refused: the array would run
with whatever the cluster defaults to, for 50 runs, with no way to change it later.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from slurmkit import faultpoint
from slurmkit.errors import (
    EnvironmentProblem,
    SlurmError,
    SlurmkitError,
    SlurmNotInstalled,
    UsageError,
)
from slurmkit.faulty import excluded
from slurmkit.files import read_bounded, refused, write_atomic
from slurmkit.grammar import idrange
from slurmkit.journal import comment_for, new_token
from slurmkit.sbatch.header import (
    MAX_SCRIPT_BYTES,
    HeaderOption,
    SbatchHeader,
    header_of,
    merged,
    parse_words,
    read_header,
)
from slurmkit.slurm import query, recheck
from slurmkit.slurm.submit import sbatch_argv, submit_text
from slurmkit.train import reconcile, wrapper
from slurmkit.train.bashcheck import bash_syntax_error
from slurmkit.train.lintgate import lint_gate
from slurmkit.train.state import (
    FILE_MODE,
    LOCK_WAIT,
    ArrayRecord,
    TrainDir,
    TrainState,
    check_name,
    now_text,
    progress,
    read_trusted,
)
from slurmkit.trust import UntrustedPath, check_trusted

_T = TypeVar("_T")

DEFAULT_RUNS = 50
# Options the train sets itself; in the script they are dropped with a notice,
# among the extra sbatch options they are refused with the train option to use.
_OWNED_IN_EXTRA = {
    "array": "--runs",
    "job-name": "--name",
    "dependency": "--after",
    "wrap": "a SCRIPT",
}


@dataclass(frozen=True)
class Started:
    """A started train; in a dry run ``state.arrays`` is empty and nothing exists on disk."""

    train: TrainDir
    state: TrainState
    notices: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    dry_run: bool = False
    # True when an earlier, interrupted `train start` had queued the array: nothing new
    # was submitted, the array was adopted.
    adopted: bool = False


@dataclass(frozen=True)
class Extension:
    """An ``extend``: the sbatch argv it runs (or would run) and, when run, the new array."""

    train: TrainDir
    options: list[str]
    after: str
    runs: int
    job_id: str | None = None
    token: str = ""
    notices: tuple[str, ...] = ()

    @property
    def argv(self) -> list[str]:
        """sbatch reads the wrapper on stdin: a file in a shared folder could be swapped."""
        return sbatch_argv(None, self.options)


def training_header(
    script: Path, extra: Sequence[str], header: SbatchHeader | None = None
) -> tuple[SbatchHeader, list[str], list[str]]:
    """(header for the wrapper, extra option words, notices) for ``script`` + ``extra``.

    ``header``: the script's, when the caller has read it already (see :func:`read_checked`).
    """
    header = read_header(script) if header is None else header
    if not header.directives:
        raise UsageError(
            f"{script}: no #SBATCH lines: a train takes its resources from the script's "
            "header (e.g. #SBATCH --nodes=1 and --time=...)"
        )
    extras = parse_words(list(extra), "extra sbatch options")
    for directive in extras:
        if directive.option in _OWNED_IN_EXTRA:
            raise UsageError(
                f"extra sbatch option --{directive.option}: use the train's "
                f"{_OWNED_IN_EXTRA[directive.option]} instead"
            )
    notices = [
        f"{script}: sbatch ignores #SBATCH on line{'s' if len(header.ignored_lines) > 1 else ''} "
        f"{', '.join(map(str, header.ignored_lines))} (after the first command, indented or "
        "not upper case): they are not part of the train's header"
    ][: bool(header.ignored_lines)]
    kept: list[HeaderOption] = []
    for directive in header.directives:
        if directive.option in ("array", "job-name"):
            notices.append(
                f"{script} {directive.where}: {directive.word} ignored: the train sets "
                f"{'--array=1-RUNS%1' if directive.option == 'array' else '--job-name=NAME'}"
            )
        else:
            kept.append(directive)
    full = merged(kept, extras)
    if not full.has("nodes"):
        raise UsageError(
            f"{script}: no --nodes in the #SBATCH header: say how many nodes every run "
            "of the train gets (it cannot change after submission)"
        )
    return full, [d.word for d in extras], notices


def default_name(script: Path, header: SbatchHeader | None = None) -> str:
    """The script's own ``--job-name``, else its file name without the suffix."""
    with contextlib.suppress(UsageError):
        name = (read_header(script) if header is None else header).value("job-name")
        if name:
            return name
    return script.name.split(".", 1)[0] or script.name


def trusted_script(script: Path) -> Path:
    """``script`` resolved, if only the caller (or root) can change it, and its folders.

    Every run of the train executes it as the caller: a script a teammate can edit or
    swap would run their code under the caller's name (issue 14, finding 7). The
    wrapper repeats this check at run time, against whatever ``current`` points to then.
    """
    if not script.exists():
        raise UsageError(f"{script}: no such file")
    try:
        return check_trusted(script.resolve(), what="training script")
    except OSError as exc:  # a folder above it that cannot be looked into
        why = refused(exc, f"check {exc.filename}")
        raise UntrustedPath(f"refusing training script {script}: {why}") from None
    except UntrustedPath as exc:
        raise _named(exc, script) from None


@dataclass(frozen=True)
class CheckedScript:
    """A training script whose owner was checked, read once after the check.

    Its header, ``bash -n`` and lint all look at these bytes: a file read again by path
    could be another one by then (issue 30).
    """

    path: Path  # resolved and trusted: what ``current`` will point to
    data: bytes
    header: SbatchHeader


def read_checked(script: Path) -> CheckedScript:
    """``script`` checked by :func:`trusted_script` first, then read once, bounded.

    The read's descriptor is checked again (a regular file, the caller's or root's,
    writable by nobody else), so a file swapped in after the path was checked is
    refused, not read.
    """
    target = trusted_script(script)
    try:
        data = read_bounded(
            target, what="training script", max_bytes=MAX_SCRIPT_BYTES, trusted_owner=True
        )
    except FileNotFoundError:
        raise UsageError(f"{script}: no such file") from None
    except UsageError as exc:
        raise _named(exc, script) from None
    return CheckedScript(target, data, header_of(data, str(script)))


def _named(exc: SlurmkitError, script: Path) -> SlurmkitError:
    """``exc`` naming the path the user gave, when it speaks of the file a link led to."""
    if str(script) in str(exc):
        return exc
    return type(exc)(f"{script}: {exc}")


def _check_after(after: str) -> None:
    if not idrange.is_job_id(after, tasks=False):
        raise UsageError(f"--after {after!r}: expected a job id such as 1234 or 1234_5")
    if not query.jobs(job_ids=[after]):
        raise UsageError(
            f"--after {after}: no such job in the queue (finished or unknown): "
            "nothing to wait for, start without --after"
        )


def start(
    script: Path,
    root: Path,
    *,
    runs: int = DEFAULT_RUNS,
    name: str | None = None,
    after: str | None = None,
    extra: Sequence[str] = (),
    dry_run: bool = False,
    exclude_list: Path | None = None,
    lock_wait: float = LOCK_WAIT,
    force: bool = False,
) -> Started:
    """Create the train's folder, render the wrapper, submit the array, record it.

    ``script`` must be the caller's (:func:`trusted_script`, checked before it is read,
    and read once: :func:`read_checked`), parse as bash and lint without errors
    (:mod:`.lintgate`); ``force`` lets lint errors through with a notice.

    Intent first: the train's journal gets the start (with a token) before sbatch runs,
    and sbatch carries ``--comment=slurmkit:<token>``. sbatch failing or getting no
    answer is then checked by that token before anything is decided: a queued array is
    recorded as the train's; the folder is removed only when Slurm says nothing was
    queued. A folder of the same name left by an interrupted start is reconciled, never
    submitted twice (see :func:`_existing`).

    ``dry_run`` makes every check and renders the wrapper, then creates and submits
    nothing. ``exclude_list`` (a faulty-node exclude list file; None: none): its nodes
    join the array's --exclude now, and each run adds the nodes listed since to the
    runs still pending (see :func:`keep_out`).
    """
    if runs < 1:
        raise UsageError(f"--runs {runs}: a train needs at least 1 run")
    checked = read_checked(script)
    header, extra_words, notices = training_header(script, extra, checked.header)
    error = bash_syntax_error(script, checked.data)
    if error:
        raise UsageError(f"{script} does not parse as bash: {error}")
    notices = [*notices, *lint_gate(script, "start", force, checked.data)]
    name = check_name(name or default_name(script, checked.header))
    train = TrainDir(root / name, lock_wait=lock_wait)
    if os.path.lexists(train.path) and (dry_run or not _resumable(train)):
        raise _clash(train, root)
    target = checked.path
    if after is not None:
        _check_after(after)
    sbatch_extra = [f"--dependency=afterany:{after}"] if after else []
    sbatch_extra += keep_out(header.words, exclude_list)
    more = wrapper_values(header.words, exclude_list)
    plan = _StartPlan(train, target, runs, header, extra_words, after, sbatch_extra, more, notices)
    if dry_run:
        wrapper.render(train, runs, header.words, more)  # a template fault shows here too
        state = TrainState(
            name=name,
            created=now_text(),
            workdir=os.getcwd(),
            script=str(target),
            header=header.words,
            extra=extra_words,
        )
        argv = sbatch_argv(None, [*sbatch_extra, f"--comment={comment_for('TOKEN')}"])
        return Started(train, state, notices, argv, dry_run=True)
    if os.path.lexists(train.path):
        return _existing(plan)
    made = _missing_folders(train.path)
    try:
        train.path.mkdir(parents=True)
    except FileExistsError:
        raise _clash(train, root) from None
    except OSError as exc:
        raise refused(exc, f"create {train.path}", EnvironmentProblem) from None
    locked = False
    try:
        with train.locked():
            locked = True
            try:
                return _submit_new(plan, created=True)
            except BaseException:
                _forget(train, made)  # under the lock: a start waiting for it finds no folder
                raise
    except BaseException:
        if not locked:
            _forget(train, made)
        raise


def _forget(train: TrainDir, made: Sequence[Path]) -> None:
    """Remove the folder of a start that queued nothing.

    Only reached before sbatch was asked (or when Slurm said nothing was queued):
    _submit_new turns every later failure into a kept folder and a clear line. Done under
    the lock, so a second start waiting for it never finds half a folder.
    """
    if not train.has_record() and not _open_start(train):
        shutil.rmtree(train.path, ignore_errors=True)
        _remove_empty(made)


def _missing_folders(path: Path) -> list[Path]:
    """The folders ``mkdir(parents=True)`` is about to create for ``path``, deepest first."""
    missing = []
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            break
        missing.append(folder)
    return missing


def _remove_empty(folders: Sequence[Path]) -> None:
    """Remove the folders a start that queued nothing made (``.slurmkit/trains``), if empty."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


@dataclass(frozen=True)
class _StartPlan:
    train: TrainDir
    target: Path
    runs: int
    header: SbatchHeader
    extra_words: list[str]
    after: str | None
    sbatch_extra: list[str]
    more: dict[str, object]
    notices: list[str]


def _clash(train: TrainDir, root: Path) -> UsageError:
    return UsageError(
        f"train {train.name!r} already exists in {root}: pick another --name "
        f"(or remove {train.path} once it has finished)"
    )


def _resumable(train: TrainDir) -> bool:
    """A folder a start may go on with: a train's (record or journal), never anything else."""
    return (
        train.path.is_dir()
        and not train.path.is_symlink()
        and (train.has_record() or os.path.lexists(train.journal.path))
    )


def _open_start(train: TrainDir) -> bool:
    try:
        return any(e.action == "start" for e in train.journal.open_intents())
    except EnvironmentProblem:
        return True  # cannot tell: keep the folder


def _existing(plan: _StartPlan) -> Started:
    """The name's folder exists: settle what an earlier start left, never submit twice.

    An earlier start whose array Slurm queued (found by its token) is adopted and
    reported as the train; one Slurm cannot answer for yet is refused (nothing is
    submitted); one that queued nothing lets this start go on in the same folder. A
    train that exists for real is a name clash.
    """
    train = plan.train
    with _waited_lock(train):
        had_record = train.has_record()
        lines = reconcile.reconcile(train)
        if _open_start(train):
            for line in lines:
                progress(line)
            raise EnvironmentProblem(
                f"train {train.name}: an earlier `train start` may have queued its array, and "
                "that is not settled: nothing submitted again. "
                f"`slurmkit train status {train.name}` settles it once Slurm can tell"
            )
        if had_record:
            raise _clash(train, train.path.parent)
        if train.has_record():
            state = train.load_trusted()
            ids = ", ".join(state.array_ids)
            note = (
                f"the array of an earlier, interrupted `train start` is already queued: array "
                f"{ids}; not submitting again (this start's options were not used)"
            )
            return Started(train, state, [*plan.notices, *lines, note], adopted=True)
        started = _submit_new(plan, created=False)
        return Started(train, started.state, [*lines, *started.notices])


@contextlib.contextmanager
def _waited_lock(train: TrainDir) -> Iterator[None]:
    """The lock of an existing folder, or a clear line when the start that held it removed it.

    A start refused by sbatch (or that queued nothing) removes its folder under its lock;
    a second start that waited for that lock found no folder and said "cannot write
    journal …: No such file or directory" (issue 29).
    """
    try:
        with train.locked():
            if not os.path.lexists(train.journal.path) and not train.has_record():
                raise _gone(train)
            yield
    except EnvironmentProblem:
        if os.path.lexists(train.path):
            raise
        raise _gone(train) from None


def _gone(train: TrainDir) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"train {train.name}: the `train start` this one waited for queued nothing and "
        f"removed {train.path}; nothing was done: start again"
    )


def _submit_new(plan: _StartPlan, *, created: bool) -> Started:
    """Journal, render, submit with the token, record; the caller holds the train's lock."""
    train = plan.train
    name = train.name
    token = reconcile.begin(
        train,
        "start",
        runs=plan.runs,
        after=plan.after,
        script=str(plan.target),
        header=plan.header.words,
        extra=plan.extra_words,
        workdir=os.getcwd(),
    )
    intent_time = now_text()
    try:  # before sbatch: a failure here queued nothing, and says so
        train.point_to(plan.target)
        text = wrapper.render(train, plan.runs, plan.header.words, plan.more)
        write_atomic(train.wrapper, text, mode=FILE_MODE)
    except SlurmkitError as exc:
        reconcile.finish(train, token, "start", "failed", why=str(exc))
        raise
    notices = list(plan.notices)
    faultpoint.reached("train.start.before-sbatch")  # intent journaled, nothing queued yet
    options = [*plan.sbatch_extra, f"--comment={comment_for(token)}"]
    job_id = _submitted(train, text, options, (token, intent_time, "start"), [], notices)
    faultpoint.reached("train.start.submitted")
    started, note = _record_queued(
        train,
        (token, "start", job_id),
        lambda: _record_new(
            train,
            plan.target,
            plan.runs,
            plan.header,
            plan.extra_words,
            plan.after,
            job_id,
            notices,
        ),
        lambda exc: (
            f"train {name}: array {job_id} ({plan.runs} runs) is queued, but its record could "
            f"not be written ({exc}); {train.path} is kept because the runs need it. "
            f"Cancel the array with: scancel {job_id}"
        ),
    )
    if note:
        started.notices.append(note)
    return started


def _record_queued(
    train: TrainDir,
    intent: tuple[str, str, str],
    record: Callable[[], _T],
    unrecorded: Callable[[Exception], str],
) -> tuple[_T, str | None]:
    """Write the record of an array sbatch has queued, then settle the intent (token, action,
    job id).

    A record that cannot be written is an environment error, but the array is queued and
    its runs need the train's folder (the current link, the kill switch): nothing is
    removed and the intent stays open, so the next command adopts the array.
    """
    token, action, job_id = intent
    try:
        result = record()
    except (OSError, SlurmkitError) as exc:
        raise EnvironmentProblem(unrecorded(exc)) from None
    return result, reconcile.finish(train, token, action, "done", job_id=job_id)


def _submitted(
    train: TrainDir,
    text: str,
    options: list[str],
    intent: tuple[str, str, str],
    known: Sequence[str],
    notices: list[str],
) -> str:
    """sbatch the wrapper ``text``; a failure is checked by the intent's token first.

    ``intent``: its token, time and action. An array found queued although sbatch
    failed is the answer, with a notice saying how it was found.
    """
    token, since, action = intent
    try:
        return submit_text(text, options)
    except SlurmError as exc:
        job_id = _checked_submission(train, token, since, action, exc, known)
        notices.append(
            f"array {job_id} was queued although sbatch did not answer ({exc}): found by "
            f"its token --comment={comment_for(token)}"
        )
        return job_id


def _checked_submission(
    train: TrainDir,
    token: str,
    since: str,
    action: str,
    exc: SlurmError,
    known: Sequence[str],
) -> str:
    """The job id of a submission whose sbatch failed, if Slurm queued it anyway.

    A refusal is an answer: one look by the token, to be sure. A silence is not: the
    sbatch may still be in the backlog of a controller that, woken, answers squeue first
    (seen on 25.11), so absence is read again for the whole window
    (:func:`reconcile.find_submission_again`) before it is believed.

    Raises an error when Slurm says nothing carries the token (the intent is closed as
    failed), and a clear "unknown" error, keeping the intent open, when Slurm cannot say:
    the next command asks again, and never submits twice.
    """
    if isinstance(exc, SlurmNotInstalled):  # no sbatch ran: nothing can have been queued
        reconcile.finish(train, token, action, "failed", why=str(exc))
        raise SlurmNotInstalled(f"train {train.name}: nothing was queued: {exc}") from None
    progress(f"sbatch failed ({exc}); looking for the array by its token before deciding")
    silent = recheck.no_answer(exc)
    if silent:
        found = reconcile.find_submission_again(train.name, token, since, known, silent_sbatch=True)
    else:
        found = reconcile.find_submission(train.name, token, since, known)
    if found.job_ids:
        return found.job_ids[0]
    if found.maybe:  # only an old intent's lookup reaches accounting; kept open, never adopted
        raise EnvironmentProblem(
            f"train {train.name}: sbatch failed ({exc}); "
            + reconcile.unproven(train, found.maybe, f"`train {action}` just made")
        )
    what = "the train's array" if action == "start" else "the extension"
    if found.answered:
        reconcile.finish(train, token, action, "failed", why=str(exc))
        if not silent:
            raise exc
        again = "start" if action == "start" else "extend"
        raise SlurmError(
            f"train {train.name}: sbatch got no answer ({exc}), and no job carries its token "
            f"--comment={comment_for(token)} after {recheck.window():g} s of asking: "
            f"nothing was queued; `slurmkit train {again}` again"
        ) from None
    raise EnvironmentProblem(
        f"train {train.name}: sbatch got no answer ({exc}), and Slurm cannot say yet whether "
        f"{what} was queued (it may have been queued); {train.path} is kept. "
        f"`slurmkit train status {train.name}` finds it by its token and adopts it once "
        "slurmctld answers; starting or extending again never submits twice"
    )


def keep_out(header: Sequence[str], exclude_list: Path | None) -> list[str]:
    """``--exclude=<the header's own + the list's nodes>`` for sbatch, or nothing.

    On sbatch's command line it replaces the header's --exclude, so it carries both.
    Every run of the array gets it: Slurm starts the runs, not slurmkit.
    """
    listed = excluded.hostlist(exclude_list) if exclude_list is not None else ""
    if not listed:
        return []
    return [f"--exclude={excluded.merged(excluded.exclude_values(header), listed)}"]


def wrapper_values(header: Sequence[str], exclude_list: Path | None) -> dict[str, object]:
    """The wrapper's exclude_list/exclude_given: each run re-reads the list for the next ones."""
    if exclude_list is None:
        return {}
    given = excluded.merged(excluded.exclude_values(header), "")
    return {"exclude_list": str(exclude_list.absolute()), "exclude_given": given}


def _record_new(
    train: TrainDir,
    target: Path,
    runs: int,
    header: SbatchHeader,
    extra_words: list[str],
    after: str | None,
    job_id: str,
    notices: list[str],
) -> Started:
    state = TrainState(
        name=train.name,
        created=now_text(),
        workdir=os.getcwd(),
        script=str(target),
        header=header.words,
        extra=extra_words,
        arrays=[ArrayRecord(job_id=job_id, runs=runs, submitted=now_text(), after=after)],
    )
    state.note("start", f"array {job_id}, {runs} runs, script {target}")
    train.save(state)
    return Started(train, state, notices)


def extension(
    train: TrainDir,
    state: TrainState,
    runs: int,
    last_job: str,
    exclude_list: Path | None = None,
) -> Extension:
    """The sbatch call appending ``runs`` runs after array ``last_job``.

    ``--chdir``: the new array runs where the train started, wherever extend is run.
    ``exclude_list`` (a faulty-node exclude list file): its nodes join the new array's
    --exclude.
    """
    if runs < 1:
        raise UsageError(f"--runs {runs}: extend by at least 1 run")
    options = [f"--array=1-{runs}%1", f"--dependency=afterany:{last_job}"]
    if not any(w.startswith("--chdir=") for w in state.header):
        options.append(f"--chdir={state.workdir}")
    options += keep_out(state.header, exclude_list)
    token = new_token()
    options.append(f"--comment={comment_for(token)}")
    return Extension(train, options, last_job, runs, token=token)


def run_extension(ext: Extension, state: TrainState) -> Extension:
    """Journal, submit and record the extension; the caller holds the train's lock.

    The wrapper goes to sbatch on stdin, read through one checked descriptor: in a
    folder teammates can write, ``wrapper.slurm`` must still be the caller's. A failed
    or unanswered sbatch is checked by its token before anything is decided.
    """
    text = read_trusted(ext.train.wrapper, "train wrapper").decode("utf-8", errors="replace")
    train = ext.train
    token = reconcile.begin(train, "extend", ext.token, runs=ext.runs, after=ext.after)
    intent_time = now_text()
    notices: list[str] = []
    intent = (token, intent_time, "extend")
    job_id = _submitted(train, text, ext.options, intent, state.array_ids, notices)
    faultpoint.reached("train.extend.submitted")
    state.arrays.append(
        ArrayRecord(job_id=job_id, runs=ext.runs, submitted=now_text(), after=ext.after)
    )
    state.note("extend", f"array {job_id}, {ext.runs} runs after {ext.after}")
    _, note = _record_queued(
        train,
        (token, "extend", job_id),
        lambda: train.save(state),
        lambda exc: (
            f"train {state.name}: array {job_id} ({ext.runs} runs) is queued, but the record "
            f"could not be updated ({exc}); the next `slurmkit train status {state.name}` "
            f"adopts it, or cancel it with: scancel {job_id}"
        ),
    )
    if note:
        notices.append(note)
    return Extension(train, ext.options, ext.after, ext.runs, job_id, token, tuple(notices))
