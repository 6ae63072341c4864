"""Issue 17 item 3 on the sandbox: ``train restart-run`` (only the running task goes, the
array survives and the next task sources the edited script), restart-run with nothing
running and killed between "Slurm changed" and "recorded", the save switch reaching a
running training, and lint refusing a script before anything is submitted.

Runs wait for a ``go-<task>`` file (tests/integration/test_train.py's training script), so
the test decides when each ends; every train is cancelled in ``finally``.
"""

# ruff: noqa: F811  (train_factory is test_train.py's fixture, imported so pytest finds it)
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable

from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll, submit
from tests.integration.test_train import (  # noqa: F401 (train_factory is a fixture)
    VENV_SLURMKIT,
    Train,
    start,
    train_factory,
    training_script,
    wait_finished,
    wait_running,
    wait_sourced,
    write,
)


def _cli(train: Train, *args: str, point: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as its own process, so that a faultpoint can kill it for real."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURMKIT_FAULT")}
    if point:
        env["SLURMKIT_FAULT_POINT"] = point
    return subprocess.run(
        [str(VENV_SLURMKIT), "train", *args],
        cwd=train.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _journal(train: Train) -> list[dict]:
    lines = (train.folder / "journal").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_restart_run_cancels_only_the_running_task_and_the_next_sources_the_edit(
    train_factory: Callable[[str], Train],
) -> None:
    train = train_factory("restart")
    script = write(train.work / "a.slurm", training_script(train.work, "v1"))
    array = start(train, script, 3)
    wait_sourced(train, "v1 1")
    write(script, training_script(train.work, "v2"))  # edited in place, as the seed does
    out = train.cli("restart-run", train.name, "--yes").stdout
    assert f"ran: scancel {array}_1\n" in out
    assert wait_finished(train, f"{array}_1").state == "CANCELLED"
    wait_sourced(train, "v2 2")  # the array survived; its next task runs the edited script
    assert train.runs_file() == ["v1 1", "v2 2"]
    assert [j.display_id for j in train.running()] == [f"{array}_2"]
    assert any(j.is_pending for j in train.queue())  # task 3 still queued
    assert train.record()["events"][-1]["what"] == "restart-run"


def test_restart_run_with_nothing_running_cancels_nothing(
    train_factory: Callable[[str], Train],
) -> None:
    train = train_factory("restart-idle")
    blocker = submit(
        "-N1", "-c1", "-J", "sk-restart-blocker", "-o", "/dev/null", "--wrap", "sleep 300"
    )
    try:
        script = write(train.work / "a.slurm", training_script(train.work, "v1"))
        array = start(train, script, 2, "--after", blocker)
        result = train.cli("restart-run", train.name, "--yes", exit_code=1)
        assert result.stderr.strip().splitlines() == [
            f"slurmkit: train {train.name}: no run is running (2 pending): nothing cancelled"
        ]
        assert result.stdout == ""
        assert [j.state for j in query.jobs(job_ids=[array])] == ["PENDING"]
    finally:
        run_slurm(["scancel", blocker], check=False)


def test_restart_run_killed_after_scancel_is_settled_by_the_next_command(
    train_factory: Callable[[str], Train],
) -> None:
    train = train_factory("restart-fault")
    script = write(train.work / "a.slurm", training_script(train.work, "v1"))
    array = start(train, script, 3)
    wait_sourced(train, "v1 1")
    killed = _cli(train, "restart-run", train.name, "--yes", point="train.restart-run.cancelled")
    assert killed.returncode == -9, killed.stderr
    assert _journal(train)[-1]["kind"] == "intent"  # Slurm changed, nothing recorded
    assert wait_finished(train, f"{array}_1").state == "CANCELLED"
    status = _cli(train, "status", train.name)
    assert status.returncode == 0, status.stderr
    assert f"was done: {array}_1 is no longer running" in status.stderr
    assert _journal(train)[-1]["kind"] == "outcome" and _journal(train)[-1]["result"] == "done"
    wait_running(train, f"{array}_2")  # the train goes on


def test_save_switch_reaches_the_running_training_which_goes_on(
    train_factory: Callable[[str], Train],
) -> None:
    train = train_factory("save")
    work = train.work
    script = write(
        work / "a.slurm",
        "#!/bin/bash\n"
        "#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=1 --time=3\n"
        f"#SBATCH --output={work}/log-%A_%a.out\n"
        f'echo "v1 $SLURM_ARRAY_TASK_ID" >> {work}/runs.txt\n'
        "for _ in $(seq 1800); do\n"
        f"  [[ -e {work}/go-$SLURM_ARRAY_TASK_ID ]] && break\n"
        "  if [[ -e $SLURMKIT_SAVE_SWITCH ]]; then\n"
        f'    echo "checkpoint in $SLURM_ARRAY_TASK_ID" >> {work}/saves.txt\n'
        '    rm -f -- "$SLURMKIT_SAVE_SWITCH"\n'
        "  fi\n"
        "  sleep 0.1\n"
        "done\n",
    )
    array = start(train, script, 2)
    wait_sourced(train, "v1 1")
    switch = train.folder / "save-switch"
    assert "created" in train.cli("save-switch", "on", train.name, "--yes").stdout
    saves = work / "saves.txt"
    poll(lambda: saves.exists() and not switch.exists(), 60, "the training to save")
    assert saves.read_text() == "checkpoint in 1\n"
    assert [j.display_id for j in train.running()] == [f"{array}_1"]  # it trains on
    assert "off:" in train.cli("save-switch", "status", train.name).stdout


def test_start_refuses_a_script_with_lint_errors_before_submitting(
    train_factory: Callable[[str], Train],
) -> None:
    train = train_factory("lint")
    bad = write(
        train.work / "bad.slurm",
        "#!/bin/bash\n#SBATCH --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 --time=3\n"
        'if [ -z "$RESUME"]; then echo fresh; fi\nsrun hostname\n',
    )
    result = train.cli("start", str(bad), "--runs", "2", "--name", train.name, exit_code=2)
    assert "start refused" in result.stderr and "test-bracket-unclosed" in result.stderr
    assert not train.folder.exists()
    out = run_slurm(["squeue", "--noheader", f"--name={train.name}"]).stdout
    assert out.strip() == ""
