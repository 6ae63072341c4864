"""sbatch's own long options per Slurm version, read from the binaries (issue 32 item 4).

Checked again against each version's ``src/common/slurm_opt.c`` (every option whose
table entry has an sbatch or common setter): the probe had missed the aliases and
rarely used names (``--cluster``, ``--context``, ``--ntasks-per-tres``,
``--autocomplete``), and had kept names it reached as prefixes (``--extra`` at 22.05
is ``--extra-node-info``; ``--extern`` at 26.05 is ``--external``).

Probed, not typed: each candidate name (sbatch --help and the man page of 22.05,
24.11 and 26.05, and the strings of libslurmfull) was given to that version's sbatch
as ``#SBATCH --NAME=1`` followed by an invalid directive; a name sbatch did not call
"unrecognized" is an option. getopt also accepts any unambiguous prefix
(``--part=x``); callers match
prefixes. Short options: the letters sbatch accepts (all three versions alike).
"""

from __future__ import annotations

from functools import lru_cache

from slurmkit.sbatch.options import canonical
from slurmkit.slurm.records import SlurmVersion

NEWER_THAN_PROBED = SlurmVersion(26, 6, 0)

LONG_22_05 = frozenset(
    {
        "account",
        "acctg-freq",
        "array",
        "batch",
        "bb",
        "bbf",
        "begin",
        "chdir",
        "cluster-constraint",
        "cluster",
        "clusters",
        "comment",
        "constraint",
        "container",
        "context",
        "contiguous",
        "core-spec",
        "cores-per-socket",
        "cpu-freq",
        "cpus-per-gpu",
        "cpus-per-task",
        "deadline",
        "delay-boot",
        "dependency",
        "distribution",
        "error",
        "exclude",
        "exclusive",
        "export",
        "export-file",
        "extra-node-info",
        "get-user-env",
        "gid",
        "gpu-bind",
        "gpu-freq",
        "gpus",
        "gpus-per-node",
        "gpus-per-socket",
        "gpus-per-task",
        "gres",
        "gres-flags",
        "help",
        "hint",
        "hold",
        "ignore-pbs",
        "input",
        "job-name",
        "kill-on-invalid-dep",
        "licenses",
        "mail-type",
        "mail-user",
        "mcs-label",
        "mem",
        "mem-bind",
        "mem-per-cpu",
        "mem-per-gpu",
        "mincpus",
        "network",
        "nice",
        "no-kill",
        "no-requeue",
        "nodefile",
        "nodelist",
        "nodes",
        "ntasks",
        "ntasks-per-core",
        "ntasks-per-gpu",
        "ntasks-per-node",
        "ntasks-per-socket",
        "ntasks-per-tres",
        "open-mode",
        "output",
        "overcommit",
        "oversubscribe",
        "parsable",
        "partition",
        "power",
        "prefer",
        "priority",
        "profile",
        "propagate",
        "qos",
        "quiet",
        "reboot",
        "requeue",
        "reservation",
        "signal",
        "sockets-per-node",
        "spread-job",
        "switches",
        "tasks-per-node",
        "test-only",
        "thread-spec",
        "threads-per-core",
        "time",
        "time-min",
        "tmp",
        "uid",
        "usage",
        "use-min-nodes",
        "verbose",
        "version",
        "wait",
        "wait-all-nodes",
        "wckey",
        "wrap",
    }
)
LONG_24_11 = (LONG_22_05 - {"power"}) | {
    "autocomplete",
    "container-id",
    "extra",
    "oom-kill-step",
    "resv-ports",
    "segment",
    "tres-bind",
    "tres-per-task",
    "stepmgr",
}
LONG_26_05 = LONG_24_11 | {
    "consolidate-segments",
    "mem-update",
    "resources",
    "container-type",
    "external",
    "spread-segments",
}
# Letters that take an argument, and those that do not (-k takes one only when glued).
SHORT_WITH_VALUE = frozenset("abcdeimnopqtwxABCDFGJLMNS")
SHORT_FLAGS = frozenset("hksvHOQVW")


def long_options(version: SlurmVersion | None) -> frozenset[str]:
    """sbatch's long options at ``version``; unknown or newer than probed: all versions'.

    A version between two probed ones gets both tables: an option flagged there is
    unknown to the release before and the release after it.
    """
    if version is None or version >= NEWER_THAN_PROBED:
        return LONG_22_05 | LONG_24_11 | LONG_26_05
    if version < SlurmVersion(22, 6, 0):
        return LONG_22_05
    if version < SlurmVersion(24, 11, 0):
        return LONG_22_05 | LONG_24_11
    if version < SlurmVersion(24, 12, 0):
        return LONG_24_11
    if version < SlurmVersion(26, 5, 0):
        return LONG_24_11 | LONG_26_05
    return LONG_26_05


@lru_cache(maxsize=1024)
def stock_meaning(name: str) -> str:
    """The sbatch option ``--name`` means at any version: itself or the one it abbreviates.

    getopt_long takes any unambiguous prefix (``--accoun=x`` sets ``--account``), so every
    rule must see the option meant, not the word written. Judged against every version's
    table at once, because the job a script requests is read once for all versions: a
    prefix ambiguous there, or a name no version knows (a SPANK plugin's), stays as written.
    """
    meant = match_long(name, long_options(None))
    return canonical(meant[0]) if len(meant) == 1 else name  # --tasks: --ntasks-per-node


def match_long(name: str, table: frozenset[str]) -> list[str]:
    """The options ``--name`` means to getopt: itself, or every option it is a prefix of."""
    if name in table:
        return [name]
    return sorted(option for option in table if option.startswith(name))
