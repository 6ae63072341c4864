"""Starting a train (``--array=1-N%1`` of the wrapper) and extending it with another array.

The wrapper's header is the training script's own ``#SBATCH`` header plus the extra
sbatch options, minus what the train sets itself (``--array``, ``--job-name``). A
script without a header, or without a node count, is refused: the array would run
with whatever the cluster defaults to, for 50 runs, with no way to change it later.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from slurmkit.errors import EnvironmentProblem, SlurmkitError, UsageError
from slurmkit.faulty import excluded
from slurmkit.files import write_atomic
from slurmkit.slurm import query
from slurmkit.templating.submit import sbatch_argv, submit_text
from slurmkit.train import wrapper
from slurmkit.train.bashcheck import bash_syntax_error
from slurmkit.train.directives import Directive, Header, merged, parse_words, read_header
from slurmkit.train.state import (
    FILE_MODE,
    ArrayRecord,
    TrainDir,
    TrainState,
    check_name,
    now_text,
    read_trusted,
    train_names,
)
from slurmkit.trust import UntrustedPath, check_trusted

DEFAULT_RUNS = 50
# Options the train sets itself; in the script they are dropped with a notice,
# among the extra sbatch options they are refused with the train option to use.
_OWNED_IN_EXTRA = {
    "array": "--runs",
    "job-name": "--name",
    "dependency": "--after",
    "wrap": "a SCRIPT",
}
_JOB_ID = re.compile(r"\d+(_\d+)?")


@dataclass(frozen=True)
class Started:
    """A started train; in a dry run ``state.arrays`` is empty and nothing exists on disk."""

    train: TrainDir
    state: TrainState
    notices: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    dry_run: bool = False


@dataclass(frozen=True)
class Extension:
    """An ``extend``: the sbatch argv it runs (or would run) and, when run, the new array."""

    train: TrainDir
    options: list[str]
    after: str
    runs: int
    job_id: str | None = None

    @property
    def argv(self) -> list[str]:
        """sbatch reads the wrapper on stdin: a file in a shared folder could be swapped."""
        return sbatch_argv(None, self.options)


def training_header(script: Path, extra: Sequence[str]) -> tuple[Header, list[str], list[str]]:
    """(header for the wrapper, extra option words, notices) for ``script`` + ``extra``."""
    header = read_header(script)
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
    kept: list[Directive] = []
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


def default_name(script: Path) -> str:
    """The script's own ``--job-name``, else its file name without the suffix."""
    with contextlib.suppress(UsageError):
        name = read_header(script).value("job-name")
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
        raise UntrustedPath(
            f"refusing training script {script}: cannot check {exc.filename}: {exc.strerror}"
        ) from None


def _check_after(after: str) -> None:
    if not _JOB_ID.fullmatch(after):
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
) -> Started:
    """Create the train's folder, render the wrapper, submit the array, record it.

    ``dry_run`` makes every check and renders the wrapper, then creates and submits
    nothing. ``exclude_list`` (a faulty-node exclude list file; None: none): its nodes
    join the array's --exclude now, and each run adds the nodes listed since to the
    runs still pending (see :func:`keep_out`).
    """
    if runs < 1:
        raise UsageError(f"--runs {runs}: a train needs at least 1 run")
    header, extra_words, notices = training_header(script, extra)
    error = bash_syntax_error(script)
    if error:
        raise UsageError(f"{script} does not parse as bash: {error}")
    name = check_name(name or default_name(script))
    if name in train_names(root):
        raise UsageError(
            f"train {name!r} already exists in {root}: pick another --name "
            f"(or remove {root / name} once it has finished)"
        )
    target = trusted_script(script)
    if after is not None:
        _check_after(after)
    train = TrainDir(root / name)
    sbatch_extra = [f"--dependency=afterany:{after}"] if after else []
    sbatch_extra += keep_out(header.words, exclude_list)
    more = wrapper_values(header.words, exclude_list)
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
        return Started(train, state, notices, sbatch_argv(None, sbatch_extra), dry_run=True)
    try:
        train.path.mkdir(parents=True)
    except OSError as exc:
        raise EnvironmentProblem(f"cannot create {train.path}: {exc.strerror}") from None
    try:  # until the array is queued, a failure leaves nothing behind
        train.point_to(target)
        text = wrapper.render(train, runs, header.words, more)
        write_atomic(train.wrapper, text, mode=FILE_MODE)
        job_id = submit_text(text, sbatch_extra)
    except BaseException:
        shutil.rmtree(train.path, ignore_errors=True)
        raise
    try:
        return _record_new(train, target, runs, header, extra_words, after, job_id, notices)
    except (OSError, SlurmkitError) as exc:
        # The array is queued and its runs need this folder (the current link, the kill
        # switch): never remove it; say how to find and cancel what was submitted.
        raise EnvironmentProblem(
            f"train {name}: array {job_id} ({runs} runs) is queued, but its record could not "
            f"be written ({exc}); {train.path} is kept because the runs need it. "
            f"Cancel the array with: scancel {job_id}"
        ) from None


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
    header: Header,
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
    return Extension(train, options, last_job, runs)


def run_extension(ext: Extension, state: TrainState) -> Extension:
    """Submit the extension and record the new array.

    The wrapper goes to sbatch on stdin, read through one checked descriptor: in a
    folder teammates can write, ``wrapper.slurm`` must still be the caller's.
    """
    text = read_trusted(ext.train.wrapper, "train wrapper").decode("utf-8", errors="replace")
    job_id = submit_text(text, ext.options)
    state.arrays.append(
        ArrayRecord(job_id=job_id, runs=ext.runs, submitted=now_text(), after=ext.after)
    )
    state.note("extend", f"array {job_id}, {ext.runs} runs after {ext.after}")
    try:
        ext.train.save(state)
    except (OSError, SlurmkitError) as exc:
        raise EnvironmentProblem(
            f"train {state.name}: array {job_id} ({ext.runs} runs) is queued, but the record "
            f"could not be updated ({exc}); cancel it with: scancel {job_id}"
        ) from None
    return Extension(ext.train, ext.options, ext.after, ext.runs, job_id)
