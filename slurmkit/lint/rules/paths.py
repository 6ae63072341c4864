"""``--output``/``--error`` into a directory that does not exist.

Slurm opens the job's log before the script's first line runs and never creates
its directory: the job fails at once with no log at all (nothing to read, and the
error is only in slurmd's log). Known in two cases only:

- the script makes the directory itself (``mkdir -p logs`` after the header): too
  late for the file Slurm has already failed to open, so the first run of this script
  in a fresh checkout leaves no log (warning: the directory may exist from earlier).
- lint runs where the job will be submitted (``LintContext.submit_dir``, the CLI's
  current directory): the directory is looked up (error when it is missing).

A directory with a Slurm pattern (``%x``), a variable or a template in it is unknown
until the job is submitted, never wrong.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, WARNING, Finding, Rule
from slurmkit.lint.script import Script

_UNKNOWN = ("%", "$", "{", "`", "~", "*", "?")


def _directory(value: str) -> str | None:
    """The directory part of a log path, when it has one that can be known."""
    if "/" not in value:
        return None
    directory = posixpath.dirname(value)
    if not directory or any(mark in directory for mark in _UNKNOWN):
        return None
    return posixpath.normpath(directory)


def _made_by_script(script: Script) -> dict[str, int]:
    """Directories the script creates (``mkdir [-p] DIR``), normalised -> line."""
    made: dict[str, int] = {}
    for command in script.commands:
        if command.depth or command.name != "mkdir":
            continue
        for word in command.argv[1:]:
            if word.text.startswith("-") or not word.literal:
                continue
            made.setdefault(posixpath.normpath(word.text), script.line_of(command.start))
    return made


def _log_dir(script: Script, context: LintContext) -> Iterator[Finding]:
    settings = [script.job.get(name) for name in ("output", "error")]
    wanted = [
        (s, d)
        for s in settings
        if s is not None and s.value and (d := _directory(s.value)) is not None
    ]
    if not wanted:
        return
    chdir = script.job.value("chdir")
    made = _made_by_script(script)
    seen: set[str] = set()
    for setting, directory in wanted:
        if directory in seen:
            continue
        seen.add(directory)
        where = _resolve(directory, chdir, context.submit_dir)
        if where is not None and os.path.isdir(where):
            continue
        if where is not None:
            yield script.finding(
                setting.line,
                ERROR,
                RULE_LOG_DIR.id,
                f"#SBATCH {setting.written}: the directory {where} does not exist, and Slurm "
                "does not create it: the job fails at once and leaves no log",
                f"mkdir -p {where} before sbatch (the script's own mkdir comes too late)",
            )
            continue
        line = made.get(directory)
        if line is None:
            continue
        yield script.finding(
            setting.line,
            WARNING,
            RULE_LOG_DIR.id,
            f"#SBATCH {setting.written} writes into {directory}/, which this script creates "
            f"only on line {line}: Slurm opens the log before the script runs and does not "
            "create the directory, so where it does not exist yet the job fails at once with "
            "no log",
            f"mkdir -p {directory} before sbatch (or keep the log in the submit directory)",
        )


def _resolve(directory: str, chdir: str | None, submit_dir: str | None) -> str | None:
    """Where the directory is for a job submitted from ``submit_dir`` (None: not known)."""
    if posixpath.isabs(directory):
        return directory if submit_dir is not None else None
    if chdir is not None:
        if any(mark in chdir for mark in _UNKNOWN):
            return None
        if posixpath.isabs(chdir):
            return posixpath.normpath(posixpath.join(chdir, directory)) if submit_dir else None
    if submit_dir is None:
        return None
    return posixpath.normpath(posixpath.join(submit_dir, chdir or "", directory))


RULE_LOG_DIR = Rule(
    "output-dir-missing",
    WARNING,
    "--output/--error into a directory that does not exist (Slurm does not create it)",
    _log_dir,
)
RULES = (RULE_LOG_DIR,)
