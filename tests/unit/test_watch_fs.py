"""watch fs and watch log: thresholds, the usable share, inode-less file systems, hung mounts."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from slurmkit import _proc
from slurmkit.errors import UsageError
from slurmkit.watch.fs import Amount, Usage, assess_fs, check_fs, parse_count, parse_size
from slurmkit.watch.log import assess_log, check_log
from slurmkit.watch.probe import probe

T = 1024**4
G = 1024**3


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("2T", Amount(2 * T)),
        ("500G", Amount(500 * G)),
        ("1.5TiB", Amount(1.5 * T)),
        ("4096", Amount(4096)),
        ("10%", Amount(10, percent=True)),
        ("2t", Amount(2 * T)),
    ],
)
def test_parse_size(text: str, amount: Amount) -> None:
    assert parse_size(text) == amount


@pytest.mark.parametrize("text", ["2X", "", "-1G", "0%", "101%", "T", "1,5T"])
def test_parse_size_refuses(text: str) -> None:
    with pytest.raises(UsageError, match="--min-free"):
        parse_size(text)


def test_parse_count() -> None:
    assert parse_count("100k") == Amount(100000)
    assert parse_count("2M") == Amount(2000000)
    assert parse_count("5%") == Amount(5, percent=True)
    with pytest.raises(UsageError, match=r"--min-free-inodes '1\.5k'"):
        parse_count("1.5k")


def usage(total_t: float, avail_t: float, files: float = 1000, favail: float = 500) -> Usage:
    return Usage(total_t * T, avail_t * T, files, favail)


def test_free_space_threshold() -> None:
    assert assess_fs("/d", usage(10, 3), Amount(2 * T), None).healthy
    finding = assess_fs("/d", usage(10, 1.5), Amount(2 * T), None)
    assert not finding.healthy
    assert finding.message == (
        "1.5T free of 10.0T, 500 of 1000 inodes free (50.0%): free space below 2.0T"
    )
    assert finding.key == "fs:/d" and finding.subject == "fs /d"


def test_eighty_percent_is_the_new_hundred() -> None:
    # 10T, 3T available: df says 70 % used, but with 80 % usable only 1T is left.
    finding = assess_fs("/d", usage(10, 3), Amount(2 * T), None, usable=80)
    assert not finding.healthy
    assert "1.0T free of 8.0T usable (80% of 10.0T)" in finding.message
    # beyond the usable line there is nothing left, never a negative amount
    finding = assess_fs("/d", usage(10, 1), Amount(1), None, usable=80)
    assert finding.details["free"] == 0.0 and not finding.healthy
    # a percentage threshold is a share of the usable capacity
    assert assess_fs("/d", usage(10, 3), Amount(12, percent=True), None, usable=80).healthy
    assert not assess_fs("/d", usage(10, 3), Amount(13, percent=True), None, usable=80).healthy


def test_inode_threshold_and_file_systems_without_inodes() -> None:
    finding = assess_fs("/d", usage(10, 5, files=1000, favail=40), None, Amount(5, percent=True))
    assert not finding.healthy and "free inodes below 5%" in finding.message
    assert assess_fs("/d", usage(10, 5, 1000, 60), None, Amount(5, percent=True)).healthy
    assert not assess_fs("/d", usage(10, 5, 1000, 60), None, Amount(100)).healthy
    finding = assess_fs("/d", usage(10, 5, files=0, favail=0), None, Amount(5, percent=True))
    assert finding.healthy and "inode check skipped" in finding.message


def test_both_problems_are_named() -> None:
    finding = assess_fs("/d", usage(10, 0.5, 100, 1), Amount(1 * T), Amount(10, percent=True))
    assert finding.details["problems"] == ["free space below 1.0T", "free inodes below 10%"]


def test_real_statvfs_through_a_child(tmp_path: Path) -> None:
    answer = probe("statvfs", str(tmp_path))
    assert answer.error is None
    stat = os.statvfs(tmp_path)
    assert answer.values["blocks"] == stat.f_blocks
    assert check_fs(str(tmp_path), Amount(1), None).healthy
    finding = check_fs(str(tmp_path / "missing"), Amount(1), None)
    assert not finding.healthy and finding.message == "cannot stat: No such file or directory"


def test_a_hung_mount_is_an_alert(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []

    def hung(argv, *, timeout, input, env, cwd):
        assert argv[:3] == [sys.executable, "-I", "-c"] and argv[-2:] == ["statvfs", "/lustre"]
        seen.append(timeout)
        return _proc.Completed(tuple(argv), -9, "", "", timeout, timed_out=True)

    monkeypatch.setattr(_proc, "runner", hung)
    finding = check_fs("/lustre", Amount(1), None, timeout=2.5)
    assert not finding.healthy
    assert finding.message == "cannot stat: no answer within 2.5 s (hung mount?)"
    assert seen == [2.5]


def test_a_crashing_child_is_an_alert(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(argv, **_):
        return _proc.Completed(tuple(argv), 1, "", "Traceback...\nMemoryError\n", 0.1)

    monkeypatch.setattr(_proc, "runner", crash)
    assert check_fs("/x", Amount(1), None).message == (
        "cannot stat: statvfs failed (exit 1): MemoryError"
    )


# ---------------------------------------------------------------- log


def test_assess_log() -> None:
    now = 1_800_000_000.0
    assert assess_log("/l", now - 60, 1800, now).healthy
    finding = assess_log("/l", now - 7300, 1800, now)
    assert not finding.healthy
    assert finding.message.startswith("last written 2h1m ago (")
    assert finding.message.endswith(": stale (limit 30m)")


def test_check_log_on_real_files(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1\n")
    stamp = time.time() - 3600
    os.utime(log, (stamp, stamp))
    assert not check_log(str(log), 1800, time.time()).healthy
    log.write_text("step 2\n")
    assert check_log(str(log), 1800, time.time()).healthy
    missing = check_log(str(tmp_path / "nope.log"), 1800, time.time())
    assert not missing.healthy and "No such file" in missing.message


def test_cli_fs_and_log(run_cli, tmp_path: Path) -> None:
    out = run_cli("watch", "fs", str(tmp_path), "--min-free", "1", "--json")
    assert '"healthy": true' in out.stdout
    out = run_cli("watch", "fs", str(tmp_path), "--min-free", "1024P", exit_code=1)
    assert out.stdout.startswith(f"ALERT fs {tmp_path}: ")
    out = run_cli("watch", "fs", str(tmp_path), exit_code=2)
    assert "give --min-free" in out.stderr
    out = run_cli("watch", "fs", str(tmp_path), "--min-free", "1G", "--usable", "120%", exit_code=2)
    assert "--usable '120%'" in out.stderr
    log = tmp_path / "x.log"
    log.write_text("")
    run_cli("watch", "log", str(log), "--stale", "30m")
    os.utime(log, (0, 0))
    out = run_cli("watch", "log", str(log), "--stale", "30m", exit_code=1)
    assert "stale (limit 30m)" in out.stdout
