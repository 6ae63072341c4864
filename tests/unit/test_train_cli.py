"""``slurmkit train`` through the real CLI, with Slurm faked at the argv seam.

The fake answers sbatch, squeue, sacct, scontrol hold/release and scancel from a small
in-memory queue, hands ``bash -n`` to the real runner, and fails on any other command.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.unit.train_fakes import (
    GOOD,
    Run,
    TrainCluster,
    cluster_fixture,
    running_and_pending,
    sacct_row,
    script,
    squeue_row,
    started,
)

cluster = cluster_fixture(TrainCluster)


# ---------------------------------------------------------------- start


def test_start_submits_the_rendered_wrapper(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    folder = started(run_cli, tmp_path, "--", "--partition", "cpu")
    ((*sbatch, comment),) = cluster.slurm_calls("sbatch")
    assert sbatch == ["sbatch", "--parsable"]  # the wrapper goes on stdin: nothing to swap
    assert comment.startswith("--comment=slurmkit:")  # its token (issue 22)
    wrapper = (folder / "wrapper.slurm").read_text()
    assert cluster.inputs == [wrapper]
    assert (folder / "wrapper.slurm").stat().st_mode & 0o777 == 0o644
    assert wrapper.startswith("#!/bin/bash\n#SBATCH --array=1-5%1\n#SBATCH --job-name=tr\n")
    assert "#SBATCH --nodes=1\n#SBATCH --cpus-per-task=1\n#SBATCH --time=5\n" in wrapper
    assert "#SBATCH --partition=cpu\n" in wrapper
    assert f"target={folder / 'current'}\n" in wrapper
    assert f"kill_switch={folder / 'kill-switch'}\n" in wrapper
    assert (folder / "current").readlink() == tmp_path / "a.slurm"
    record = json.loads((folder / "train.json").read_text())
    assert record["arrays"] == [
        {"job_id": "115", "runs": 5, "submitted": record["arrays"][0]["submitted"], "after": None}
    ]
    assert record["extra"] == ["--partition=cpu"] and record["workdir"] == str(tmp_path)


def test_start_after_adds_the_dependency(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    cluster.queue = squeue_row(job_id="87", state="RUNNING")
    started(run_cli, tmp_path, "--after", "87")
    (sbatch,) = cluster.slurm_calls("sbatch")
    assert sbatch[2] == "--dependency=afterany:87"


@pytest.mark.parametrize(
    ("text", "args", "message"),
    [
        ("#!/bin/bash\necho hi\n", (), "no #SBATCH lines"),
        ("#!/bin/bash\n#SBATCH --time=5\n", (), "no --nodes"),
        ("#!/bin/bash\n#SBATCH -N1\nif then fi (\n", (), "does not parse as bash"),
        (GOOD, ("--name", "a/b"), "bad train name"),
        (GOOD, ("--", "--array=1-3"), "use the train's --runs"),
        (GOOD, ("--", "notanoption"), "not an sbatch option"),
        (GOOD, ("--after", "abc"), "expected a job id"),
    ],
)
def test_start_refuses_bad_input(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path, text: str, args: tuple, message: str
) -> None:
    result = run_cli("train", "start", script(tmp_path, text), *args, exit_code=2)
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert cluster.slurm_calls("sbatch") == []
    assert not (tmp_path / ".slurmkit" / "trains").exists() or not any(
        (tmp_path / ".slurmkit" / "trains").iterdir()
    )


def test_start_missing_script_and_zero_runs(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    result = run_cli("train", "start", str(tmp_path / "none.slurm"), exit_code=2)
    assert "no such file" in result.stderr
    run_cli("train", "start", script(tmp_path), "--runs", "0", exit_code=2)
    assert cluster.calls == []


def test_start_after_a_job_not_in_the_queue(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    result = run_cli("train", "start", script(tmp_path), "--after", "99", exit_code=2)
    assert "--after 99: no such job in the queue" in result.stderr
    assert cluster.slurm_calls("sbatch") == []


def test_start_twice_with_one_name_is_refused(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    result = run_cli("train", "start", script(tmp_path), "--name", "tr", exit_code=2)
    assert "already exists" in result.stderr
    assert len(cluster.slurm_calls("sbatch")) == 1


def test_failed_submission_leaves_no_train(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    folder = tmp_path / ".slurmkit" / "trains" / "tr"
    cluster.answers[("sbatch",)] = (
        1,
        "",
        "sbatch: error: Batch job submission failed: Invalid partition name specified\n",
    )
    result = run_cli("train", "start", script(tmp_path), "--name", "tr", exit_code=2)
    assert "Invalid partition name" in result.stderr
    assert not folder.exists()


# ---------------------------------------------------------------- status


def test_status_shows_running_pending_and_failures(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    cluster.sacct = sacct_row(
        job_id="116", display_id="115_1", state="FAILED", exit_code="2:0", time_used="00:00:01"
    )
    out = run_cli("train", "status", "--json").stdout
    status = json.loads(out)
    assert status["state"] == "running"
    assert status["running"]["id"] == "115_2" and status["running"]["elapsed_s"] == 70
    assert status["pending"] == 3 and not status["held"]
    assert status["pending_priority"] == 1234
    assert status["failed"] == ["115_1"]
    assert status["next_script"] == str(tmp_path / "a.slurm")
    assert status["next_start_note"].startswith("when 115_2 ends")
    text = run_cli("train", "status", "tr").stdout
    assert "115_1 FAILED exit 2" in text and "3 (JobArrayTaskLimit), priority 1234" in text


def test_status_survives_accounting_down(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    sacct = next(iter(_sacct_argv()))
    cluster.answers[sacct] = (1, "", "sacct: error: Problem talking to the database\n")
    result = run_cli("train", "status")
    assert "finished runs unknown" in result.stderr
    assert "115_2 on node-1" in result.stdout


def _sacct_argv() -> list[tuple[str, ...]]:
    from slurmkit.slurm.query import sacct_argv

    return [tuple(sacct_argv(job_ids=["115"]))]


def test_status_unknown_train_and_several_trains(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    result = run_cli("train", "status", exit_code=2)
    assert "no trains in" in result.stderr
    started(run_cli, tmp_path)
    run_cli("train", "start", script(tmp_path), "--runs", "2", "--name", "other")
    result = run_cli("train", "status", exit_code=2)
    assert "2 trains in" in result.stderr and "name one" in result.stderr
    result = run_cli("train", "status", "nope", exit_code=2)
    assert "unknown train 'nope'" in result.stderr


# ---------------------------------------------------------------- hold / release / stop


def test_hold_dry_run_runs_nothing(run_cli: Run, cluster: TrainCluster, tmp_path: Path) -> None:
    started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    out = run_cli("train", "hold", "--dry-run").stdout
    assert "would run: scontrol hold 115" in out
    assert "3 pending run(s)" in out and "115_2 keeps running" in out
    assert cluster.slurm_calls("scontrol") == [("scontrol", "show", "config")]  # queue age


def test_hold_and_release_call_scontrol_on_the_array(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    folder = started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    run_cli("train", "hold", "--yes")
    run_cli("train", "release", "tr", "--yes")
    assert cluster.slurm_calls("scontrol") == [
        ("scontrol", "hold", "115"),
        ("scontrol", "show", "config"),  # does the release keep the queue age
        ("scontrol", "release", "115"),
    ]
    events = json.loads((folder / "train.json").read_text())["events"]
    assert [e["what"] for e in events] == ["start", "hold", "release"]


def test_hold_on_a_finished_train(run_cli: Run, cluster: TrainCluster, tmp_path: Path) -> None:
    started(run_cli, tmp_path)
    result = run_cli("train", "hold", exit_code=2)
    assert "already finished" in result.stderr and "nothing to hold" in result.stderr
    assert cluster.slurm_calls("scontrol") == []


def test_hold_of_someone_elses_array_is_explained(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    cluster.queue = running_and_pending(user="alice")
    cluster.answers[("scontrol", "hold", "115")] = (1, "", "115_2-5: Invalid user id\n")
    result = run_cli("train", "hold", "-y", exit_code=2)
    assert "Invalid user id" in result.stderr
    assert "belongs to alice" in result.stderr
    assert "kill-switch on tr" in result.stderr


def test_stop_without_terminal_or_yes_is_a_dry_run(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    result = run_cli("train", "stop", exit_code=1)
    assert "dry run only" in result.stderr
    assert "would run: scancel --state=PENDING 115" in result.stdout
    assert cluster.slurm_calls("scancel") == []


def test_stop_yes_and_now(run_cli: Run, cluster: TrainCluster, tmp_path: Path) -> None:
    started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    out = run_cli("train", "stop", "--yes").stdout
    assert "cancel 3 pending run(s); let finish running 115_2" in out
    run_cli("train", "stop", "--yes", "--now")
    assert cluster.slurm_calls("scancel") == [
        ("scancel", "--state=PENDING", "115"),
        ("scancel", "115"),
    ]


def test_stop_of_a_finished_train_is_a_no_op(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    assert "already finished" in run_cli("train", "stop", "--yes").stdout
    assert cluster.slurm_calls("scancel") == []


# ---------------------------------------------------------------- switch / extend


def test_switch_refuses_other_resources_with_a_diff(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    folder = started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    new = script(tmp_path, "#!/bin/bash\n#SBATCH --nodes=2 -c1 --time=5\n", "b.slurm")
    result = run_cli("train", "switch", new, exit_code=2)
    assert "-#SBATCH --nodes=1\n+#SBATCH --nodes=2" in result.stderr
    assert "switch refused" in result.stderr and "--nodes 1 -> 2" in result.stderr
    assert (folder / "current").readlink() == tmp_path / "a.slurm"


def test_switch_dry_run_then_real(run_cli: Run, cluster: TrainCluster, tmp_path: Path) -> None:
    folder = started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    new = script(tmp_path, GOOD.replace("echo train", "echo two"), "b.slurm")
    assert "would point" in run_cli("train", "switch", new, "tr", "--dry-run").stdout
    assert (folder / "current").readlink() == tmp_path / "a.slurm"
    run_cli("train", "switch", new, "--yes")
    assert (folder / "current").readlink() == tmp_path / "b.slurm"


def test_switch_to_a_missing_or_broken_script(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    assert "no such file" in run_cli("train", "switch", "nope.slurm", exit_code=2).stderr
    broken = script(tmp_path, GOOD + "if then fi (\n", "b.slurm")
    assert "does not parse as bash" in run_cli("train", "switch", broken, exit_code=2).stderr


def test_extend_submits_a_dependent_array(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    folder = started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    out = run_cli("train", "extend", "--runs", "3", "--dry-run").stdout
    chdir = f"--chdir={tmp_path}"
    expected = shlex.join(
        ["sbatch", "--parsable", "--array=1-3%1", "--dependency=afterany:115", chdir]
    )
    assert f"would run: {expected} --comment=slurmkit:" in out
    assert f"{folder / 'wrapper.slurm'} on sbatch's stdin" in out
    assert len(cluster.slurm_calls("sbatch")) == 1
    run_cli("train", "extend", "--runs", "3", "--yes")
    *argv, comment = cluster.slurm_calls("sbatch")[-1]
    assert shlex.join(argv) == expected and comment.startswith("--comment=slurmkit:")
    assert cluster.inputs[-1] == (folder / "wrapper.slurm").read_text()
    arrays = json.loads((folder / "train.json").read_text())["arrays"]
    assert [(a["job_id"], a["runs"], a["after"]) for a in arrays] == [
        ("115", 5, None),
        ("130", 3, "115"),
    ]


def test_extend_finished_train_is_refused(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    assert "already finished" in run_cli("train", "extend", "--runs", "2", exit_code=2).stderr


# ---------------------------------------------------------------- kill switch


def test_kill_switch_and_should_stop(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = started(run_cli, tmp_path)
    run_cli("train", "should-stop", exit_code=1)
    assert "would create" in run_cli("train", "kill-switch", "on", "--dry-run").stdout
    assert not (folder / "kill-switch").exists()
    run_cli("train", "kill-switch", "on", "tr", "--yes")
    assert (folder / "kill-switch").exists()
    run_cli("train", "should-stop", "tr", exit_code=0)
    assert json.loads(run_cli("train", "kill-switch", "status", "--json").stdout)["on"] is True
    run_cli("train", "kill-switch", "off", "--yes")
    run_cli("train", "should-stop", exit_code=1)
    flag = tmp_path / "flag"
    monkeypatch.setenv("SLURMKIT_KILL_SWITCH", str(flag))
    run_cli("train", "should-stop", exit_code=1)
    flag.touch()
    run_cli("train", "should-stop", exit_code=0)
    run_cli("train", "should-stop", "nope", exit_code=2)
    assert cluster.slurm_calls("scontrol") == [] and cluster.slurm_calls("scancel") == []


def test_kill_switch_bad_action(run_cli: Run, cluster: TrainCluster, tmp_path: Path) -> None:
    started(run_cli, tmp_path)
    assert "Invalid value" in run_cli("train", "kill-switch", "maybe", exit_code=2).stderr


def test_status_held_and_expected_start(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    pending = {
        "job_id": "115",
        "array_job_id": "115",
        "array_task_id": "1-5%1",
        "name": "tr",
        "user": "root",
        "state": "PENDING",
        "time_limit": "5:00",
    }
    cluster.queue = squeue_row(**pending, reason="JobHeldAdmin")
    status = json.loads(run_cli("train", "status", "--json").stdout)
    assert (status["state"], status["pending"], status["held"]) == ("held", 5, True)
    assert status["next_start_note"].startswith("held")
    cluster.queue = squeue_row(**pending, reason="Priority", start_time="2026-11-21T03:00:00")
    status = json.loads(run_cli("train", "status", "--json").stdout)
    assert status["state"] == "pending" and not status["held"]
    assert status["next_start"].startswith("2026-11-21T03:00:00")
    assert "squeue --start" in status["next_start_note"]
    assert any("--start" in call for call in cluster.slurm_calls("squeue"))


# ---------------------------------------------------------------- the confirm rule


@pytest.mark.parametrize(
    ("args", "acted"),
    [
        (("hold",), ("scontrol", "hold", "115")),
        (("release",), ("scontrol", "release", "115")),
        (("stop",), ("scancel", "--state=PENDING", "115")),
        (("extend", "--runs", "2"), ("sbatch", "--parsable")),
    ],
)
@pytest.mark.parametrize("answer", ["n", "y"])
def test_on_a_terminal_the_plan_is_shown_and_asked(
    run_cli: Run,
    cluster: TrainCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: tuple[str, ...],
    acted: tuple[str, ...],
    answer: str,
) -> None:
    started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    monkeypatch.setattr("slurmkit.cli._confirm.has_terminal", lambda: True)
    before = list(cluster.calls)
    result = run_cli("train", *args, input=f"{answer}\n", exit_code=1 if answer == "n" else 0)
    assert "?" in result.stderr and "will run: " in result.stderr
    done = [c for c in cluster.calls[len(before) :] if c[: len(acted)] == acted]
    if answer == "n":
        assert done == [] and "nothing changed" in result.stderr
    else:
        assert len(done) == 1


def test_kill_switch_on_a_terminal_asks(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = started(run_cli, tmp_path)
    monkeypatch.setattr("slurmkit.cli._confirm.has_terminal", lambda: True)
    run_cli("train", "kill-switch", "on", input="n\n", exit_code=1)
    assert not (folder / "kill-switch").exists()
    run_cli("train", "kill-switch", "on", input="y\n")
    assert (folder / "kill-switch").exists()
    # Nothing to change: no question, exit 0 (also without a terminal).
    monkeypatch.setattr("slurmkit.cli._confirm.has_terminal", lambda: False)
    assert "already on" in run_cli("train", "kill-switch", "on").stdout


# ---------------------------------------------------------------- start: disk full


def test_a_record_that_cannot_be_written_keeps_the_folder_and_names_the_array(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14: disk full after sbatch deleted the folder the queued runs need, id unknown."""
    from slurmkit.errors import EnvironmentProblem
    from slurmkit.train.state import TrainDir

    def full(self: TrainDir, state: object) -> None:
        raise EnvironmentProblem(f"cannot write {self.state_file}: No space left on device")

    monkeypatch.setattr(TrainDir, "save", full)
    result = run_cli("train", "start", script(tmp_path), "--name", "tr", exit_code=2)
    assert len(cluster.slurm_calls("sbatch")) == 1
    assert "array 115 (50 runs) is queued" in result.stderr
    assert "No space left on device" in result.stderr
    assert "Cancel the array with: scancel 115" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    folder = tmp_path / ".slurmkit" / "trains" / "tr"
    assert (folder / "current").readlink() == tmp_path / "a.slurm"
    assert (folder / "wrapper.slurm").is_file()


# ---------------------------------------------------------------- whose files a train trusts

NOBODY = 65534


def test_start_and_switch_refuse_a_script_someone_else_can_change(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    """Issue 14 finding 7: every run executes the script as the train's owner."""
    import os

    theirs = Path(script(tmp_path, name="theirs.slurm"))
    os.chown(theirs, NOBODY, NOBODY)
    result = run_cli("train", "start", str(theirs), "--name", "x", exit_code=2)
    assert "refusing training script" in result.stderr and f"uid {NOBODY}" in result.stderr
    shared = Path(script(tmp_path, name="shared.slurm"))
    shared.chmod(0o664)
    result = run_cli("train", "start", str(shared), "--name", "y", exit_code=2)
    assert "writable by group or others" in result.stderr
    assert cluster.slurm_calls("sbatch") == []

    folder = started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    for bad in (theirs, shared):
        result = run_cli("train", "switch", str(bad), "--yes", exit_code=2)
        assert "refusing training script" in result.stderr
    assert (folder / "current").readlink() == tmp_path / "a.slurm"


def test_a_record_or_wrapper_replaced_by_someone_else_is_refused(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    """In a folder teammates can write, train.json and wrapper.slurm must still be ours."""
    import os

    folder = started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    wrapper = folder / "wrapper.slurm"
    os.chown(wrapper, NOBODY, NOBODY)
    result = run_cli("train", "extend", "--runs", "2", "--yes", exit_code=2)
    assert f"refusing train wrapper {wrapper}" in result.stderr
    os.chown(wrapper, 0, 0)
    wrapper.chmod(0o666)
    result = run_cli("train", "extend", "--runs", "2", "--yes", exit_code=2)
    assert "writable by group or others" in result.stderr
    assert len(cluster.slurm_calls("sbatch")) == 1  # the start only

    os.chown(folder / "train.json", NOBODY, NOBODY)
    for args in (("hold", "--yes"), ("stop", "--yes", "--now"), ("release", "--yes")):
        result = run_cli("train", *args, exit_code=2)
        assert "refusing train record" in result.stderr and "kill-switch on" in result.stderr
    assert cluster.slurm_calls("scontrol") == [] and cluster.slurm_calls("scancel") == []
    assert run_cli("train", "status").exit_code == 0  # reading is fine


def test_status_says_who_last_pointed_current(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    import os

    folder = started(run_cli, tmp_path)
    status = json.loads(run_cli("train", "status", "--json").stdout)
    assert status["current_changed_by"] == {"uid": 0, "user": "root"}
    assert status["current_changed_at"] and status["next_script_trusted"] is None
    theirs = Path(script(tmp_path, name="theirs.slurm"))
    os.chown(theirs, NOBODY, NOBODY)
    (folder / "current").unlink()
    (folder / "current").symlink_to(theirs)
    os.lchown(folder / "current", NOBODY, NOBODY)
    text = run_cli("train", "status").stdout
    assert f"set by nobody (uid {NOBODY}) at " in text
    assert "UNTRUSTED: runs will refuse it" in text


def test_start_dry_run_checks_everything_and_creates_nothing(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    cluster.queue = squeue_row(job_id="87", state="RUNNING")
    out = run_cli("train", "start", script(tmp_path), "--name", "tr", "--after", "87", "--dry-run")
    assert "would run: sbatch --parsable --dependency=afterany:87" in out.stdout
    assert cluster.slurm_calls("sbatch") == []
    assert not (tmp_path / ".slurmkit").exists()
    result = run_cli("train", "start", script(tmp_path, "#!/bin/bash\n"), "--dry-run", exit_code=2)
    assert "no #SBATCH lines" in result.stderr


def test_a_teammates_kill_switch_works_but_leaves_the_owners_record_alone(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    """A record that is not the caller's (here: another owner) is never rewritten by them."""
    import os

    folder = started(run_cli, tmp_path)
    record = folder / "train.json"
    os.chown(record, NOBODY, NOBODY)
    before = record.read_bytes()
    result = run_cli("train", "kill-switch", "on", "--yes")
    assert (folder / "kill-switch").exists()
    assert "not recorded in" in result.stderr and "says who set it" in result.stderr
    assert record.read_bytes() == before and record.stat().st_uid == NOBODY
    assert (folder / "kill-switch").read_text().startswith("set by ")


def test_status_of_a_script_the_caller_cannot_look_into_is_no_traceback(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    started(run_cli, tmp_path)
    real_stat = os.stat

    def denied(path, *args, **kwargs):  # a folder above the script that is 0700 for us
        if str(path) == str(tmp_path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", denied)
    status = json.loads(run_cli("train", "status", "--json").stdout)
    assert status["next_script_trusted"] == f"cannot check {tmp_path}: Permission denied"
