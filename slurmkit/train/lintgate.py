"""Lint the script a train is about to source, and refuse errors unless forced.

Every run of a train sources the script ``current`` points to; a script with a lint
*error* (an ``srun`` whose ranks all come out 0, a launcher outside ``srun``, a lost
``--cpus-per-task``) fails or silently misbehaves in every run of a weeks-long train,
so ``train start``, ``train switch`` and ``train restart-run`` check it first with
slurmkit's own linter (:mod:`slurmkit.lint`). Warnings and infos never refuse.

The linter runs for every Slurm version from 22.05 on (no ``sinfo`` call): a train is
started before the version matters, and the version-specific rules report what is wrong
on some supported version. ``--force`` turns the refusal into one notice.
"""

from __future__ import annotations

from pathlib import Path

from slurmkit.errors import UsageError


class LintRefused(UsageError):
    """The script has lint errors and ``--force`` was not given (exit 2, nothing changed)."""

    def __init__(self, message: str, errors: list[str]) -> None:
        super().__init__(message)
        self.errors = errors


def lint_errors(script: Path, data: bytes | None = None) -> list[str]:
    """One line per lint error of ``script`` (``file:line: message [rule]``).

    ``data``: the script as the caller read it (after checking whose it is), linted
    instead of reading the path again.
    """
    from slurmkit.lint import ERROR, decode_script, lint_text, read_script

    text = read_script(script) if data is None else decode_script(data, str(script))
    return [
        f"{f.file}:{f.line}: {f.message} [{f.rule}]"
        for f in lint_text(text, str(script))
        if f.severity == ERROR
    ]


def lint_gate(script: Path, what: str, force: bool, data: bytes | None = None) -> list[str]:
    """Refuse ``what`` (start, switch, restart) when ``script`` has lint errors.

    Returns notices: with ``force``, one saying how many errors were let through.
    """
    errors = lint_errors(script, data)
    if not errors:
        return []
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    if force:
        return [f"--force: {len(errors)} lint error(s) in {script} let through: {errors[0]}{more}"]
    raise LintRefused(
        f"{what} refused: {script} has {len(errors)} lint error(s): {errors[0]}{more}; fix "
        f"them (`slurmkit lint {script}`) or pass --force",
        errors,
    )
