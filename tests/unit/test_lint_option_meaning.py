"""Every rule sees the sbatch option a directive means, not the word written (issue 32).

getopt_long takes any unambiguous prefix of a long option, so ``#SBATCH --cpus-per-t=8``
asks for eight CPUs a task exactly like ``--cpus-per-task=8``. The job request is keyed by
the option meant; an ambiguous prefix or a plugin's option stays as written.
"""

from __future__ import annotations

from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.lint.sbatch_table import stock_meaning
from slurmkit.sbatch.directives import job_request, read_directives

V22 = LintContext(SlurmVersion.parse("22.05"))


def _request(header: str):  # type: ignore[no-untyped-def]
    return job_request(read_directives(header.splitlines()), stock_meaning)


def test_an_abbreviation_is_keyed_by_the_option_it_means() -> None:
    job = _request("#!/bin/bash\n#SBATCH --accoun=proj\n#SBATCH --ntasks-per-n=4\n")
    assert job.value("account") == "proj"
    assert job.tasks_per_node == 4
    assert job.get("account").written == "--accoun=proj"  # messages quote what was written


def test_ambiguous_and_plugin_names_stay_as_written() -> None:
    job = _request("#!/bin/bash\n#SBATCH --cpus-per=8\n#SBATCH --container-image=x.sqsh\n")
    assert job.cpus_per_task is None  # --cpus-per-task or --cpus-per-gpu: sbatch refuses it
    assert job.value("cpus-per") == "8"
    assert job.value("container-image") == "x.sqsh"


def test_without_a_meaning_the_request_keeps_the_written_names() -> None:
    job = job_request(read_directives(["#SBATCH --accoun=proj"]))
    assert job.value("account") is None and job.value("accoun") == "proj"


def _rules(text: str) -> set[str]:
    return {f.rule for f in lint_text(text, "t.sh", V22)}


def test_rules_judge_an_abbreviated_request_like_the_full_one() -> None:
    body = "srun python train.py --num-workers 8\n"
    full = _rules(f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH --cpus-per-task=8\n{body}")
    short = _rules(f"#!/bin/bash\n#SBATCH -t 5\n#SBATCH --cpus-per-t=8\n{body}")
    assert "srun-cpus-per-task" in full
    assert short == full


def test_a_prefix_of_an_alias_means_the_canonical_option() -> None:
    """``--tasks`` abbreviates only the alias ``--tasks-per-node``: it sets tasks per node."""
    assert stock_meaning("tasks") == "ntasks-per-node"
    assert _request("#!/bin/bash\n#SBATCH -N 2\n#SBATCH --tasks=4\n").tasks_per_node == 4
