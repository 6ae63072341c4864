"""Crontab emulation on the sandbox: a 20 s scheduler chain, started and stopped by the CLI.

One chain (module fixture, started first) runs while the quicker tests use their own
cron dirs; the test that needs three runs comes late, so the whole module costs about
one minute of wall time. Job names are unique per run (``--name-prefix``); every
job of this module is cancelled at the end, whatever happened.
"""

from __future__ import annotations

import json
import shlex
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmkit import sandbox
from slurmkit.cron import CronDir
from slurmkit.cron.period import begin_value, next_at
from slurmkit.cron.state import read_state
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll

USER = "root"
PERIOD = "20s"
CHILD = """#!/bin/bash
#SBATCH --job-name={name}
#SBATCH --nodes=1 --ntasks=1 --cpus-per-task=1 --time=1
#SBATCH --output=%x-%j.out
{body}
"""


def cli(*args: str, exit_code: int | None = 0) -> tuple[int, str, str]:
    from slurmkit.cli import cli as root

    result = CliRunner().invoke(root, list(args), catch_exceptions=False)
    if exit_code is not None:
        assert result.exit_code == exit_code, (args, result.stdout, result.stderr)
    return result.exit_code, result.stdout, result.stderr


def names_in_queue(*names: str) -> list[tuple[str, str, str]]:
    """(id, name, state) of the queue's jobs with these names."""
    return [(j.job_id, j.name, j.state) for j in query.jobs(name=",".join(names), user=USER)]


def pending(name: str) -> list[str]:
    return [j.job_id for j in query.jobs(name=name, user=USER) if j.state == "PENDING"]


def cancel(*names: str) -> None:
    for name in names:
        run_slurm(["scancel", f"--name={name}", f"--user={USER}"], check=False)


def final_state(job_id: str) -> str | None:
    out = run_slurm(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State"]).stdout.split()
    state = out[0] if out else ""
    return state if state and state not in ("PENDING", "RUNNING", "COMPLETING") else None


@dataclass
class Chain:
    cron: CronDir
    prefix: str

    @property
    def name(self) -> str:
        return f"{self.prefix}-{PERIOD}"

    @property
    def children(self) -> list[str]:
        return [f"{self.prefix}-ok", f"{self.prefix}-fail", f"{self.prefix}-refused"]

    def runs(self) -> dict[str, str]:
        """Finished scheduler runs: job id -> log text."""
        logs = {}
        for path in self.cron.logs.glob(f"{self.name}-*.out"):
            text = path.read_text()
            if "slurmkit: submitted" in text:
                logs[path.stem.rsplit("-", 1)[1]] = text
        return logs

    def self_queued_runs(self) -> list[str]:
        """Runs that an earlier run of the chain queued (not started by a person)."""
        logs = self.runs()
        queued = {
            line.split("next=")[1].split()[0]
            for text in logs.values()
            for line in text.splitlines()
            if line.startswith("SLURMKIT_CHAIN") and "queued=now" in line
        }
        return sorted(queued & set(logs), key=int)


@pytest.fixture(scope="module")
def chain(
    cluster: sandbox.SandboxSpec, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Chain]:
    """A 20 s chain whose folder holds a good job, a failing job and one sbatch refuses."""
    root = tmp_path_factory.mktemp("cron") / "cron"
    prefix = f"skc-{uuid.uuid4().hex[:6]}"
    cli("cron", "init", str(root), "--every", PERIOD, "--name-prefix", prefix, "--time", "2")
    helper = Chain(CronDir(root), prefix)
    folder = root / f"cron.{PERIOD}"
    marker = root / "ok-ran"
    jobs = {
        "ok.slurm": CHILD.format(
            name=f"{prefix}-ok", body=f"date +%s >> {shlex.quote(str(marker))}"
        ),
        "fail.slurm": CHILD.format(name=f"{prefix}-fail", body="echo failing on purpose; exit 3"),
        "refused.slurm": CHILD.format(name=f"{prefix}-refused", body="echo never").replace(
            "--time=1", "--time=1 --partition=no-such-partition"
        ),
    }
    for file, text in jobs.items():
        (folder / file).write_text(text)
    try:
        _, out, _ = cli("cron", "start", "--dir", str(root), PERIOD)
        assert out.startswith(f"{helper.name}: started, job ")
        yield helper
    finally:
        cli("cron", "stop", "--dir", str(root), "--yes", exit_code=None)
        cancel(helper.name, *helper.children)


# ---------------------------------------------------------------- guard against doubling


def test_starting_twice_leaves_one_chain(chain: Chain) -> None:
    _, out, _ = cli("cron", "start", "--dir", str(chain.cron.root), PERIOD)
    assert out.startswith(f"{chain.name}: already running (job ")
    # Once the first run has queued the next one, bypass the CLI's check: submit the
    # scheduler script itself, as the seed's users did. Of the queued run and the extra
    # one, exactly one may queue a next run (singleton makes the extra one wait for the
    # queued one; whichever runs second finds the other's next run and queues nothing).
    poll(lambda: read_state(chain.cron.state_file(chain.name)), 60, "the first run")
    (queued,) = poll(lambda: pending(chain.name), 30, "the chain's next run to be queued")
    script = chain.cron.script(chain.name)
    extra = run_slurm(
        ["sbatch", "--parsable", f"--chdir={chain.cron.scheduler}", str(script)]
    ).stdout.strip()
    assert extra.isdigit()
    for job_id in (queued, extra):
        poll(lambda j=job_id: final_state(j), 90, f"scheduler run {job_id} to finish")
    (after,) = pending(chain.name)
    lines = [
        line
        for job_id in (queued, extra)
        for line in chain.cron.log(chain.name, job_id).read_text().splitlines()
        if line.startswith("SLURMKIT_CHAIN")
    ]
    assert sorted(line.split()[2] for line in lines) == ["queued=already", "queued=now"], lines
    assert any(line.startswith(f"SLURMKIT_CHAIN next={after} queued=now") for line in lines)


# ---------------------------------------------------------------- stopping, on its own chain


@pytest.mark.smoke
def test_stop_ends_the_chain_and_watch_cron_sees_it(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    root = tmp_path / "cron"
    prefix = f"skc-{uuid.uuid4().hex[:6]}"
    name = f"{prefix}-{PERIOD}"
    cli("cron", "init", str(root), "--every", PERIOD, "--name-prefix", prefix, "--time", "2")
    cron = CronDir(root)
    try:
        cli("cron", "start", "--dir", str(root), PERIOD)
        poll(lambda: read_state(cron.state_file(name)), 60, "the first run to record itself")
        poll(lambda: pending(name), 30, "the next run to be queued")
        _, out, _ = cli("watch", "cron", str(root), "--period", PERIOD, exit_code=0)
        assert out.startswith(f"OK cron {name} ({root}): ok: ")
        _, out, _ = cli("cron", "status", "--dir", str(root), PERIOD, "--json")
        (status,) = json.loads(out)["chains"]
        assert status["health"] == "ok" and status["queued_job"] == pending(name)[0]
        assert status["next_start"] is not None

        _, out, _ = cli("cron", "stop", "--dir", str(root), PERIOD, "--yes")
        assert out.startswith(f"{name}: stopped (cancelled ")
        assert names_in_queue(name) == []
        deadline = time.monotonic() + 3  # nothing reappears: no run was left to queue one
        while time.monotonic() < deadline:
            assert [j for j in names_in_queue(name) if j[2] in ("PENDING", "RUNNING")] == []
            time.sleep(0.5)
        _, out, _ = cli("watch", "cron", str(root), "--period", PERIOD, exit_code=1)
        assert "gone: no job of the chain is pending or running" in out
        _, out, _ = cli("cron", "stop", "--dir", str(root), PERIOD, "--yes")
        assert out.strip() == f"{name}: not running"
    finally:
        cancel(name)


# ---------------------------------------------------------------- the other commands


def test_run_now_submits_the_folder_and_leaves_the_chain_alone(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    root = tmp_path / "cron"
    prefix = f"skc-{uuid.uuid4().hex[:6]}"
    cli("cron", "init", str(root), "--name-prefix", prefix)
    child = f"{prefix}-now"
    folder = root / "cron.hourly"
    (folder / "now.slurm").write_text(CHILD.format(name=child, body="echo ran in $PWD"))
    try:
        _, out, _ = cli("cron", "run-now", "--dir", str(root), "hourly")
        (line,) = out.splitlines()
        assert line.startswith("SLURMKIT_CRON submitted job=") and line.endswith(" file=now.slurm")
        job_id = line.split("job=")[1].split()[0]
        assert poll(lambda: final_state(job_id), 60, "the job to finish") == "COMPLETED"
        assert (folder / f"{child}-{job_id}.out").read_text().strip() == f"ran in {folder}"
        assert names_in_queue(f"{prefix}-hourly") == []  # no chain was started
    finally:
        cancel(child)


def test_daily_at_starts_at_the_computed_time(cluster: sandbox.SandboxSpec, tmp_path: Path) -> None:
    root = tmp_path / "cron"
    prefix = f"skc-{uuid.uuid4().hex[:6]}"
    at = (datetime.now() + timedelta(hours=2)).strftime("%H:%M")
    cli("cron", "init", str(root), "--name-prefix", prefix, "--at", at)
    name = f"{prefix}-daily"
    try:
        expected = begin_value(next_at(at, datetime.now()))
        _, out, _ = cli("cron", "start", "--dir", str(root), "daily")
        assert out.strip().endswith(f", first run at {expected}")
        (job,) = query.jobs(name=name, user=USER)
        assert job.state == "PENDING" and job.reason == "BeginTime"
        assert job.start_time is not None
        assert begin_value(job.start_time.replace(tzinfo=None)) == expected
    finally:
        cancel(name)


def test_selfperpetuate_runs_and_refuses_a_second_chain(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    name = f"skc-sp-{uuid.uuid4().hex[:6]}"
    script = tmp_path / "tick.sh"
    script.write_text(f"#!/bin/bash\necho tick >> {shlex.quote(str(tmp_path / 'ticks'))}\n")
    script.chmod(0o755)
    try:
        _, out, _ = cli("cron", "selfperpetuate", str(script), "--every", "1h", "--name", name)
        first = out.split("job ")[1].split()[0]
        assert poll(lambda: final_state(first), 60, "the first run") == "COMPLETED"
        assert (tmp_path / "ticks").read_text() == "tick\n"
        (queued,) = pending(name)
        _, out, _ = cli("cron", "selfperpetuate", str(script), "--every", "1h", "--name", name)
        assert out.strip() == f"{name}: already running (job {queued}): nothing submitted"
        assert pending(name) == [queued]
        log = (tmp_path / f"{name}-{first}.out").read_text()
        assert f"SLURMKIT_CHAIN next={queued} queued=now begin=now+3600" in log
    finally:
        cancel(name)


# ---------------------------------------------------------------- the chain, three runs later


def test_the_chain_runs_three_times_by_itself_and_survives_failing_jobs(chain: Chain) -> None:
    def three_runs() -> list[str] | None:
        runs = chain.self_queued_runs()
        return runs if len(runs) >= 3 else None

    runs = poll(three_runs, 150, "three runs queued by the chain itself")
    logs = chain.runs()
    for run in runs:
        log = logs[run]
        assert "SLURMKIT_CRON failed file=refused.slurm error=" in log
        assert "invalid partition" in log.lower()
        assert "SLURMKIT_CRON submitted job=" in log and " file=ok.slurm" in log
        assert " file=fail.slurm" in log
    # every run's jobs were submitted and ran: the good one completed, the bad one failed
    submitted = [
        (ln.split(" file=")[1], ln.split("job=")[1].split()[0])
        for run in runs
        for ln in logs[run].splitlines()
        if ln.startswith("SLURMKIT_CRON submitted")
    ]
    assert {f for f, _ in submitted} == {"ok.slurm", "fail.slurm"}
    for file, job_id in submitted[:4]:
        want = "COMPLETED" if file == "ok.slurm" else "FAILED"
        assert poll(lambda j=job_id: final_state(j), 60, f"job {job_id}") == want
    assert len((chain.cron.root / "ok-ran").read_text().split()) >= 3
    # the chain is still alive: one next run queued
    assert len(pending(chain.name)) == 1
    last = read_state(chain.cron.state_file(chain.name))
    assert last is not None and last.failed_files == ("refused.slurm",)
    assert {x.file for x in last.launched} == {"ok.slurm", "fail.slurm"}


def test_status_and_watch_cron_name_the_refused_job(chain: Chain) -> None:
    poll(lambda: read_state(chain.cron.state_file(chain.name)), 60, "a recorded run")
    _, out, _ = cli("cron", "status", "--dir", str(chain.cron.root), PERIOD, exit_code=1)
    assert chain.name in out and "failed" in out and "refused: refused.slurm" in out
    _, out, _ = cli("watch", "cron", str(chain.cron.root), "--period", PERIOD, exit_code=1)
    assert out.startswith(f"ALERT cron {chain.name} ")
    assert "could not submit: refused.slurm" in out
