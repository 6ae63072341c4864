"""cron cleanup: old *.out/*.err logs only, never symlinks, dry run without --yes."""

from __future__ import annotations

import os
import time
from pathlib import Path

from slurmkit.cron.cleanup import old_logs, remove

DAY = 86400


def make(path: Path, days_old: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("log\n")
    stamp = time.time() - days_old * DAY
    os.utime(path, (stamp, stamp))
    return path


def test_old_logs_selects_by_age_and_suffix(tmp_path: Path) -> None:
    old = make(tmp_path / "cron.daily" / "job-1.out", 8)
    old_err = make(tmp_path / "scheduler" / "logs" / "cron-daily-2.err", 30)
    make(tmp_path / "cron.daily" / "job-2.out", 6)
    make(tmp_path / "cron.daily" / "keep.slurm", 100)
    make(tmp_path / "cron.daily" / "notes.txt", 100)
    outside = make(tmp_path.parent / f"{tmp_path.name}-outside.out", 100)
    (tmp_path / "link.out").symlink_to(outside)
    found = old_logs(tmp_path, 7 * DAY, time.time())
    assert sorted(r.path for r in found) == sorted([old, old_err])
    remove(found)
    assert not old.exists() and not old_err.exists()
    assert outside.exists() and (tmp_path / "link.out").is_symlink()
    outside.unlink()


def test_remove_keeps_going_and_reports_errors(tmp_path: Path) -> None:
    gone = make(tmp_path / "a.out", 10)
    found = old_logs(tmp_path, DAY, time.time())
    gone.unlink()  # deleted meanwhile: not an error
    assert [r.error for r in remove(found)] == [None]


def test_cli_cleanup_needs_yes_without_a_terminal(run_cli, tmp_path: Path) -> None:
    run_cli("cron", "init", str(tmp_path / "c"))
    log = make(tmp_path / "c" / "cron.hourly" / "x-1.out", 10)
    out = run_cli("cron", "cleanup", "--dir", str(tmp_path / "c"), exit_code=1)
    assert out.stdout.strip() == f"would delete {log}" and log.exists()
    assert "dry run only" in out.stderr
    out = run_cli("cron", "cleanup", "--dir", str(tmp_path / "c"), "--older-than", "30d", "--yes")
    assert out.stdout == "" and log.exists()
    out = run_cli("cron", "cleanup", "--dir", str(tmp_path / "c"), "--yes")
    assert out.stdout.strip() == f"deleted {log}" and not log.exists()
    out = run_cli("cron", "cleanup", "--dir", str(tmp_path / "c"), "--older-than", "7", exit_code=2)
    # the one grammar's words
    assert out.stderr == "slurmkit: --older-than '7': say 7s, 7m, 7h or 7d\n"


def test_cli_cleanup_with_nothing_to_delete_exits_0_without_a_terminal(
    run_cli, tmp_path: Path
) -> None:
    """The one confirm rule: a forced dry run exits 1 only when it skipped a change."""
    run_cli("cron", "init", str(tmp_path / "c"))
    make(tmp_path / "c" / "cron.hourly" / "x-1.out", 1)
    out = run_cli("cron", "cleanup", "--dir", str(tmp_path / "c"), exit_code=0)
    assert out.stdout == "" and "dry run only" in out.stderr
