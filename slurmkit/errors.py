"""One exception hierarchy, mapped to exit codes in one place.

Every failure a user can cause or meet (bad input, Slurm missing, controller
down, unknown job) is a :class:`SlurmkitError`; the CLI root catches it once and
prints ``slurmkit: <message>`` with the error's ``exit_code``. Anything else is
a bug and keeps its traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


class SlurmkitError(Exception):
    """Root of every error slurmkit reports to users."""

    exit_code: int = EXIT_ERROR


class UsageError(SlurmkitError):
    """Input that can never work (bad flag combination, bad value)."""


class HostlistParseError(UsageError):
    """A hostlist that does not parse; carries the text and the position of the fault."""

    def __init__(self, message: str, text: str = "", pos: int | None = None) -> None:
        self.text = text
        self.pos = pos
        where = f" at position {pos}" if pos is not None else ""
        shown = f" in {text!r}" if text else ""
        super().__init__(f"{message}{where}{shown}")


class EnvironmentProblem(SlurmkitError):
    """The machine lacks something slurmkit needs (a command, root, a package)."""


class SlurmError(SlurmkitError):
    """A Slurm command failed. Subclasses say why, when the cause is recognisable."""

    def __init__(
        self,
        message: str,
        argv: list[str] | None = None,
        returncode: int | None = None,
        stderr: str = "",
    ) -> None:
        self.argv = argv or []
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(message)


class SlurmNotInstalled(SlurmError):
    """The Slurm command is not on PATH."""


class ControllerUnreachable(SlurmError):
    """slurmctld (or slurmdbd for sacct) did not answer."""


class NoAnswer(ControllerUnreachable):
    """A state change failed with no known refusal: it may still be carried out.

    Not only "Socket timed out": 22.05's ``scontrol hold`` on a stopped slurmctld says
    "Unexpected message received". The caller reads the state back before it answers.
    """


class PermissionDenied(SlurmError):
    """Slurm refused the operation for this user."""


class NotFound(SlurmError):
    """Slurm does not know the job, node or partition asked for."""


class SlurmParseError(SlurmError):
    """Slurm answered, but not in a shape this version of slurmkit understands."""


class RemoteError(SlurmkitError):
    """Running a command on nodes failed as a whole (not one node: those are per-node results)."""


class TemplateError(UsageError):
    """A template that cannot be rendered: a Jinja syntax error, an undefined name, a bad header.

    A usage error (exit 2) because it is reported in one line like any bad input; the
    message names the template and, where Jinja knows it, the line.
    """
