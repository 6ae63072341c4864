"""sbatch-options-conflict: options sbatch refuses together (reviewers of spent-holdout8).

Every pair was run on the sbatch binaries of 22.05.8, 24.11 and 26.05 with a controller-less
slurm.conf: "fatal: ... mutually exclusive" (22.05: "error:" for --cpus-per-gpu, which ends
the submission the same way), and --exclusive with --oversubscribe only from 23.02.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text

V22 = LintContext(SlurmVersion.parse("22.05"))
V24 = LintContext(SlurmVersion.parse("24.11"))
UNKNOWN = LintContext()
RULE = "sbatch-options-conflict"


def _conflicts(header: str, context: LintContext = V24) -> list[tuple[int, str]]:
    text = f"#!/bin/bash\n{header}\nsrun hostname\n"
    return [(f.line, f.severity) for f in lint_text(text, "job.sh", context) if f.rule == RULE]


@pytest.mark.parametrize(
    "header",
    [
        "#SBATCH --mem=64G\n#SBATCH --mem-per-cpu=4G",
        "#SBATCH --mem-per-gpu=8G\n#SBATCH --mem-per-cpu=4G",
        "#SBATCH -c 4\n#SBATCH --cpus-per-gpu=2",
        "#SBATCH --ntasks-per-gpu=1\n#SBATCH --gpus-per-task=1",
        "#SBATCH --ntasks-per-gpu=1\n#SBATCH --ntasks-per-node=4",
        "#SBATCH --core-spec=1\n#SBATCH --thread-spec=1",
    ],
)
def test_a_pair_sbatch_refuses_is_an_error_on_the_later_line_at_every_version(header) -> None:
    for context in (V22, V24, UNKNOWN):
        assert _conflicts(header, context) == [(3, "error")]


def test_exclusive_beside_oversubscribe_is_refused_from_23_02_only() -> None:
    """22.05.8 queues it (the later option wins); 24.11 and 26.05 stop with a fatal."""
    header = "#SBATCH --exclusive=user\n#SBATCH -s"
    assert _conflicts(header, V22) == []
    assert _conflicts(header, V24) == [(3, "error")]
    assert _conflicts(header, UNKNOWN) == [(3, "error")]


def test_one_line_holding_both_is_one_finding_naming_both() -> None:
    text = "#!/bin/bash\n#SBATCH --mem=4G --mem-per-cpu=1G --mem-per-gpu=2G\nsrun a.out\n"
    found = [f for f in lint_text(text, "job.sh", V24) if f.rule == RULE]
    assert [f.line for f in found] == [2]
    assert "--mem=4G" in found[0].message and "mutually exclusive" in found[0].message


def test_what_sbatch_accepts_is_not_reported() -> None:
    """The same option twice is sbatch-option-twice; one memory option, or CPUs per GPU
    without CPUs per task, is fine."""
    assert _conflicts("#SBATCH --mem=4G\n#SBATCH --mem=8G") == []
    assert _conflicts("#SBATCH --mem-per-cpu=4G\n#SBATCH --cpus-per-task=4") == []
    assert _conflicts("#SBATCH --cpus-per-gpu=8\n#SBATCH --gpus=2") == []


def test_each_component_of_a_heterogeneous_job_is_judged_on_its_own() -> None:
    header = "#SBATCH --mem=4G\n#SBATCH hetjob\n#SBATCH --mem-per-cpu=1G"
    assert _conflicts(header) == []
    both = "#SBATCH --mem=4G\n#SBATCH hetjob\n#SBATCH --mem-per-cpu=1G\n#SBATCH --mem=8G"
    assert _conflicts(both) == [(5, "error")]


def test_ignored_directives_do_not_conflict() -> None:
    """A directive after the first command is a comment to sbatch."""
    text = "#!/bin/bash\n#SBATCH --mem=4G\nmodule load x\n#SBATCH --mem-per-cpu=1G\nsrun a\n"
    assert [f for f in lint_text(text, "job.sh", V24) if f.rule == RULE] == []
