"""``slurmkit cpus check``: reading the test job's lines, the verdict, the CLI at the argv seam."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from slurmkit.cpus import modes, summarize
from slurmkit.errors import SlurmkitError
from slurmkit.templating.results import parse_cpus_lines
from tests.unit.test_faulty_scan import CheckJobCluster

# Recorded on the sandbox (Debian's Slurm 22.05.8), job 184 of `slurmkit cpus check`.
LOG_22_05 = (
    "slurmkit: job 184 (slurmkit-cpus-8e6493) on node-1, started "
    "2026-11-21T01:12:18+00:00\n"
    "srun: Job 184 step creation temporarily disabled, retrying (Requested "
    "nodes are busy)\n"
    "srun: Step created for job 184\n"
    "SLURMKIT_CPUS mode=batch node=node-1 task=batch affinity=2 step_cpus=- "
    "step_tasks=- per_task=- requested=2\n"
    "SLURMKIT_CPUS mode=srun node=node-1 task=1 affinity=2 step_cpus=4 "
    "step_tasks=2 per_task=2 requested=2\n"
    "SLURMKIT_CPUS mode=srun node=node-1 task=0 affinity=2 step_cpus=4 "
    "step_tasks=2 per_task=2 requested=2\n"
    "SLURMKIT_CPUS mode=srun-exact node=node-1 task=0 affinity=2 step_cpus=2 "
    "step_tasks=2 per_task=1 requested=2\n"
    "SLURMKIT_CPUS mode=srun-exact node=node-1 task=1 affinity=2 step_cpus=2 "
    "step_tasks=2 per_task=1 requested=2\n"
    "SLURMKIT_CPUS mode=srun-cpus-per-task node=node-1 task=1 affinity=2 "
    "step_cpus=4 step_tasks=2 per_task=2 requested=2\n"
    "SLURMKIT_CPUS mode=srun-cpus-per-task node=node-1 task=0 affinity=2 "
    "step_cpus=4 step_tasks=2 per_task=2 requested=2\n"
    "SLURMKIT_CPUS mode=srun-env node=node-1 task=1 affinity=2 step_cpus=4 "
    "step_tasks=2 per_task=2 requested=2\n"
    "SLURMKIT_CPUS mode=srun-env node=node-1 task=0 affinity=2 step_cpus=4 "
    "step_tasks=2 per_task=2 requested=2\n"
    "SLURMKIT_CPUS_VERDICT slurm=22.05.8 requested=2 srun=1 "
    "srun_cpus_per_task=2 srun_env=2 inherits=no affected=yes\n"
    "slurmkit: affected: a plain srun gives each task 1 CPU(s), not 2. Fix: "
    "srun --cpus-per-task=$SLURM_CPUS_PER_TASK (works on every version).\n"
)


def log_24_11() -> str:
    """What 24.11 prints: plain srun inherits, SRUN_CPUS_PER_TASK is ignored (same as plain)."""
    lines = []
    for mode in ("srun", "srun-exact", "srun-cpus-per-task", "srun-env"):
        for task in (0, 1):
            lines.append(
                f"SLURMKIT_CPUS mode={mode} node=n1 task={task} affinity=3 step_cpus=6 "
                "step_tasks=2 per_task=3 requested=3"
            )
    lines.append(
        "SLURMKIT_CPUS_VERDICT slurm=24.11.5 requested=3 srun=3 srun_cpus_per_task=3 srun_env=3 "
        "inherits=yes affected=no"
    )
    return "\n".join(lines) + "\n"


def test_recorded_22_05_log_is_affected_and_affinity_did_not_hide_it() -> None:
    report = summarize(LOG_22_05, "184", "COMPLETED", "/x.out")
    assert (report.slurm, report.requested, report.affected) == ("22.05.8", 2, True)
    exact = report.mode("srun-exact")
    assert exact is not None and (exact.given, exact.affinity_min) == (1, 2)  # affinity says 2
    plain = report.mode("srun")
    assert plain is not None and (plain.given, plain.step_cpus) == (2, 4)
    assert report.expected_affected is True
    assert report.exit_code == 1
    assert report.fixes[0].startswith("srun --cpus-per-task=$SLURM_CPUS_PER_TASK")
    assert any("SRUN_CPUS_PER_TASK" in fix for fix in report.fixes)


def test_24_11_log_is_not_affected() -> None:
    report = summarize(log_24_11(), "7", "COMPLETED", "/x.out")
    assert (report.affected, report.exit_code, report.fixes) == (False, 0, [])
    assert report.expected_affected is False
    assert [m.mode for m in report.modes] == [
        "srun",
        "srun-exact",
        "srun-cpus-per-task",
        "srun-env",
    ]


def test_env_fix_is_offered_only_when_it_worked() -> None:
    log = LOG_22_05.replace(
        "mode=srun-env node=node-1 task=1 affinity=2 step_cpus=4 step_tasks=2 per_task=2",
        "mode=srun-env node=node-1 task=1 affinity=2 step_cpus=2 step_tasks=2 per_task=1",
    )
    report = summarize(log, "1", "COMPLETED", "/x.out")
    assert report.affected is True and len(report.fixes) == 1


def test_undetermined_verdict_exits_1() -> None:
    log = LOG_22_05.replace("affected=yes", "affected=unknown")
    assert summarize(log, "1", "COMPLETED", "/x").exit_code == 1


def test_a_job_without_verdict_is_an_error_with_the_log_tail() -> None:
    with pytest.raises(SlurmkitError, match=r"job 9 ended FAILED without a verdict .*boom"):
        summarize("line\nboom\n", "9", "FAILED", "/x.out")
    with pytest.raises(SlurmkitError, match="empty log"):
        summarize("", "9", "CANCELLED", "/x.out")


def test_modes_take_the_fewest_cpus_any_task_was_given() -> None:
    lines = parse_cpus_lines(
        "SLURMKIT_CPUS mode=srun-exact node=a task=0 affinity=4 step_cpus=5 step_tasks=2 "
        "per_task=3\nSLURMKIT_CPUS mode=srun-exact node=b task=1 affinity=1 step_cpus=5 "
        "step_tasks=2 per_task=2\n"
    )
    (exact,) = modes(lines)
    assert (exact.tasks, exact.given, exact.affinity_min, exact.affinity_max) == (2, 2, 1, 4)


# ---------------------------------------------------------------- CLI


@pytest.fixture
def slurm(fake_slurm: CheckJobCluster, monkeypatch, tmp_path) -> Iterator[CheckJobCluster]:
    fake = CheckJobCluster(fake_slurm, log_lines=LOG_22_05.splitlines())
    monkeypatch.chdir(tmp_path)
    yield fake


def test_cli_reports_affected_and_the_fix(run_cli, slurm) -> None:
    result = run_cli("cpus", "check", "--dir", "work", "-c", "2", exit_code=1)
    assert (
        "Slurm 22.05.8: affected: a plain srun gives each task 1 CPU(s), not the 2" in result.stdout
    )
    assert "fix: srun --cpus-per-task=$SLURM_CPUS_PER_TASK" in result.stdout
    assert "srun-exact" in result.stdout and "job 42 COMPLETED" in result.stderr
    assert "#SBATCH --cpus-per-task=2" in slurm.script_text
    assert len(slurm.slurm_calls("sbatch")) == 1


def test_cli_passes_options_to_the_template(run_cli, slurm) -> None:
    run_cli(
        "cpus",
        "check",
        "--dir",
        "work",
        "-c",
        "6",
        "-N",
        "2",
        "-p",
        "cpu",
        "--timeout",
        "120",
        exit_code=1,
    )
    for line in ("--cpus-per-task=6", "--nodes=2", "--partition=cpu", "--time=00:02:00"):
        assert f"#SBATCH {line}" in slurm.script_text


def test_cli_json(run_cli, slurm) -> None:
    data = json.loads(run_cli("cpus", "check", "--dir", "work", "--json", exit_code=1).stdout)
    assert data["affected"] is True and data["expected_affected"] is True
    assert data["slurm"] == "22.05.8" and data["job_id"] == "42"
    exact = next(m for m in data["modes"] if m["mode"] == "srun-exact")
    assert exact["cpus_per_task_given"] == 1


def test_cli_not_affected_exits_0(run_cli, slurm) -> None:
    slurm.log_lines = log_24_11().splitlines()
    result = run_cli("cpus", "check", "--dir", "work", exit_code=0)
    assert "Slurm 24.11.5: not affected" in result.stdout and "fix:" not in result.stdout


def test_cli_job_never_starts(run_cli, slurm) -> None:
    slurm.states = ["PENDING"]
    slurm.pending_reason = "PartitionDown"
    result = run_cli("cpus", "check", "--dir", "work", "--timeout", "1", exit_code=2)
    assert "(pending: PartitionDown); cancelled it" in result.stderr
    assert slurm.slurm_calls("scancel")


def test_cli_rejects_one_cpu(run_cli, slurm) -> None:
    result = run_cli("cpus", "check", "-c", "1", exit_code=2)
    assert "--cpus-per-task" in result.stderr and not slurm.calls
