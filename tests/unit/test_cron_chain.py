"""start / stop / status / run-now / selfperpetuate at the argv seam (a fake ``_proc.runner``).

The fake answers exact Slurm argv lists (several answers in turn for polling) and
fails the test on any other call, so each test also pins which commands run.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from slurmkit.cron import CronDir, parse_period
from slurmkit.cron.chain import start_chains, stop_chains, stop_plan
from slurmkit.cron.runnow import run_now
from slurmkit.cron.selfperpetuate import selfperpetuate
from slurmkit.cron.setup import init_cron_dir
from slurmkit.cron.status import chain_statuses
from slurmkit.errors import UsageError
from slurmkit.slurm import query
from slurmkit.slurm.parse_text import DELIMITER, SQUEUE_COLUMNS
from slurmkit.slurm.submit import current_user
from tests.fakes import FakeSlurm

USER = current_user()
NOW = datetime(2026, 3, 10, 12, 0, 0, tzinfo=timezone.utc)


@pytest.fixture
def slurm(
    fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[FakeSlurm]:
    """The shared fake Slurm; routes are written without the journal's random token
    (``--comment=slurmkit:<token>``), which the tests that care check in ``calls``."""
    fake = fake_slurm.ignore_args("--comment=slurmkit:")
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    yield fake


def job_row(
    job_id: str, name: str, state: str = "PENDING", reason: str = "BeginTime", **kw: str
) -> str:
    values = {"job_id": job_id, "name": name, "user": USER, "state": state, "reason": reason, **kw}
    return DELIMITER.join(values.get(col, "N/A") for col, _ in SQUEUE_COLUMNS) + "\n"


def squeue(names: list[str]) -> list[str]:
    return query.squeue_argv(user=USER, name=",".join(names))


@pytest.fixture
def cron(tmp_path: Path) -> CronDir:
    cron = CronDir(tmp_path / "cron")
    init_cron_dir(cron, extra_periods=[parse_period("30m")], at="03:00")
    return cron


CHAINS = ["cron-30m", "cron-hourly", "cron-daily"]


# ---------------------------------------------------------------- start


def test_start_submits_only_chains_without_a_live_job(slurm: FakeSlurm, cron: CronDir) -> None:
    slurm.on(squeue(CHAINS), job_row("41", "cron-hourly") + job_row("40", "cron-30m", "COMPLETING"))
    sched = cron.scheduler
    slurm.on(["sbatch", "--parsable", f"--chdir={sched}", str(sched / "cron-30m.slurm")], "50\n")
    daily = ["sbatch", "--parsable", f"--chdir={sched}", "--begin=2026-03-11T03:00:00",
             str(sched / "cron-daily.slurm")]  # fmt: skip
    slurm.on(daily, "51;sandbox\n")
    config = cron.load()
    out = start_chains(cron, config, config.periods, now=datetime(2026, 3, 10, 12, 0))
    assert [(o.chain, o.action, o.job_id) for o in out] == [
        ("cron-30m", "submitted", "50"),  # a COMPLETING run keeps nothing going
        ("cron-hourly", "running", None),
        ("cron-daily", "submitted", "51"),
    ]
    assert out[1].existing == ["41"]
    assert out[2].begin == "2026-03-11T03:00:00"
    assert slurm.count("squeue") == 1


def test_start_dry_run_submits_nothing(slurm: FakeSlurm, cron: CronDir) -> None:
    slurm.on(squeue(["cron-30m"]), "")
    config = cron.load()
    (out,) = start_chains(cron, config, [config.find("30m")], dry_run=True)
    assert out.action == "dry-run"
    assert out.argv[-1].endswith("cron-30m.slurm")
    assert slurm.count("sbatch") == 0


def test_start_with_a_deleted_script_says_to_init_again(slurm: FakeSlurm, cron: CronDir) -> None:
    slurm.on(squeue(["cron-30m"]), "")
    cron.script("cron-30m").unlink()
    config = cron.load()
    with pytest.raises(UsageError, match="run `slurmkit cron init"):
        start_chains(cron, config, [config.find("30m")])


def test_start_when_sbatch_fails_is_an_error_not_a_traceback(run_cli, slurm, cron) -> None:
    slurm.on(squeue(["cron-30m"]), "")
    argv = ["sbatch", "--parsable", f"--chdir={cron.scheduler}", str(cron.script("cron-30m"))]
    slurm.on(argv, rc=1, stderr="sbatch: error: Batch job submission failed: Invalid account")
    out = run_cli("cron", "start", "--dir", str(cron.root), "30m", exit_code=2)
    assert out.stderr.startswith("slurmkit: sbatch failed (exit 1): Batch job submission failed")


# ---------------------------------------------------------------- stop


def test_stop_cancels_by_name_and_user_and_follows_up_a_racing_next_run(
    slurm: FakeSlurm, cron: CronDir
) -> None:
    slurm.on(
        squeue(["cron-30m"]),
        answer=[
            job_row("60", "cron-30m", "RUNNING", "None"),  # the plan
            job_row("61", "cron-30m"),  # queued by the run while it was cancelled
            job_row("61", "cron-30m", "CANCELLED"),  # gone
        ],
    )
    slurm.on(["scancel", "--name=cron-30m", f"--user={USER}"], "")
    config = cron.load()
    plan = stop_plan(config, [config.find("30m")])
    assert plan[0].jobs == ["60"]
    (out,) = stop_chains(plan, sleep=lambda _: None)
    assert out.left == [] and out.cancelled
    assert slurm.count("scancel") == 2


def test_stop_reports_what_is_left_after_the_timeout(slurm: FakeSlurm, cron: CronDir) -> None:
    slurm.on(squeue(["cron-30m"]), job_row("70", "cron-30m", "RUNNING", "None"))
    slurm.on(["scancel", "--name=cron-30m", f"--user={USER}"], "")
    config = cron.load()
    (out,) = stop_chains(stop_plan(config, [config.find("30m")]), timeout=0, sleep=lambda _: None)
    assert out.left == ["70"]


def test_cancel_by_name_never_builds_a_bare_user_cancel() -> None:
    assert query.cancel_by_name_argv("cron-1h", "u") == ["scancel", "--name=cron-1h", "--user=u"]
    with pytest.raises(ValueError):
        query.cancel_by_name_argv("", "u")
    with pytest.raises(ValueError):
        query.cancel_by_name_argv("x", "")


def test_cli_stop_without_terminal_or_yes_is_a_dry_run(run_cli, slurm, cron) -> None:
    slurm.on(squeue(CHAINS), job_row("80", "cron-hourly"))
    out = run_cli("cron", "stop", "--dir", str(cron.root), exit_code=1)
    assert "cron-hourly: would cancel 80" in out.stdout
    assert "dry run only" in out.stderr
    assert slurm.count("scancel") == 0
    out = run_cli("cron", "stop", "--dir", str(cron.root), "--dry-run", "--json", exit_code=0)
    assert json.loads(out.stdout)["dry_run"] is True


def test_cli_stop_yes(run_cli, slurm, cron) -> None:
    slurm.on(squeue(["cron-hourly"]), answer=[job_row("80", "cron-hourly"), ""])
    slurm.on(["scancel", "--name=cron-hourly", f"--user={USER}"], "")
    out = run_cli("cron", "stop", "--dir", str(cron.root), "hourly", "--yes")
    assert out.stdout.strip() == "cron-hourly: stopped (cancelled 80)"


# ---------------------------------------------------------------- status


def write_state(cron: CronDir, chain: str, when: datetime, **extra: str) -> None:
    lines = [f"last_run={when.isoformat()}", "job=90", f"chain={chain}", "submitted=1", "failed=0",
             "launched=91 a.slurm"] + [f"{k}={v}" for k, v in extra.items()]  # fmt: skip
    cron.state_file(chain).write_text("\n".join(lines) + "\n")


def test_status_combines_one_squeue_with_the_state_files(slurm: FakeSlurm, cron: CronDir) -> None:
    begin = "2026-03-10T12:25:00"
    slurm.on(
        squeue(CHAINS),
        job_row("95", "cron-30m", start_time=begin)
        + job_row("96", "cron-daily", reason="JobHeldUser"),
    )
    write_state(cron, "cron-30m", NOW - timedelta(minutes=5))
    write_state(cron, "cron-daily", NOW - timedelta(hours=1))
    statuses = {s.chain: s for s in chain_statuses(cron, cron.load(), now=NOW)}
    ok = statuses["cron-30m"]
    assert (ok.health, ok.queued.job_id) == ("ok", "95")
    assert ok.queued.start_time == datetime.fromisoformat(begin).astimezone()
    assert ok.to_json()["launched"] == [{"job_id": "91", "file": "a.slurm"}]
    assert ok.to_json()["last_log"] == str(cron.log("cron-30m", "90"))
    assert statuses["cron-hourly"].health == "gone"
    assert statuses["cron-daily"].health == "stuck"
    assert slurm.count("squeue") == 1


def test_cli_status_exit_code_and_json(run_cli, slurm, cron) -> None:
    slurm.on(squeue(["cron-30m"]), job_row("95", "cron-30m"))
    write_state(cron, "cron-30m", datetime.now().astimezone())
    out = run_cli("cron", "status", "--dir", str(cron.root), "30m", "--json")
    (chain,) = json.loads(out.stdout)["chains"]
    assert (chain["health"], chain["queued_job"]) == ("ok", "95")
    write_state(cron, "cron-30m", datetime.now().astimezone() - timedelta(hours=2))
    out = run_cli("cron", "status", "--dir", str(cron.root), "30m", exit_code=1)
    assert "late" in out.stdout and "cron-30m: late: last run 2h" in out.stderr


def test_status_squeue_failure_is_an_error(run_cli, slurm, cron) -> None:
    slurm.on(squeue(CHAINS), rc=1, stderr="squeue: error: Unable to contact slurm controller")
    out = run_cli("cron", "status", "--dir", str(cron.root), exit_code=2)
    assert "cannot reach slurmctld" in out.stderr


# ---------------------------------------------------------------- run-now


def test_run_now_submits_the_folder_like_the_scheduler(slurm: FakeSlurm, cron: CronDir) -> None:
    folder = cron.root / "cron.30m"
    (folder / "b.slurm").write_text("#!/bin/bash\n")
    (folder / "a.slurm").write_text("#!/bin/bash\n")
    (folder / "x.txt").write_text("")
    (folder / "s.slurm").write_text("#!/bin/bash\n# slurmkit: cron-scheduler\n")
    slurm.on(["sbatch", "--parsable", f"--chdir={folder}", str(folder / "a.slurm")], "7\n")
    slurm.on(
        ["sbatch", "--parsable", f"--chdir={folder}", str(folder / "b.slurm")],
        rc=1,
        stderr="sbatch: error: invalid partition specified: nope",
    )
    results = run_now(cron, [cron.load().find("30m"), cron.load().find("hourly")])
    assert [r.line for r in results] == [
        "SLURMKIT_CRON submitted job=7 file=a.slurm",
        "SLURMKIT_CRON failed file=b.slurm error=sbatch failed (exit 1): invalid partition "
        "specified: nope",
        "SLURMKIT_CRON skipped reason=scheduler file=s.slurm",
    ]


def test_cli_run_now_exit_1_when_a_job_is_refused(run_cli, slurm, cron) -> None:
    folder = cron.root / "cron.daily"
    (folder / "a.slurm").write_text("#!/bin/bash\n")
    slurm.on(
        ["sbatch", "--parsable", f"--chdir={folder}", str(folder / "a.slurm")], rc=1, stderr="x"
    )
    out = run_cli("cron", "run-now", "--dir", str(cron.root), "daily", exit_code=1)
    assert out.stdout.startswith("SLURMKIT_CRON failed file=a.slurm")
    out = run_cli("cron", "run-now", "--dir", str(cron.root), "daily", "--dry-run")
    assert out.stdout.strip() == "would submit daily a.slurm"


# ---------------------------------------------------------------- selfperpetuate


def test_selfperpetuate_checks_the_queue_then_submits_a_wrapper(slurm, tmp_path: Path) -> None:
    script = tmp_path / "check-disk.sh"
    script.write_text("#!/bin/bash\necho hi\n")
    script.chmod(0o755)
    wrapper = tmp_path / "check-disk.self-perpetuating.sbatch"
    slurm.on(squeue(["check-disk"]), "")
    slurm.on(["sbatch", "--parsable", f"--chdir={tmp_path}", str(wrapper)], "12\n")
    out = selfperpetuate(script, period=parse_period("30m"), args=["--x", "a b"])
    assert (out.action, out.job_id, out.name) == ("submitted", "12", "check-disk")
    text = wrapper.read_text()
    assert "#SBATCH --job-name=check-disk\n" in text
    assert "chain_begin=now+1800\n" in text
    assert f"bash -c {shlex.quote(shlex.join([str(script), '--x', 'a b']))}" in text


def test_selfperpetuate_twice_submits_nothing(slurm, tmp_path: Path) -> None:
    script = tmp_path / "w.slurm"
    script.write_text("echo\n")  # not executable: run through bash
    slurm.on(squeue(["w"]), job_row("13", "w"))
    out = selfperpetuate(script, period=parse_period("1h"))
    assert (out.action, out.existing) == ("running", ["13"])
    assert not (tmp_path / "w.self-perpetuating.sbatch").exists()
    assert slurm.count("sbatch") == 0


def test_selfperpetuate_at_and_bad_input(run_cli, slurm, tmp_path: Path) -> None:
    script = tmp_path / "w.sh"
    script.write_text("echo\n")
    out = run_cli("cron", "selfperpetuate", str(script), "--every", "1h", "--at", "03:00",
                  exit_code=2)  # fmt: skip
    assert "--at needs --every 1d" in out.stderr
    out = run_cli("cron", "selfperpetuate", str(tmp_path / "nope"), "--every", "1h", exit_code=2)
    assert "is not a file" in out.stderr
    out = run_cli("cron", "selfperpetuate", str(script), "--every", "soon", exit_code=2)
    assert "period 'soon'" in out.stderr
    out = run_cli("cron", "selfperpetuate", str(script), "--every", "1h", "--name", "a,b",
                  exit_code=2)  # fmt: skip
    assert "job name 'a,b'" in out.stderr
    assert slurm.calls == []
