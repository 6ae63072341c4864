"""``slurmkit why`` end to end against the fake Slurm answering with the real 22.05
recording: exit codes, a fixed number of Slurm calls, slurmdbd down, another user's job,
and logs that cannot be read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slurmkit.slurm.parse_text import DELIMITER
from slurmkit.why import logs
from tests.fakes import FakeSlurm
from tests.unit.test_why_ended import allocation_lines, recorded

UNKNOWN = (1, "", "slurm_load_jobs error: Invalid job id specified\n")
NO_DBD = (1, "", "sacct: error: slurm_persist_conn_open: No response to persist_init\n")


def job_lines(*jobs: str, ended_only: bool = False) -> str:
    """The recording's lines of ``jobs`` (and their steps), separator swapped for ours;
    ``ended_only``: without the attempt still running (23 ran again after its NODE_FAIL)."""
    text, index = recorded("22.05", "sacct.txt")
    lines = text.replace(index["_delimiter"], DELIMITER).splitlines()
    keep = [ln for ln in lines if DELIMITER in ln and ln.split(DELIMITER)[1].split(".")[0] in jobs]
    if ended_only:
        keep = [ln for ln in keep if ln.split(DELIMITER)[4] != "RUNNING"]
    return "\n".join(keep) + "\n"


def routes(fake: FakeSlurm, sacct: object, scontrol: object = UNKNOWN) -> FakeSlurm:
    fake.on(["sacct", "**"], answer=sacct)  # type: ignore[arg-type]
    if isinstance(sacct, tuple) and sacct[0] == 0:
        narrow = (0, allocation_lines(sacct[1]), sacct[2])
        fake.on(["sacct", "**", "--allocations", "**"], answer=narrow)
    fake.on(["scontrol", "--details", "show", "job", "*"], answer=scontrol)  # type: ignore[arg-type]
    fake.on(["sinfo", "**"], "")
    fake.on(["sacctmgr", "**"], "node-3|2026-11-29T01:02:05|Unknown|DOWN*|root(0)|Not responding\n")
    return fake


@pytest.mark.parametrize(
    ("job", "rc", "first"),
    [
        ("22_2", 0, "job 22_2 completed (exit 0)"),
        ("18", 1, "job 18 failed: step batch exit code 3"),
        ("16", 1, "job 16 hit its time limit"),
        ("23", 1, "job 23 ended NODE_FAIL: node node-3"),
    ],
)
def test_verdict_line_first_and_the_exit_code(
    fake_slurm: FakeSlurm, run_cli, job: str, rc: int, first: str
) -> None:
    routes(fake_slurm, (0, job_lines(job, ended_only=True), ""))
    out = run_cli("why", job, exit_code=rc)
    assert out.stdout.splitlines()[0].startswith(first), out.stdout


def test_a_fixed_number_of_calls_whatever_the_steps(fake_slurm: FakeSlurm, run_cli) -> None:
    """sacct twice (allocations, then the job's steps), scontrol once, sinfo -R once
    (ended), sacctmgr once (NODE_FAIL)."""
    routes(fake_slurm, (0, job_lines("23", ended_only=True), ""))
    run_cli("why", "23", exit_code=1)
    called = sorted(c[0] for c in fake_slurm.calls)
    assert called == ["sacct", "sacct", "sacctmgr", "scontrol", "sinfo"]
    assert ["--allocations" in c for c in fake_slurm.calls_to("sacct")] == [True, False]


def test_json_is_the_documented_schema(fake_slurm: FakeSlurm, run_cli) -> None:
    routes(fake_slurm, (0, job_lines("14"), ""))
    data = json.loads(run_cli("why", "14", "--json", exit_code=1).stdout)
    assert data["schema"] == 1 and data["kind"] == "ended" and data["job_id"] == "14"
    assert {"label", "text", "source"} == set(data["evidence"][0])
    assert data["data"]["efficiency"]["memory_request"] == 400 << 20


def test_unknown_job_is_one_line_exit_2(fake_slurm: FakeSlurm, run_cli) -> None:
    routes(fake_slurm, (0, "", ""))
    out = run_cli("why", "424242", exit_code=2)
    assert out.stderr.strip().count("\n") == 0 and "unknown job 424242" in out.stderr


@pytest.mark.parametrize("bad", ["abc", "12_x", "-1", "1.batch"])
def test_bad_job_ids_are_usage_errors(fake_slurm: FakeSlurm, run_cli, bad: str) -> None:
    out = run_cli("why", "--", bad, exit_code=2)
    assert "not a job id" in out.stderr and fake_slurm.calls == []


def test_job_and_train_together_is_a_usage_error(run_cli) -> None:
    assert "one of them" in run_cli("why", "1", "--train", "t", exit_code=2).stderr
    assert "one of them" in run_cli("why", exit_code=2).stderr


SCONTROL_FAILED = (
    "JobId=18 JobName=exit3\n   UserId=root(0) GroupId=root(0)\n   JobState=FAILED "
    "Reason=NonZeroExitCode Dependency=(null)\n   Requeue=1 Restarts=0 BatchFlag=1 ExitCode=3:0\n"
    "   NodeList=node-2\n   StdOut=/nonexistent/18.out\n"
)


def test_slurmdbd_down_answers_from_slurmctld_with_a_note(fake_slurm: FakeSlurm, run_cli) -> None:
    routes(fake_slurm, NO_DBD, (0, SCONTROL_FAILED, ""))
    out = run_cli("why", "18", "--json", exit_code=1)
    data = json.loads(out.stdout)
    assert data["headline"] == "job 18 failed: exit code 3"
    assert any("slurmctld alone" in n for n in data["notes"]), data


def test_another_users_job_says_what_private_data_hides(
    fake_slurm: FakeSlurm, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slurmkit.why import explain

    monkeypatch.setattr(explain, "_caller", lambda: "alice")
    routes(fake_slurm, (0, job_lines("19"), ""))
    data = json.loads(run_cli("why", "19", "--json", exit_code=1).stdout)
    assert any("PrivateData" in n for n in data["notes"]), data


def test_a_running_job_takes_its_usage_from_sstat(fake_slurm: FakeSlurm, run_cli) -> None:
    """Job 20 runs again after a requeue: its batch step's memory comes from sstat."""
    routes(fake_slurm, (0, job_lines("20"), ""))
    fake_slurm.on(["sstat", "**"], recorded("22.05", "sstat.txt")[0])
    data = json.loads(run_cli("why", "20", "--json", exit_code=0).stdout)
    assert data["kind"] == "running" and data["data"]["attempts"] == 2
    (batch,) = data["data"]["efficiency"]["steps"]
    assert batch["memory"] == 3 << 20
    assert fake_slurm.count("sstat") == 1 and fake_slurm.count("sinfo") == 0


# ---------------------------------------------------------------- logs


def test_unreadable_huge_binary_and_fifo_logs_are_skipped_with_a_note(tmp_path: Path) -> None:
    binary = tmp_path / "bin.out"
    binary.write_bytes(b"ok\n\0\0\0")
    huge = tmp_path / "huge.out"
    with huge.open("wb") as handle:
        handle.truncate(logs.MAX_BYTES + 1)
    fifo = tmp_path / "fifo.out"
    os.mkfifo(fifo)
    report = logs.scan([str(binary), str(huge), str(fifo), str(tmp_path / "gone.out")])
    assert report.findings == () and report.tails == {}
    text = "\n".join(report.notes)
    assert "binary" in text and "larger than" in text and "not a regular file" in text
    assert "not found" in text


def test_known_signatures_in_a_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "job.err"
    log.write_text(
        "step 10\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "node-2:123:456 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: "
        "Connect to 10.0.0.3<45678> failed : Connection refused\n"
        "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5)\n"
        "/var/spool/slurmd/job00042/slurm_script: line 9:  4242 Bus error   python t.py\n"
        "srun: error: node-2: task 0: Killed\n"
        "Traceback (most recent call last):\n"
        '  File "t.py", line 3, in <module>\n'
        "    main()\n"
        "KeyError: 'lr'\n"
    )
    found = {f.label: f.line for f in logs.scan([str(log)]).findings}
    assert set(found) >= {
        "CUDA out of memory",
        "NCCL connection failed",
        "NCCL timeout",
        "bus error",
        "killed",
        "Python exception",
    }
    assert found["Python exception"] == "KeyError: 'lr'"


SCONTROL_RUNNING = (
    "JobId=20 JobName=requeue\n   UserId=root(0) GroupId=root(0)\n   JobState=RUNNING "
    "Reason=None Dependency=(null)\n   Requeue=1 Restarts=1 BatchFlag=1 ExitCode=0:0\n"
    "   NodeList=node-1\n   StdOut=/dev/null\n"
)


def test_a_running_job_asks_the_hang_part_and_keeps_its_usage(
    fake_slurm: FakeSlurm, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hang verdict wins the headline; the usage from sacct and sstat stays as evidence."""
    from slurmkit.why import hung
    from slurmkit.why.model import Verdict

    asked: list[hung.Options] = []

    def fake_hung(job, options):  # type: ignore[no-untyped-def]
        asked.append(options)
        return Verdict(job.job_id, "hung", "job 20 looks hung: suspect node-1", "bad")

    monkeypatch.setattr(hung, "explain", fake_hung)
    routes(fake_slurm, (0, job_lines("20"), ""), (0, SCONTROL_RUNNING, ""))
    fake_slurm.on(["sstat", "**"], recorded("22.05", "sstat.txt")[0])
    out = run_cli("why", "20", "--stale", "5m", "--stacks", exit_code=1)
    assert out.stdout.splitlines()[0] == "job 20 looks hung: suspect node-1"
    assert "efficiency: step 20.batch" in out.stdout
    assert asked and asked[0].stale == 300 and asked[0].stacks


def test_train_without_such_a_train_is_one_line_exit_2(run_cli, tmp_path: Path) -> None:
    out = run_cli("why", "--train", "nope", "--dir", str(tmp_path), exit_code=2)
    assert out.stderr.startswith("slurmkit: unknown train 'nope'") and out.stderr.count("\n") == 1


def test_kill_task_failed_drains_on_the_jobs_nodes_are_named(
    fake_slurm: FakeSlurm, run_cli
) -> None:
    """Job 18 ran on node-2; sinfo -R shows node-[2-3] drained "Kill task failed"."""
    routes(fake_slurm, (0, job_lines("18"), ""))
    reason = DELIMITER.join(
        ["Kill task failed", "root", "2026-11-29T01:00:00", "drained", "node-[2-3]"]
    )
    fake_slurm.on(["sinfo", "**"], reason + "\n")
    out = run_cli("why", "18", exit_code=1)
    assert "drained: 'Kill task failed' drains on the job's nodes: node-2" in out.stdout
