"""The rendered cron scheduler, run by bash with stand-ins for sbatch, squeue and sleep.

What the chain must guarantee, without a cluster: the next run is queued first, never
twice; a refused job is logged and the run goes on; scheduler files and non-*.slurm
files are skipped; an empty folder submits nothing; a missing folder is recorded; the
state file lists what was launched. The integration tests run the same script on the
sandbox.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from slurmkit.cron.period import begin_value, next_at
from slurmkit.cron.state import parse_state
from slurmkit.templating import render_template

FAKE_SBATCH = """#!/bin/bash
# Record the call; refuse scripts listed in $FAKE/refuse; print the next job id.
printf '%s\\n' "$*" >> "$FAKE/sbatch.log"
script=${@: -1}
if grep -qxF -- "$(basename -- "$script")" "$FAKE/refuse" 2>/dev/null; then
  echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2
  exit 1
fi
n=$(( $(cat "$FAKE/next_id" 2>/dev/null || echo 500) + 1 ))
echo "$n" > "$FAKE/next_id"
echo "$n"
"""
FAKE_SQUEUE = """#!/bin/bash
printf '%s\\n' "$*" >> "$FAKE/squeue.log"
if [[ -e $FAKE/squeue.fail ]]; then
  echo "squeue: error: Unable to contact slurm controller" >&2
  exit 1
fi
cat "$FAKE/pending" 2>/dev/null || true
"""


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    sbatch: list[str]
    state: str | None


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    folder = tmp_path / "fake"
    (folder / "bin").mkdir(parents=True)
    for name, body in (("sbatch", FAKE_SBATCH), ("squeue", FAKE_SQUEUE), ("sleep", "#!/bin/sh\n")):
        (folder / "bin" / name).write_text(body)
        (folder / "bin" / name).chmod(0o755)
    return folder


def run_scheduler(fake: Path, tmp_path: Path, **overrides: object) -> Run:
    values: dict[str, object] = {
        "period": "20s",
        "chain_name": "cron-20s",
        "folder": str(tmp_path / "cron.20s"),
        "state_file": str(tmp_path / "state"),
    }
    values.update(overrides)
    script = tmp_path / "scheduler.slurm"
    script.write_text(render_template("cron-scheduler", overrides=values).text)
    env = {
        "PATH": f"{fake / 'bin'}:/usr/bin:/bin",
        "FAKE": str(fake),
        "SLURM_JOB_ID": "100",
        "SLURM_JOB_NAME": "cron-20s",
        "SLURM_JOB_NODELIST": "node-1",
    }
    out = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    log = fake / "sbatch.log"
    state = Path(str(values["state_file"]))
    state = state if state.is_absolute() else Path(str(values["folder"])) / state
    return Run(
        out.returncode,
        out.stdout,
        out.stderr,
        log.read_text().splitlines() if log.exists() else [],
        state.read_text() if state.exists() else None,
    )


def cron_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "cron.20s"
    folder.mkdir()
    return folder


def test_queues_next_run_first_then_submits_each_job_and_records_them(
    fake: Path, tmp_path: Path
) -> None:
    folder = cron_folder(tmp_path)
    for name in ("a.slurm", "b c.slurm", "refused.slurm"):
        (folder / name).write_text("#!/bin/bash\ntrue\n")
    (folder / "notes.txt").write_text("not a job")
    (folder / "sched.slurm").write_text("#!/bin/bash\n# slurmkit: cron-scheduler\n")
    (fake / "refuse").write_text("refused.slurm\n")

    run = run_scheduler(fake, tmp_path)

    first = run.sbatch[0]
    assert "--job-name=cron-20s --begin=now+20 --dependency=singleton" in first
    assert first.endswith("scheduler.slurm")
    assert run.sbatch[1:] == [
        "--parsable ./a.slurm",
        "--parsable ./b c.slurm",
        "--parsable ./refused.slurm",
    ]
    assert "SLURMKIT_CHAIN next=501 queued=now begin=now+20" in run.stdout
    assert "SLURMKIT_CRON submitted job=502 file=a.slurm" in run.stdout
    assert "SLURMKIT_CRON submitted job=503 file=b c.slurm" in run.stdout
    assert "SLURMKIT_CRON failed file=refused.slurm error=sbatch: error: Batch job" in run.stdout
    assert "SLURMKIT_CRON skipped reason=scheduler file=sched.slurm" in run.stdout
    assert "notes.txt" not in run.stdout
    assert run.rc == 1  # a refused job fails the run; the chain is already queued
    last = parse_state(run.state or "")
    assert (last.job_id, last.chain, last.period, last.submitted, last.failed) == (
        "100", "cron-20s", "20s", 2, 1
    )  # fmt: skip
    assert [(x.job_id, x.file) for x in last.launched] == [("502", "a.slurm"), ("503", "b c.slurm")]
    assert last.failed_files == ("refused.slurm",)
    assert last.error is None and last.last_run is not None


def test_another_queued_run_means_no_second_chain(fake: Path, tmp_path: Path) -> None:
    (cron_folder(tmp_path) / "a.slurm").write_text("#!/bin/bash\n")
    (fake / "pending").write_text("100\n777\n")  # itself (ignored) and another run
    run = run_scheduler(fake, tmp_path)
    assert "SLURMKIT_CHAIN next=777 queued=already" in run.stdout
    assert not any("--begin" in line for line in run.sbatch)
    assert run.sbatch == ["--parsable ./a.slurm"]
    assert run.rc == 0


def test_only_itself_pending_still_queues_the_next_run(fake: Path, tmp_path: Path) -> None:
    cron_folder(tmp_path)
    (fake / "pending").write_text("100\n")
    run = run_scheduler(fake, tmp_path)
    assert "queued=now" in run.stdout and len(run.sbatch) == 1


def test_an_empty_folder_submits_nothing(fake: Path, tmp_path: Path) -> None:
    cron_folder(tmp_path)
    run = run_scheduler(fake, tmp_path)
    assert len(run.sbatch) == 1  # the next run only; no literal '*.slurm'
    assert "submitted 0 job(s), 0 failure(s)" in run.stdout
    assert parse_state(run.state or "").submitted == 0
    assert run.rc == 0


def test_a_missing_folder_is_recorded_and_the_chain_goes_on(fake: Path, tmp_path: Path) -> None:
    run = run_scheduler(fake, tmp_path)
    assert len(run.sbatch) == 1 and "--begin=now+20" in run.sbatch[0]
    assert run.rc == 1
    assert "does not exist" in run.stderr and "SLURMKIT_CRON" not in run.stdout
    last = parse_state(run.state or "")
    assert last.error == f"cron folder {tmp_path / 'cron.20s'} does not exist"


def test_a_failing_squeue_queues_nothing_but_still_submits(fake: Path, tmp_path: Path) -> None:
    (cron_folder(tmp_path) / "a.slurm").write_text("#!/bin/bash\n")
    (fake / "squeue.fail").write_text("")
    run = run_scheduler(fake, tmp_path)
    assert len((fake / "squeue.log").read_text().splitlines()) == 3  # retried
    assert run.sbatch == ["--parsable ./a.slurm"]
    assert "cannot tell whether the next run is queued" in run.stderr
    assert run.rc == 1


def test_relative_folder_and_default_state_file(fake: Path, tmp_path: Path) -> None:
    (cron_folder(tmp_path) / "a.slurm").write_text("#!/bin/bash\n")
    run = run_scheduler(fake, tmp_path, folder="cron.20s", state_file="")
    assert run.rc == 0
    state = tmp_path / "cron.20s" / ".slurmkit-last-run"
    assert parse_state(state.read_text()).launched[0].file == "a.slurm"


def test_at_queues_the_next_run_at_the_next_hh_mm(fake: Path, tmp_path: Path) -> None:
    cron_folder(tmp_path)
    # Three hours from now: far from any boundary between this test and bash's clock.
    at = (datetime.now() + timedelta(hours=3)).strftime("%H:%M")
    expected = begin_value(next_at(at, datetime.now()))
    run = run_scheduler(fake, tmp_path, period="1d", at=at)
    assert f"--begin={expected} " in run.sbatch[0]
    assert f"begin={expected}" in run.stdout


def test_a_bad_at_falls_back_to_the_period(fake: Path, tmp_path: Path) -> None:
    cron_folder(tmp_path)
    run = run_scheduler(fake, tmp_path, period="1d", at="25:99")
    assert "--begin=now+86400 " in run.sbatch[0]
    assert "at=25:99 is not HH:MM" in run.stderr


def test_self_perpetuating_runs_its_command_after_queuing(fake: Path, tmp_path: Path) -> None:
    script = tmp_path / "sp.slurm"
    script.write_text(
        render_template(
            "self-perpetuating",
            overrides={"job_name": "wd", "period": "30s", "command": "echo work; exit 4"},
        ).text
    )
    env = {**os.environ, "PATH": f"{fake / 'bin'}:/usr/bin:/bin", "FAKE": str(fake),
           "SLURM_JOB_ID": "9", "SLURM_JOB_NAME": "wd", "SLURM_JOB_NODELIST": "n"}  # fmt: skip
    out = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 4
    assert "queued=now begin=now+30" in out.stdout and "work" in out.stdout
