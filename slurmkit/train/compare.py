"""Whether a new script fits the allocation a train's array was submitted with.

The array's ``#SBATCH`` header is fixed at submission: a script switched in later runs
inside that allocation whatever its own header says. So ``train switch`` refuses a
script that asks for other resources (a 4-node script would run on 2 nodes) and only
warns about options that do not change the allocation (``--output``, ``--mail-type``),
which are ignored just the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from slurmkit.errors import SlurmParseError
from slurmkit.grammar import gres, timelimit
from slurmkit.sbatch.header import SbatchHeader

# Options that shape the allocation; a difference in any of them is a refusal.
RESOURCE_OPTIONS = (
    "nodes",
    "ntasks",
    "ntasks-per-node",
    "cpus-per-task",
    "gres",
    "gpus",
    "gpus-per-node",
    "gpus-per-task",
    "cpus-per-gpu",
    "mem",
    "mem-per-cpu",
    "mem-per-gpu",
    "time",
    "time-min",
    "partition",
    "constraint",
    "exclusive",
    "nodelist",
    "reservation",
    "account",
    "qos",
    "clusters",
)
# Not a resource: --exclude narrows where the runs may go, not what they get. A script
# differing only there is switched in (the notice says it is not applied: the array keeps
# the exclude it was submitted with, which each run refreshes from the exclude list).
# Set by the train itself, never compared.
TRAIN_OWNED = frozenset({"array", "job-name", "dependency"})


@dataclass(frozen=True)
class Difference:
    option: str
    submitted: str | None  # None: not set; "" : a bare flag
    new: str | None
    resource: bool

    @staticmethod
    def show(value: str | None) -> str:
        if value is None:
            return "(not set)"
        return value or "(set)"

    def describe(self) -> str:
        return f"--{self.option} {self.show(self.submitted)} -> {self.show(self.new)}"


def _effective(header: SbatchHeader) -> dict[str, str]:
    """Last value per option; a bare flag is ``""``."""
    return {d.option: d.value if d.value is not None else "" for d in header.directives}


def _same(option: str, a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a == b
    if option in ("time", "time-min"):
        try:
            return timelimit.from_slurm(a) == timelimit.from_slurm(b)
        except SlurmParseError:
            return a.strip() == b.strip()
    if option == "gres":
        return gres.normalize(a) == gres.normalize(b)
    return a.strip() == b.strip()


def compare(submitted: SbatchHeader, new: SbatchHeader) -> list[Difference]:
    """Every option whose effective value differs, resources first."""
    old_values, new_values = _effective(submitted), _effective(new)
    options = [o for o in dict.fromkeys([*old_values, *new_values]) if o not in TRAIN_OWNED]
    diffs = [
        Difference(o, old_values.get(o), new_values.get(o), o in RESOURCE_OPTIONS)
        for o in options
        if not _same(o, old_values.get(o), new_values.get(o))
    ]
    return sorted(diffs, key=lambda d: not d.resource)


def unified(diffs: list[Difference], old_label: str, new_label: str) -> list[str]:
    """The differences as a small unified diff of ``#SBATCH`` lines."""
    lines = [f"--- {old_label}", f"+++ {new_label}"]
    for diff in diffs:
        for sign, value in (("-", diff.submitted), ("+", diff.new)):
            if value is not None:
                word = f"--{diff.option}" + (f"={value}" if value else "")
                lines.append(f"{sign}#SBATCH {word}")
    return lines
