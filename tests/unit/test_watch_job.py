"""watch job: alive means running or pending-and-able-to-run; never counts itself.

Records come from the recorded ``scontrol show job -d`` of both Slurm versions (held
by user and admin, afterok dependency, begin later, pending on resources, array);
the never-satisfied dependency, which no recording holds, is built by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from fixtures_path import VERSIONS, read

from slurmkit.slurm import query
from slurmkit.slurm.liveness import can_run, stuck_reason
from slurmkit.slurm.parse_records import parse_scontrol_jobs
from slurmkit.slurm.parse_text import DELIMITER, SQUEUE_COLUMNS
from slurmkit.slurm.records import Job
from slurmkit.watch.job import OwnJob, assess_jobs, check_job
from tests.fakes import FakeSlurm

NOBODY = OwnJob()


def recorded(version: str) -> dict[str, Job]:
    jobs = parse_scontrol_jobs(read(version, "03_jobs", "scontrol_show_job_all_d.txt"))
    return {j.name: j for j in jobs}


def named(job: Job, name: str = "train") -> Job:
    return replace(job, name=name)


@pytest.mark.parametrize("version", VERSIONS)
def test_recorded_pending_states(version: str) -> None:
    jobs = recorded(version)
    assert stuck_reason(jobs["held-user"]) == "held (JobHeldUser)"
    assert stuck_reason(jobs["held-admin"]) == "held (JobHeldAdmin)"
    for alive in ("dep-afterok", "begin-later", "pending-resources"):
        assert stuck_reason(jobs[alive]) is None and can_run(jobs[alive])
    assert can_run(jobs["train_resnet50_imagenet_full_run_long_name"])
    assert not can_run(jobs["completed-2node"]) and not can_run(jobs["failed-exit3"])


@pytest.mark.parametrize("version", VERSIONS)
def test_held_jobs_alone_alert_and_a_pending_one_is_alive(version: str) -> None:
    jobs = recorded(version)
    held = [named(jobs["held-user"]), named(jobs["held-admin"])]
    finding = assess_jobs(held, "train", "stas", NOBODY)
    assert not finding.healthy
    assert finding.message.startswith("no job can run: job 6 PENDING, held (JobHeldUser)")
    assert finding.key == "job:stas:train" and finding.subject == "job train (stas)"
    finding = assess_jobs([*held, named(jobs["begin-later"])], "train", "stas", NOBODY)
    assert finding.healthy and finding.message.startswith("job 9 PENDING (BeginTime)")


@pytest.mark.parametrize("version", VERSIONS)
def test_running_job_is_named_first(version: str) -> None:
    jobs = recorded(version)
    finding = assess_jobs(
        [
            named(jobs["pending-resources"]),
            named(jobs["train_resnet50_imagenet_full_run_long_name"]),
        ],
        "train",
        None,
        NOBODY,
    )
    assert finding.healthy and finding.message.startswith("job 3 RUNNING on node-")
    assert finding.key == "job:*:train"


def test_dependency_never_satisfied_is_not_alive() -> None:
    job = Job(job_id="12", name="train", state="PENDING", reason="DependencyNeverSatisfied")
    finding = assess_jobs([job], "train", "u", NOBODY)
    assert not finding.healthy
    assert "job 12 PENDING, DependencyNeverSatisfied" in finding.message


def test_no_job_at_all() -> None:
    finding = assess_jobs([], "train", "u", NOBODY)
    assert not finding.healthy
    assert finding.message == "no job named train of user u is running or queued"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_watchdog_never_counts_itself_nor_its_array(version: str) -> None:
    jobs = recorded(version)
    me = named(replace(jobs["train_resnet50_imagenet_full_run_long_name"], job_id="3"))
    finding = assess_jobs([me], "train", "u", OwnJob.from_env({"SLURM_JOB_ID": "3"}))
    assert not finding.healthy
    assert "(only this watchdog, job 3, has that name)" in finding.message
    # an array watchdog: task 5 (array 4) runs, its pending siblings (record 4) are itself too
    tasks = [named(jobs["array-1-6"]), named(next(j for j in parse_scontrol_jobs(
        read(version, "03_jobs", "scontrol_show_job_all_d.txt")) if j.job_id == "5"))]  # fmt: skip
    own = OwnJob.from_env({"SLURM_JOB_ID": "5", "SLURM_ARRAY_JOB_ID": "4"})
    assert not assess_jobs(tasks, "train", "u", own).healthy
    assert assess_jobs(tasks, "train", "u", NOBODY).healthy


# ---------------------------------------------------------------- at the argv seam


@pytest.fixture
def runner(fake_slurm: FakeSlurm) -> Callable[..., FakeSlurm]:
    """``runner(argv, rc, stdout, stderr)``: the one answer the fake Slurm gives."""

    def install(argv: list[str], rc: int, stdout: str, stderr: str = "") -> FakeSlurm:
        return fake_slurm.on(argv, stdout, rc=rc, stderr=stderr)

    return install


def row(**values: str) -> str:
    return DELIMITER.join(values.get(c, "N/A") for c, _ in SQUEUE_COLUMNS) + "\n"


def test_check_job_is_one_squeue(runner) -> None:
    fake = runner(
        query.squeue_argv(user="u", name="train"),
        0,
        row(job_id="8", name="train", user="u", state="RUNNING", reason="None", nodelist="n-1"),
    )
    finding = check_job("train", "u", NOBODY)
    assert finding.healthy and finding.message == "job 8 RUNNING on n-1"
    assert len(fake.calls) == 1


@pytest.mark.parametrize(
    ("rc", "stderr", "words"),
    [
        (1, "squeue: error: Unable to contact slurm controller (connect failure)", "cannot reach"),
        (1, "squeue: error: Invalid user: u", "cannot read the queue"),
    ],
)
def test_a_failing_squeue_is_an_alert_not_a_crash(runner, rc: int, stderr: str, words: str) -> None:
    runner(query.squeue_argv(user="u", name="train"), rc, "", stderr)
    finding = check_job("train", "u", NOBODY)
    assert not finding.healthy and words in finding.message


def test_squeue_missing_is_an_alert(fake_slurm: FakeSlurm) -> None:
    fake_slurm.missing("squeue")
    finding = check_job("train", "u", NOBODY)
    assert not finding.healthy and "not found on PATH" in finding.message


def test_cli_exit_codes(run_cli, runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    runner(query.squeue_argv(user="u", name="train"), 0, "")
    runner(query.squeue_argv(user="u", name="train", states="all"), 0, "")  # how the last ended
    out = run_cli("watch", "job", "--name", "train", "--user", "u", exit_code=1)
    assert out.stdout == "ALERT job train (u): no job named train of user u is running or queued\n"
    runner(query.squeue_argv(name="train"), 0, row(job_id="1", name="train", state="PENDING",
                                                    reason="Priority"))  # fmt: skip
    out = run_cli("watch", "job", "--name", "train", "--any-user", exit_code=0)
    assert out.stdout.startswith("OK job train: job 1 PENDING (Priority)")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--name", "a,b"], "one job name"),
        (["--name", "a", "--user", "u", "--any-user"], "exclude each other"),
        (["--name", "a", "--notify", "pager:x"], "expected email:ADDRESS"),
        (["--name", "a", "--realert", "often"], "--realert 'often'"),
    ],
)
def test_cli_usage_errors(run_cli, args: list[str], words: str) -> None:
    out = run_cli("watch", "job", *args, exit_code=2)
    assert words in out.stderr and out.stdout == ""
