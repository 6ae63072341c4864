"""Which Slurm the script is linted for, and what that version's srun does with CPUs.

Verified on real clusters (issue 9): 22.05.8 srun does not inherit
``--cpus-per-task`` from sbatch/salloc and reads only ``SRUN_CPUS_PER_TASK``
(``SLURM_CPUS_PER_TASK`` is ignored); upstream switched back in 23.11.0, and
24.11.5/26.05.5 inherit it (sbatch exports ``SLURM_CPUS_PER_TASK`` and
``SLURM_TRES_PER_TASK=cpu=N``, srun reads both and ignores ``SRUN_CPUS_PER_TASK``).

Also verified live (sandbox, 2026-11-29): a job whose ``--output`` directory is missing
fails at 22.05.8 (JobLaunchFailure, no log); from 23.02 on slurmstepd creates the
directory as the job's user and the job runs (24.11.5 and 26.05.5: COMPLETED, with
``%j`` in the directory too; Slurm's 23.02 changelog, ``io.c`` ``mkdirpath``).

An unknown version (Slurm not installed here and no ``--slurm-version``) lints for
every version at once: the explicit ``srun --cpus-per-task`` that satisfies all of
them is right everywhere, so the union of the rules never asks for a wrong fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from slurmkit.slurm.records import SlurmVersion

NO_INHERIT_FROM = SlurmVersion(22, 5, 0)
INHERIT_AGAIN_FROM = SlurmVersion(23, 11, 0)
NO_INHERIT_RANGE = "22.05 to 23.02"
CREATES_LOG_DIR_FROM = SlurmVersion(23, 2, 0)


def srun_inherits_cpus_per_task(version: SlurmVersion) -> bool:
    """Does a plain srun get the job's --cpus-per-task on this version?"""
    return not NO_INHERIT_FROM <= version < INHERIT_AGAIN_FROM


@dataclass(frozen=True)
class LintContext:
    """``version`` None: unknown, lint for every version from 22.05 on.

    ``submit_dir``: the directory sbatch will be run from, when the user names it
    (``lint --submit-dir``), so paths the job opens before its script runs (its logs)
    can be looked up there; None: not known. The linter's own working directory is
    not it: lint is run from anywhere, and judging logs from there was the rule most
    often wrong on published scripts (issue 32).
    ``script_dir``: the directory of the script file (None for stdin and bare text):
    a log directory that the script's git work tree ships exists wherever the
    repository is checked out (:mod:`slurmkit.lint.rules.paths`).
    ``shellcheck``: also run ShellCheck when it is installed (:mod:`slurmkit.lint.shellcheck`);
    off by default so that the library and the corpus give the same answer everywhere,
    on in the CLI unless ``--no-shellcheck``.
    ``bash_check``: ask ``bash -n`` whether bash refuses the script
    (:mod:`slurmkit.lint.bash_check`): bash is on every node that runs a batch script, and it
    is the authority on bash-syntax.
    """

    version: SlurmVersion | None = None
    version_source: str = "option"
    submit_dir: str | None = None
    script_dir: str | None = None
    shellcheck: bool = False
    bash_check: bool = True
    # What rules read once for many scripts of one run (files beside them), kept across
    # replace(): not part of the context's identity.
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def version_text(self) -> str:
        return str(self.version) if self.version else "unknown"

    @property
    def may_not_inherit(self) -> bool:
        """srun may ignore the job's --cpus-per-task and read SRUN_CPUS_PER_TASK (22.05-23.02)."""
        return self.version is None or not srun_inherits_cpus_per_task(self.version)

    @property
    def may_inherit_again(self) -> bool:
        """srun may read SLURM_CPUS_PER_TASK and ignore SRUN_CPUS_PER_TASK (23.11 on)."""
        return self.version is None or self.version >= INHERIT_AGAIN_FROM

    @property
    def log_dir_not_created(self) -> bool:
        """A missing --output/--error directory may fail the job (before 23.02)."""
        return self.version is None or self.version < CREATES_LOG_DIR_FROM

    def on_versions(self, text_if_unknown: str) -> str:
        """``on Slurm 22.05.8`` or, for an unknown version, the range the rule is about."""
        return f"on Slurm {self.version}" if self.version else text_if_unknown
