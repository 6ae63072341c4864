"""``slurmkit lint``: output, JSON, exit codes, bad files, where the Slurm version comes from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes import FakeSlurm

SAMPLES = Path(__file__).parent / "lint_samples"
BAD = str(SAMPLES / "test-nodes.slurm")  # srun without -c: a finding on 22.05 only
# The same step held to 1 CPU per task (--exact), so an error at 22.05-23.02 on any cluster.
BAD_TEXT = (SAMPLES / "test-nodes.slurm").read_text()
BOUND_TEXT = BAD_TEXT.replace("srun --jobid", "srun --exact --jobid")
CLEAN = "#!/bin/bash\n#SBATCH -t 10\n#SBATCH -c 4\nsrun -c 4 hostname\n"
WARN_ONLY = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --array=1-2\n#SBATCH --output=out.log\nhostname\n"


@pytest.fixture
def sinfo(fake_slurm: FakeSlurm) -> FakeSlurm:
    """``sinfo --version`` says 22.05.8; nothing else may run."""
    return sinfo_version(fake_slurm, "22.05.8")


def sinfo_version(slurm: FakeSlurm, version: str | None) -> FakeSlurm:
    """``sinfo --version`` answers ``version``, or sinfo is not installed (None)."""
    if version is None:
        return slurm.missing("sinfo")
    return slurm.on(["sinfo", "--version"], f"slurm-wlm {version}\n")


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.fixture
def bound(tmp_path: Path) -> str:
    return write(tmp_path, "bound.slurm", BOUND_TEXT)


def test_errors_exit_1_with_file_line_severity_rule_and_fix(run_cli, sinfo, bound) -> None:
    result = run_cli("lint", bound, exit_code=1)
    first, fix = result.stdout.splitlines()
    assert first.startswith(f"{bound}:12: error: srun does not inherit #SBATCH --cpus-per-task=96")
    assert first.endswith("[srun-cpus-per-task]")
    assert fix.startswith("    fix: srun --cpus-per-task=$SLURM_CPUS_PER_TASK")
    assert "1 error, 0 warnings in 1 script (Slurm 22.05.8, from sinfo)" in result.stderr
    assert sinfo.calls == [("sinfo", "--version")]


def test_version_from_sinfo_decides(run_cli, sinfo) -> None:
    sinfo_version(sinfo, "24.11.5")
    result = run_cli("lint", BAD, exit_code=0)
    assert result.stdout == ""
    assert "0 errors, 0 warnings" in result.stderr and "24.11.5" in result.stderr


def test_slurm_version_option_wins_and_asks_nobody(run_cli, sinfo, bound) -> None:
    run_cli("lint", "--slurm-version", "24.11", bound, exit_code=0)
    run_cli("lint", "--slurm-version", "23.02.7", bound, exit_code=1)
    assert sinfo.calls == []


def test_without_slurm_the_rules_of_every_version_apply(run_cli, sinfo, tmp_path, bound) -> None:
    sinfo_version(sinfo, None)
    result = run_cli("lint", bound, exit_code=1)
    assert "cannot read the Slurm version" in result.stderr
    assert "every version from 22.05 on" in result.stderr
    assert "on Slurm 22.05 to 23.02" in result.stdout
    relying = write(
        tmp_path,
        "env.slurm",
        # 2, not the job's 4: from 23.11 srun takes the job's 4 and this value is lost
        CLEAN.replace("srun -c 4 hostname", "export SRUN_CPUS_PER_TASK=2\nsrun python t.py"),
    )
    result = run_cli("lint", relying, exit_code=0)  # the 23.11+ warning only
    assert "warning: this srun relies on SRUN_CPUS_PER_TASK alone" in result.stdout


def test_warnings_alone_exit_0(run_cli, sinfo, tmp_path) -> None:
    result = run_cli("lint", write(tmp_path, "w.slurm", WARN_ONLY), exit_code=0)
    assert "warning: --output=out.log" in result.stdout and "[output-collides]" in result.stdout
    # missing-time is info (0 of 45 right on published scripts): hidden, and counted
    assert "[missing-time]" not in result.stdout
    assert "1 info (--info shows them)" in result.stderr
    shown = run_cli("lint", "--info", write(tmp_path, "w.slurm", WARN_ONLY), exit_code=0)
    assert "info: no --time" in shown.stdout and "[missing-time]" in shown.stdout


def test_explain_prints_why_example_fix_and_precision(run_cli, sinfo) -> None:
    out = run_cli("lint", "--explain", "tee-without-pipefail").stdout
    from slurmkit.lint.precision import PRECISION
    from slurmkit.lint.precision_unseen import UNSEEN

    right, judged = PRECISION["tee-without-pipefail"]
    measured = f"on published scripts: {right} of {judged} findings right"
    unseen_right, unseen_judged = UNSEEN["tee-without-pipefail"]
    unseen = f"on scripts it had never seen: {unseen_right} of {unseen_judged} right"
    assert out.startswith(f"tee-without-pipefail (warning; {measured}; {unseen})")
    assert "why:" in out and "example:" in out and "fix: set -o pipefail" in out
    run_cli("lint", "--explain", "no-such-rule", exit_code=2)


def test_json_output(run_cli, sinfo, tmp_path, bound) -> None:
    clean = write(tmp_path, "clean.slurm", CLEAN)
    result = run_cli("lint", "--json", bound, clean, exit_code=1)
    data = json.loads(result.stdout)
    assert data["slurm_version"] == "22.05.8" and data["version_source"] == "sinfo"
    assert data["scripts"] == [bound, clean]
    assert (data["errors"], data["warnings"]) == (1, 0)
    (finding,) = data["findings"]
    assert finding == {
        "file": bound,
        "line": 12,
        "severity": "error",
        "rule": "srun-cpus-per-task",
        "message": finding["message"],
        "fix": finding["fix"],
    }
    result = run_cli("lint", "--json", "--slurm-version", "24.11", clean, exit_code=0)
    assert json.loads(result.stdout)["findings"] == []


def test_stdin(run_cli, sinfo) -> None:
    result = run_cli("lint", "-", input=BOUND_TEXT, exit_code=1)
    assert result.stdout.startswith("-:12: error:")
    plain = run_cli("lint", "-", input=BAD_TEXT, exit_code=0)  # depends on the cluster
    assert plain.stdout.startswith("-:12: warning:")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: str(d / "missing.slurm"), "no such file"),
        (lambda d: str(d), "it is a directory"),
        (lambda d: _bytes(d / "bin", b"\x7fELF\x00\x01"), "not a text file (it contains NUL"),
        (lambda d: _bytes(d / "latin", b"#!/bin/bash\necho caf\xe9\n"), "not UTF-8"),
    ],
)
def test_bad_files_exit_2_and_lint_nothing(run_cli, sinfo, tmp_path, make, message) -> None:
    result = run_cli("lint", BAD, make(tmp_path), exit_code=2)
    assert result.stdout == ""
    assert result.stderr.startswith("slurmkit: cannot lint ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def _bytes(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_usage_errors(run_cli, sinfo) -> None:
    assert "give at least one SCRIPT" in run_cli("lint", exit_code=2).stderr
    result = run_cli("lint", "--slurm-version", "new", BAD, exit_code=2)
    assert "--slurm-version 'new'" in result.stderr


def test_list_rules(run_cli, sinfo) -> None:
    table = run_cli("lint", "--list-rules").stdout
    assert "srun-cpus-per-task" in table and "nodes-mismatch" in table
    rows = json.loads(run_cli("lint", "--list-rules", "--json").stdout)
    by_id = {row["id"]: row for row in rows}
    assert by_id["missing-time"]["severity"] == "info"
    from slurmkit.lint.precision import PRECISION  # the committed table, shown as is
    from slurmkit.lint.precision_unseen import UNSEEN  # the test parts as first scored

    for rule in ("missing-time", "srun-cpus-per-task"):
        assert (by_id[rule]["right"], by_id[rule]["judged"]) == PRECISION[rule]
        assert (by_id[rule]["unseen_right"], by_id[rule]["unseen_judged"]) == UNSEEN[rule]
    # the two figures side by side: tuned on, then unseen
    right, judged = PRECISION["unset-variable-option"]
    unseen_right, unseen_judged = UNSEEN["unset-variable-option"]
    row = next(line for line in table.splitlines() if line.startswith("unset-variable-option"))
    tuned_at = row.index(f"({right}/{judged})")
    assert row.index(f"({unseen_right}/{unseen_judged})", tuned_at + 1) > tuned_at
    right, judged = PRECISION["output-dir-missing"]
    assert f"{100 * right // judged}% ({right}/{judged})" in table
    # a rule with no finding on the development part is unmeasured, not 0%
    # (driver-every-node: no finding on any part yet; non-ascii-dash was such a rule until
    # the tenth test part)
    assert "driver-every-node" not in PRECISION and "driver-every-node" not in UNSEEN
    row = next(line for line in table.splitlines() if line.startswith("driver-every-node"))
    assert "unmeasured" in row
    explained = run_cli("lint", "--explain", "driver-every-node").stdout
    assert explained.startswith(
        "driver-every-node (error; on published scripts: unmeasured; "
        "on scripts it had never seen: no finding yet)"
    )
    assert sinfo.calls == []


def test_lint_looks_the_log_directory_up_in_the_submit_dir(
    run_cli, sinfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 item 3: --submit-dir is where sbatch will run; lint's own directory is not."""
    script = write(
        tmp_path, "job.slurm", "#!/bin/bash\n#SBATCH -t 5\n#SBATCH -o logs/%j.out\nhostname\n"
    )
    monkeypatch.chdir(tmp_path)
    run_cli("lint", script, exit_code=0)  # from here: unknown, not an error
    result = run_cli("lint", "--submit-dir", str(tmp_path), script, exit_code=1)
    assert f"the directory {tmp_path}/logs does not exist" in result.stdout
    assert "[output-dir-missing]" in result.stdout
    (tmp_path / "logs").mkdir()
    run_cli("lint", "--submit-dir", str(tmp_path), script, exit_code=0)


def test_a_submit_dir_that_does_not_exist_is_one_line(run_cli, sinfo, tmp_path: Path) -> None:
    script = write(tmp_path, "job.slurm", "#!/bin/bash\n#SBATCH -t 5\nhostname\n")
    result = run_cli("lint", "--submit-dir", str(tmp_path / "nope"), script, exit_code=2)
    assert "--submit-dir" in result.stderr and "no such directory" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_the_unseen_precision_names_scoring_commits_of_this_history() -> None:
    """Each test part's figure comes from the commit it was scored at, which must exist."""
    import subprocess

    from benchmarks.unseen_precision import SCORED
    from slurmkit.lint import precision_unseen

    doc = precision_unseen.__doc__ or ""
    for part, commit in SCORED:
        assert f"``{part}/`` at {commit}" in doc
        found = subprocess.run(
            ["git", "-C", str(Path(__file__).parents[2]), "cat-file", "-e", f"{commit}^{{commit}}"],
            check=False,
        )
        assert found.returncode == 0, commit
