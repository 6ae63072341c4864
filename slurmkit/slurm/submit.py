"""Submitting a job script: one ``sbatch --parsable`` through the Slurm layer.

:func:`submit_rendered` is the one path for a script slurmkit renders (``template
submit``, ``faulty scan``, ``cpus check``). sbatch reads that script on **stdin**, so no
file stands between rendering and submission for another user to swap (issue 14: a
racer replaced the script in a shared work dir before sbatch read it, and root ran
the racer's job on every node). The copy written into the work dir is only a record
of what was submitted; sbatch never opens it. The work dir itself must be the
caller's (or root's) and writable by nobody else, because slurmkit reads the job's
log back from it: :func:`trusted_folder`.

:func:`submit` (a script file by path) stays for callers that submit a file they
keep in their own folder (cron chains, train wrappers).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shlex
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from slurmkit._proc import Completed
from slurmkit.errors import SlurmError, UsageError
from slurmkit.files import write_atomic
from slurmkit.slurm._exec import run_slurm
from slurmkit.trust import private_dir


def current_user() -> str:
    """The user Slurm runs our jobs as (the real uid; $USER can lie under sudo)."""
    return pwd.getpwuid(os.getuid()).pw_name


def sbatch_argv(script: Path | None, extra: Sequence[str] = ()) -> list[str]:
    """Extra sbatch options go before the script: after it they would be the script's arguments.

    ``script=None``: no file, sbatch reads the script from stdin.
    """
    return ["sbatch", "--parsable", *extra, *([str(script)] if script is not None else [])]


def submit(script: Path, extra: Sequence[str] = ()) -> str:
    """Submit the file ``script`` and return the job id."""
    return _job_id(run_slurm(sbatch_argv(script, extra)))


def submit_text(text: str, extra: Sequence[str] = ()) -> str:
    """Submit ``text`` on sbatch's stdin and return the job id: there is no file to swap."""
    return _job_id(run_slurm(sbatch_argv(None, extra), input=text))


def _job_id(result: Completed) -> str:
    """``--parsable`` prints ``id`` or ``id;cluster``."""
    job_id = result.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        raise SlurmError(
            f"sbatch printed no job id: {result.stdout.strip()!r}",
            list(result.argv),
            0,
            result.stderr,
        )
    return job_id


def trusted_folder(path: Path, what: str) -> Path:
    """``path`` as an absolute folder that only the caller (or root) can change; created 0700.

    A folder another user owns, or one that group or others can write, is refused
    (:class:`slurmkit.trust.UntrustedPath`, exit 2) rather than adopted: its owner
    could replace what slurmkit writes there or reads back from it.
    """
    folder = Path(os.path.abspath(os.path.expanduser(path)))  # unknown ~user: left as is
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise UsageError(f"{what} {path}: {exc.strerror}") from None
    else:
        if not stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode):
            raise UsageError(f"{what} {path} exists and is not a folder")
    return private_dir(folder, what=what)


def script_path(folder: Path, template_name: str, now: datetime | None = None) -> Path:
    """``<folder>/<template>-<YYYYmmdd-HHMMSS>-<4 hex>.slurm``: sortable, unique per submit."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return folder / f"{template_name}-{stamp}-{secrets.token_hex(2)}.slurm"


@dataclass(frozen=True)
class PreparedSubmission:
    """A rendered script ready for sbatch; ``record``: the copy kept, never read by sbatch."""

    text: str
    record: Path
    argv: tuple[str, ...]

    @property
    def shown(self) -> str:
        """The command as a person would type it: the script goes to stdin."""
        return f"{shlex.join(self.argv)} < {shlex.quote(str(self.record))}"


def prepare(
    text: str, folder: Path, name: str, extra: Sequence[str] = (), what: str = "work dir"
) -> PreparedSubmission:
    """Check (or create) ``folder`` and write the record copy of ``text`` into it."""
    trusted = trusted_folder(folder, what)
    record = write_atomic(script_path(trusted, name), text)
    return PreparedSubmission(text=text, record=record, argv=tuple(sbatch_argv(None, extra)))


def send(submission: PreparedSubmission) -> str:
    """Submit a prepared script on stdin and return the job id."""
    return submit_text(submission.text, submission.argv[2:])


def submit_rendered(
    text: str, folder: Path, name: str, extra: Sequence[str] = (), what: str = "work dir"
) -> tuple[str, PreparedSubmission]:
    """Prepare and send: the one way slurmkit submits a script it rendered."""
    submission = prepare(text, folder, name, extra, what)
    return send(submission), submission
