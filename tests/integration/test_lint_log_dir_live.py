"""lint's ``output-dir-missing`` against what the live cluster does with the job (issue 32).

Before 23.02 a job whose ``--output`` directory is missing fails at once (JobLaunchFailure,
no log); from 23.02 slurmstepd creates the directory as the job's user and the job runs.
lint, asked with its defaults (the version ``sinfo`` reports), must name the directory
exactly where this cluster fails the job: run on every sandbox version, both sides meet.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import poll, sacct_state, submit

FINAL = ("COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY")
SCRIPT = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --time=1\n#SBATCH --output={log}\necho ran\n"


@pytest.mark.parametrize("log", ["logs/%j/out.txt", "logs/out-%j.txt"])
def test_lint_names_the_log_directory_exactly_when_the_job_fails(
    cluster, run_cli, tmp_path: Path, slurm_version: str, log: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    script = work / "job.sh"
    script.write_text(SCRIPT.format(log=log))
    report = json.loads(
        run_cli("lint", "--json", "--no-shellcheck", "--submit-dir", str(work), str(script),
                exit_code=None).stdout
    )  # fmt: skip
    named = [f for f in report["findings"] if f["rule"] == "output-dir-missing"]
    job = submit(f"--chdir={work}", f"--output={log}", str(script))
    state = str(poll(lambda: next((s for s in FINAL if sacct_state(job).startswith(s)), ""), 120,
                     f"job {job} to end"))  # fmt: skip
    logs = (
        sorted(p.relative_to(work).as_posix() for p in (work / "logs").rglob("*.txt"))
        if (work / "logs").exists()
        else []
    )
    if named:
        assert (state, logs) == ("FAILED", []), (slurm_version, report)
        assert named[0]["line"] == 4 and named[0]["severity"] == "error"
    else:
        expected = log.replace("%j", job)
        assert (state, logs) == ("COMPLETED", [expected]), (slurm_version, report)
        assert (work / expected).read_text() == "ran\n"
    # the behaviour itself, so that a version whose lint and Slurm both changed is noticed
    assert bool(named) == (slurm_version == "22.05"), (slurm_version, named)
