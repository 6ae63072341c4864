"""scrontab lines: exact schedules where scrontab has one, an explained approximation otherwise."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from slurmkit.cron import CronDir, parse_period
from slurmkit.cron.scrontab import cron_spec, scrontab_lines
from slurmkit.cron.setup import init_cron_dir


@pytest.mark.parametrize(
    ("period", "at", "spec", "exact"),
    [
        ("1m", None, "* * * * *", True),
        ("15m", None, "*/15 * * * *", True),
        ("30m", None, "*/30 * * * *", True),
        ("45m", None, "*/45 * * * *", False),
        ("hourly", None, "0 * * * *", True),
        ("90m", None, None, False),
        ("6h", None, "0 */6 * * *", True),
        ("12h", None, "0 */12 * * *", True),
        ("5h", None, "0 */5 * * *", False),
        ("daily", None, "0 0 * * *", True),
        ("daily", "03:05", "5 3 * * *", True),
        ("1w", None, "0 0 * * 0", True),
        ("2d", None, "0 0 */2 * *", False),
        ("20s", None, None, False),
        ("90s", None, None, False),
    ],
)
def test_cron_spec(period: str, at: str | None, spec: str | None, exact: bool) -> None:
    got = cron_spec(parse_period(period), at)
    assert (got.spec, got.exact) == (spec, exact)
    assert exact or got.note


def test_scrontab_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    cron = CronDir(tmp_path / "my cron")
    config = init_cron_dir(
        cron, extra_periods=[parse_period("20s")], partition="cpu", at="04:30", prefix="ops"
    ).config
    lines = scrontab_lines(cron, config, config.periods, python="/opt/py/bin/python")
    text = "\n".join(lines)
    command = shlex.join(
        ["/opt/py/bin/python", "-m", "slurmkit", "cron", "run-now", "--dir", str(cron.root)]
    )
    assert f"30 4 * * * {command} daily" in lines
    assert f"0 * * * * {command} hourly" in lines
    assert "# no exact scrontab schedule for every 20s" in text
    assert f"{command} 20s" not in text  # never a line that silently runs on another schedule
    assert "#SCRON --job-name=ops-daily" in lines
    assert lines.count("#SCRON --partition=cpu") == 3
    assert f"#SCRON --output={shlex.quote(str(cron.logs / '%x-%j.out'))}" in lines


def test_cli_scrontab(run_cli, tmp_path: Path) -> None:
    run_cli("cron", "init", str(tmp_path / "c"), "--every", "30m")
    out = run_cli("cron", "scrontab", "--dir", str(tmp_path / "c"), "30m")
    assert out.stdout.splitlines()[-1].startswith("*/30 * * * * ")
    assert out.stdout.splitlines()[-1].endswith(f"--dir {tmp_path / 'c'} 30m")
