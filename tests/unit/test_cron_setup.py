"""``cron init`` and the cron dir layout: folders, rendered schedulers, manifest, faults."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from slurmkit.cron import CronDir, parse_period, resolve_dir
from slurmkit.cron.setup import init_cron_dir
from slurmkit.errors import UsageError


@pytest.fixture(autouse=True)
def _no_site_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The user's ~/.config/slurmkit must not leak partition/account into renders."""
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def sbatch_options(text: str) -> dict[str, str]:
    options = {}
    for line in text.splitlines():
        if line.startswith("#SBATCH "):
            key, _, value = shlex.split(line[len("#SBATCH ") :])[0].partition("=")
            options[key] = value
    return options


def assignment(text: str, var: str) -> str:
    (line,) = [ln for ln in text.splitlines() if ln.startswith(f"{var}=")]
    return shlex.split(line.split("=", 1)[1])[0]


def test_resolve_dir_order(tmp_path: Path) -> None:
    given = tmp_path / "given"
    assert resolve_dir(given, {"SLURMKIT_CRON_DIR": "/x", "WORK": "/w"}) == given
    assert resolve_dir(None, {"SLURMKIT_CRON_DIR": "/x", "WORK": "/w"}) == Path("/x")
    assert resolve_dir(None, {"WORK": "/w"}) == Path("/w/cron")
    assert resolve_dir("rel", {}) == Path.cwd() / "rel"
    with pytest.raises(UsageError, match="no cron dir: give DIR"):
        resolve_dir(None, {})


def test_init_creates_the_seed_layout_and_renders_one_scheduler_per_period(
    tmp_path: Path,
) -> None:
    cron = CronDir(tmp_path / "cron")
    report = init_cron_dir(cron, extra_periods=[parse_period("30m")], partition="cpu")
    for name in ("scheduler", "scheduler/logs", "cron.hourly", "cron.daily", "cron.30m"):
        assert (cron.root / name).is_dir()
    assert [p.name for p in report.config.periods] == ["30m", "hourly", "daily"]
    manifest = json.loads(cron.manifest.read_text())
    assert manifest["periods"] == ["30m", "hourly", "daily"]
    assert manifest["partition"] == "cpu"
    for chain, period, seconds in (
        ("cron-30m", "30m", 1800),
        ("cron-hourly", "hourly", 3600),
        ("cron-daily", "daily", 86400),
    ):
        text = cron.script(chain).read_text()
        options = sbatch_options(text)
        assert options["--job-name"] == chain
        assert options["--partition"] == "cpu"
        assert options["--dependency"] == "singleton"
        assert options["--output"] == f"{cron.logs}/%x-%j.out"
        assert assignment(text, "folder") == str(cron.root / f"cron.{period}")
        assert assignment(text, "state_file") == str(cron.state_file(chain))
        assert assignment(text, "chain_name") == chain
        assert f"chain_begin=now+{seconds}\n" in text
        assert "chain_at=" not in text


def test_at_aligns_only_the_daily_scheduler(tmp_path: Path) -> None:
    cron = CronDir(tmp_path / "c")
    init_cron_dir(cron, at="03:30")
    assert "chain_at=03:30\n" in cron.script("cron-daily").read_text()
    assert "chain_at=" not in cron.script("cron-hourly").read_text()
    assert json.loads(cron.manifest.read_text())["at"] == "03:30"


def test_init_again_keeps_jobs_adds_periods_and_replaces_given_options(tmp_path: Path) -> None:
    cron = CronDir(tmp_path / "c")
    init_cron_dir(cron, extra_periods=[parse_period("20s")], partition="cpu", account="a1")
    job = cron.root / "cron.20s" / "mine.slurm"
    job.write_text("#!/bin/bash\n")
    report = init_cron_dir(cron, extra_periods=[parse_period("12h")], account="a2")
    assert job.read_text() == "#!/bin/bash\n"
    assert [p.name for p in report.config.periods] == ["20s", "hourly", "12h", "daily"]
    assert (report.config.partition, report.config.account) == ("cpu", "a2")
    assert cron.root / "cron.12h" in report.created
    assert cron.root / "cron.20s" not in report.created
    assert sbatch_options(cron.script("cron-20s").read_text())["--account"] == "a2"


def test_name_prefix_names_the_jobs_and_cannot_change_later(tmp_path: Path) -> None:
    cron = CronDir(tmp_path / "c")
    init_cron_dir(cron, prefix="team-a")
    assert sbatch_options(cron.script("team-a-hourly").read_text())["--job-name"] == "team-a-hourly"
    init_cron_dir(cron)  # no prefix given: the recorded one stays
    assert cron.load().prefix == "team-a"
    with pytest.raises(UsageError, match="already uses job names team-a-<period>"):
        init_cron_dir(cron, prefix="team-b")


@pytest.mark.parametrize(
    ("periods", "message"),
    [(["1h"], "is the hourly period"), (["30m", "1800s"], "given twice"), (["24h"], "daily")],
)
def test_duplicate_periods_are_refused(tmp_path: Path, periods: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        init_cron_dir(CronDir(tmp_path / "c"), extra_periods=[parse_period(p) for p in periods])
    assert not (tmp_path / "c").exists()


def test_bad_prefix_and_time_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--name-prefix"):
        init_cron_dir(CronDir(tmp_path / "c"), prefix="a b")
    with pytest.raises(UsageError, match="--time"):
        init_cron_dir(CronDir(tmp_path / "d"), time="soon")


def test_a_dir_that_cannot_be_created_is_one_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(UsageError, match=r"cannot create .*file/cron"):
        init_cron_dir(CronDir(blocker / "cron"))
    # Even root cannot create folders in sysfs: "not writable" without depending on the uid.
    with pytest.raises(UsageError, match="cannot create /sys/slurmkit-cron-test"):
        init_cron_dir(CronDir(Path("/sys/slurmkit-cron-test")))


def test_a_dir_without_manifest_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"not a slurmkit cron dir .*slurmkit cron init"):
        CronDir(tmp_path).load()
    (tmp_path / "scheduler").mkdir()
    (tmp_path / "scheduler" / "slurmkit-cron.json").write_text("{not json")
    with pytest.raises(UsageError, match="cannot read"):
        CronDir(tmp_path).load()


def test_config_select_accepts_any_spelling_of_a_configured_period(tmp_path: Path) -> None:
    cron = CronDir(tmp_path / "c")
    config = init_cron_dir(cron, extra_periods=[parse_period("30m")]).config
    assert [p.name for p in config.select(["1800s", "1h", "hourly"])] == ["30m", "hourly"]
    assert [p.name for p in config.select([])] == ["30m", "hourly", "daily"]
    with pytest.raises(UsageError, match=r"period '2h' is not set up .*30m, hourly, daily"):
        config.select(["2h"])


def test_cli_init_reports_bad_input_in_one_line(run_cli, tmp_path: Path) -> None:
    out = run_cli("cron", "init", str(tmp_path / "c"), "--every", "30 m", exit_code=2)
    assert out.stderr.startswith("slurmkit: period '30 m' is not a duration")
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "c").exists()
    out = run_cli("cron", "init", str(tmp_path / "c"), "--at", "25:00", exit_code=2)
    assert "not a time of day" in out.stderr


def test_cli_init_json(run_cli, tmp_path: Path) -> None:
    out = run_cli("cron", "init", str(tmp_path / "c"), "--every", "20s", "--json")
    data = json.loads(out.stdout)
    assert data["dir"] == str(tmp_path / "c")
    assert data["periods"] == ["20s", "hourly", "daily"]
    assert len(data["scripts"]) == 3


def test_cli_commands_need_a_cron_dir(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLURMKIT_CRON_DIR", raising=False)
    monkeypatch.delenv("WORK", raising=False)
    out = run_cli("cron", "status", exit_code=2)
    assert out.stderr.startswith("slurmkit: no cron dir")


@pytest.mark.parametrize(
    ("field", "value"),
    [("at", 1230), ("at", ["12:30"]), ("time", 600), ("prefix", {"a": 1}), ("periods", [{}])],
)
def test_a_manifest_with_a_wrong_type_is_one_line_exit_2(
    run_cli, tmp_path: Path, field: str, value: object
) -> None:
    """Issue 14 bad-input sweep: ``"at": 1230`` gave a traceback (exit 1, read as findings)."""
    root = tmp_path / "c"
    run_cli("cron", "init", str(root))
    manifest = root / "scheduler" / "slurmkit-cron.json"
    data = json.loads(manifest.read_text())
    data[field] = value
    manifest.write_text(json.dumps(data))
    out = run_cli("cron", "status", "--dir", str(root), exit_code=2)
    assert out.stderr.startswith(f"slurmkit: {manifest}: ")
    assert f'"{field}"' in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_a_non_utf8_manifest_is_one_line_exit_2(run_cli, tmp_path: Path) -> None:
    root = tmp_path / "c"
    run_cli("cron", "init", str(root))
    (root / "scheduler" / "slurmkit-cron.json").write_bytes(b'{"periods": ["\xff"]}')
    out = run_cli("cron", "status", "--dir", str(root), exit_code=2)
    assert out.stderr.startswith("slurmkit: cannot read") and "UTF-8" in out.stderr
