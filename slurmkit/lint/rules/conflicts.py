"""Options sbatch refuses together: the whole script is refused before anything is queued.

Each pair is one sbatch's own validation stops at (``src/common/slurm_opt.c``): the
memory options, CPUs per task beside CPUs per GPU, tasks per GPU beside the options it
derives, core beside thread specialisation, and (from 23.02, CHANGELOG/slurm-23.02.md)
``--exclusive`` beside ``--oversubscribe``. Each was run on the sbatch binaries of
22.05.8, 24.11 and 26.05: "fatal: ... mutually exclusive", or 22.05's "error:" that ends
the submission the same way. Read per component of a heterogeneous job, as sbatch does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from slurmkit.lint.context import LintContext
from slurmkit.lint.findings import ERROR, Finding, Rule
from slurmkit.lint.rules.header import read_components
from slurmkit.lint.sbatch_table import stock_meaning
from slurmkit.lint.script import Script
from slurmkit.slurm.records import SlurmVersion

EXCLUSIVE_REFUSED_FROM = SlurmVersion(23, 2, 0)


@dataclass(frozen=True)
class Conflict:
    """sbatch refuses any option of ``first`` beside any other option of ``second`` (one
    set for both: at most one of the set; ``{other}`` in ``says`` names the second)."""

    first: frozenset[str]
    second: frozenset[str]
    says: str
    since: SlurmVersion | None = None

    def applies(self, version: SlurmVersion | None) -> bool:
        # unknown: every version from 22.05 on, of which most refuse it
        return self.since is None or version is None or version >= self.since


_MEMORY = frozenset({"mem", "mem-per-cpu", "mem-per-gpu"})
CONFLICTS = (
    Conflict(_MEMORY, _MEMORY, "--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive"),
    Conflict(
        frozenset({"cpus-per-task"}),
        frozenset({"cpus-per-gpu"}),
        "--cpus-per-gpu is mutually exclusive with --cpus-per-task",
    ),
    Conflict(
        frozenset({"ntasks-per-gpu"}),
        frozenset({"gpus-per-task", "ntasks-per-node", "gpus-per-socket", "tres-per-task"}),
        "--{other} is mutually exclusive with --ntasks-per-gpu",
    ),
    Conflict(
        frozenset({"core-spec"}),
        frozenset({"thread-spec"}),
        "-S/--core-spec and --thread-spec options are mutually exclusive",
    ),
    Conflict(
        frozenset({"exclusive"}),
        frozenset({"oversubscribe"}),
        "--exclusive and --oversubscribe options are mutually exclusive, from 23.02 on "
        "(before, the later one won)",
        EXCLUSIVE_REFUSED_FROM,
    ),
)


def _conflicts(script: Script, context: LintContext) -> Iterator[Finding]:
    for component in read_components(script):
        first_seen: dict[str, tuple[int, str]] = {}
        for directive in component:
            for option in directive.options:
                name = stock_meaning(option.name)
                first_seen.setdefault(name, (directive.line, option.written))
        yield from _refused_pairs(script, context, first_seen)


def _refused_pairs(
    script: Script, context: LintContext, seen: dict[str, tuple[int, str]]
) -> Iterator[Finding]:
    reported: set[int] = set()
    for conflict in CONFLICTS:
        if not conflict.applies(context.version):
            continue
        for one in sorted(conflict.first & seen.keys()):
            for other in sorted(conflict.second & seen.keys()):
                if one == other:
                    continue
                (a_line, a_written), (b_line, b_written) = sorted((seen[one], seen[other]))
                if b_line in reported:
                    continue
                reported.add(b_line)
                yield script.finding(
                    b_line,
                    ERROR,
                    RULE_CONFLICT.id,
                    f"{b_written} beside {a_written} (line {script.shown(a_line)}): sbatch "
                    f"refuses the script: {conflict.says.format(other=other)}",
                    f"keep one of {a_written} and {b_written}",
                )


RULE_CONFLICT = Rule(
    "sbatch-options-conflict",
    ERROR,
    "options sbatch refuses together (--mem with --mem-per-cpu, --cpus-per-task with "
    "--cpus-per-gpu, ...): sbatch refuses the script",
    _conflicts,
)
RULES = (RULE_CONFLICT,)
