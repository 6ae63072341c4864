"""``slurmkit template``: list/show/render/submit; bad input is one line, exit 2; fake sbatch."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit.templating import discover, render_template
from tests.fakes import Call, FakeSlurm

NAMES = [t.name for t in discover()]


@pytest.fixture(autouse=True)
def no_site_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the real ~/.config/slurmkit/config.toml."""
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def sbatch_calls(fake_slurm: FakeSlurm) -> Iterator[list[tuple[str, ...]]]:
    """The shared fake Slurm as sbatch: answers a job id to a script given on stdin, refuses
    anything else; the value is the list of sbatch argv, filled as they come."""
    calls: list[tuple[str, ...]] = []

    def sbatch(call: Call) -> str:
        calls.append(call.argv)
        assert call.input is not None and call.input.startswith("#!/bin/bash\n")  # on stdin
        return "4242;sandbox\n"

    fake_slurm.on(["sbatch", "**"], answer=sbatch)
    yield calls


def test_list_shows_every_template(run_cli) -> None:
    out = run_cli("template", "list").stdout
    for name in NAMES:
        assert f"\n{name} " in out
    data = json.loads(run_cli("template", "list", "--json").stdout)
    assert [t["name"] for t in data] == NAMES
    assert {t["kind"] for t in data} == {"templates", "cron"}
    assert all(isinstance(t["gpu"], bool) and t["summary"] for t in data)


def test_show_lists_parameters_with_types_defaults_help(run_cli) -> None:
    out = run_cli("template", "show", "torchrun").stdout
    assert "torchrun: Multi-node torchrun launcher" in out
    assert "nodes" in out and "int>=1" in out and "choice(USR2|USR1|none)" in out
    data = json.loads(run_cli("template", "show", "torchrun", "--json").stdout)
    params = {p["name"]: p for p in data["params"]}
    assert params["signal"]["default"] == "USR2"
    assert params["nodes"]["type"] == "int>=1" and params["nodes"]["help"]
    assert params["partition"]["site_default"] is None
    assert data["gpu"] is True and data["notes"]


def test_show_includes_site_defaults(run_cli, tmp_path: Path, monkeypatch) -> None:
    config = tmp_path / "site.toml"
    config.write_text('[defaults]\npartition = "gpu"\n')
    monkeypatch.setenv("SLURMKIT_CONFIG", str(config))
    data = json.loads(run_cli("template", "show", "torchrun", "--json").stdout)
    assert {p["name"]: p["site_default"] for p in data["params"]}["partition"] == "gpu"
    assert "SITE" in run_cli("template", "show", "torchrun").stdout


def test_render_to_stdout_matches_the_library(run_cli) -> None:
    out = run_cli("template", "render", "torchrun", "--set", "nodes=4").stdout
    assert out == render_template("torchrun", overrides={"nodes": "4"}).text
    assert "#SBATCH --nodes=4\n" in out


def test_render_to_file_is_atomic_and_replaces(run_cli, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "job.slurm"
    target.write_text("old")
    result = run_cli("template", "render", "cron-scheduler", "-o", str(target))
    assert result.stdout == ""
    assert target.read_text() == render_template("cron-scheduler").text
    assert [p.name for p in folder.iterdir()] == ["job.slurm"]  # no temp file left behind


def test_render_to_missing_folder_is_one_line(run_cli, tmp_path: Path) -> None:
    result = run_cli("template", "render", "torchrun", "-o", str(tmp_path / "no/x"), exit_code=2)
    assert result.stderr.count("\n") == 1 and "does not exist" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["render", "nope"], "slurmkit: unknown template 'nope' (known: accelerate,"),
        (["show", "nope"], "slurmkit: unknown template 'nope'"),
        (["render", "torchrun", "--set", "nodes=two"], "parameter nodes (--set): 'two' is not"),
        (["render", "torchrun", "--set", "nodez=2"], "has no parameter 'nodez' (--set)"),
        (["render", "torchrun", "--set", "nodes"], "--set 'nodes': expected KEY=VALUE"),
        (["render", "torchrun", "--set", "signal=HUP"], "is not one of USR2, USR1, none"),
        (["render", "torchrun", "--set", "time=2h"], "is not a Slurm time limit"),
        (["render", "cron-scheduler", "--set", "period=soon"], "is not a duration"),
        (["render", "faulty-node-check", "--set", "checks=gpu"], "'gpu' is not allowed"),
        (["submit", "nope", "--dry-run"], "unknown template 'nope'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run_cli, args: list[str], message: str) -> None:
    result = run_cli("template", *args, exit_code=2)
    assert message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_from_file_and_config_precedence(run_cli, tmp_path: Path, monkeypatch) -> None:
    config = tmp_path / "site.toml"
    config.write_text(
        '[defaults]\npartition = "site-part"\naccount = "site-acct"\ntime = "2:00:00"\n'
        '[template.torchrun]\naccount = "torch-acct"\n'
    )
    monkeypatch.setenv("SLURMKIT_CONFIG", str(config))
    vars_file = tmp_path / "vars.toml"
    vars_file.write_text('time = "3:00:00"\nnodes = 5\n')
    out = run_cli(
        "template", "render", "torchrun", "--from-file", str(vars_file), "--set", "nodes=6"
    ).stdout
    assert "#SBATCH --partition=site-part\n" in out  # config [defaults]
    assert "#SBATCH --account=torch-acct\n" in out  # config [template.torchrun] beats [defaults]
    assert "#SBATCH --time=3:00:00\n" in out  # --from-file beats the config
    assert "#SBATCH --nodes=6\n" in out  # --set beats --from-file
    out = run_cli("template", "render", "cron-scheduler").stdout
    assert "#SBATCH --account=site-acct\n" in out


def test_config_key_no_template_knows_is_a_warning(run_cli, tmp_path: Path, monkeypatch) -> None:
    config = tmp_path / "site.toml"
    config.write_text('[defaults]\npartiton = "gpu"\ngb = 10\n')
    monkeypatch.setenv("SLURMKIT_CONFIG", str(config))
    result = run_cli("template", "render", "torchrun")
    assert "[defaults] partiton is not a parameter of any template" in result.stderr
    assert "gb" not in result.stderr  # gpu-memory-test declares it
    assert result.stdout.startswith("#!/bin/bash")


def test_bad_config_and_vars_files_are_one_line(run_cli, tmp_path: Path, monkeypatch) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[defaults\n")
    result = run_cli("template", "render", "torchrun", "--from-file", str(bad), exit_code=2)
    assert "vars file" in result.stderr and "is not valid TOML" in result.stderr
    monkeypatch.setenv("SLURMKIT_CONFIG", str(tmp_path / "missing.toml"))
    result = run_cli("template", "render", "torchrun", exit_code=2)
    assert "config file" in result.stderr and "does not exist" in result.stderr


def test_submit_dry_run_writes_script_and_prints_sbatch(run_cli, tmp_path: Path) -> None:
    scripts, logs = tmp_path / "scripts", tmp_path / "logs"
    result = run_cli(
        "template", "submit", "torchrun", "--set", f"log_dir={logs}",
        "--script-dir", str(scripts), "--dry-run", "--", "--exclude=node-3", "--hold",
    )  # fmt: skip
    (script,) = scripts.iterdir()
    assert script.name.startswith("torchrun-") and script.suffix == ".slurm"
    assert logs.is_dir()
    assert result.stdout == f"sbatch --parsable --exclude=node-3 --hold < {script}\n"
    data = json.loads(
        run_cli(
            "template", "submit", "torchrun", "--script-dir", str(scripts), "--dry-run", "--json"
        ).stdout
    )
    assert data["dry_run"] is True and data["argv"][:2] == ["sbatch", "--parsable"]


def test_submit_runs_sbatch_once_and_prints_the_job_id(
    run_cli, tmp_path: Path, sbatch_calls
) -> None:
    result = run_cli(
        "template", "submit", "cpus-per-task-test", "--script-dir", str(tmp_path),
        "--", "--partition=cpu",
    )  # fmt: skip
    assert result.stdout == "4242\n"
    ((sbatch, parsable, option),) = sbatch_calls  # no script path: sbatch reads stdin
    assert (sbatch, parsable, option) == ("sbatch", "--parsable", "--partition=cpu")
    assert len(list(tmp_path.glob("cpus-per-task-test-*.slurm"))) == 1  # the copy kept
    data = json.loads(
        run_cli(
            "template", "submit", "cpus-per-task-test", "--script-dir", str(tmp_path), "--json"
        ).stdout
    )
    assert data["job_id"] == "4242" and Path(data["script"]).is_file()


def test_submit_needs_double_dash_for_sbatch_options(run_cli, tmp_path: Path, sbatch_calls) -> None:
    result = run_cli(
        "template", "submit", "torchrun", "--script-dir", str(tmp_path), "--hold", exit_code=2
    )
    assert "No such option '--hold'" in result.stderr
    assert sbatch_calls == []


def test_sbatch_failure_is_one_line(run_cli, tmp_path: Path, fake_slurm: FakeSlurm) -> None:
    fake_slurm.on(
        ["sbatch", "**"],
        rc=1,
        stderr="sbatch: error: Batch job submission failed: Invalid account\n",
    )
    result = run_cli("template", "submit", "torchrun", "--script-dir", str(tmp_path), exit_code=2)
    assert result.stderr.startswith("slurmkit: sbatch")
    assert "Invalid account" in result.stderr and result.stderr.count("\n") == 1


def test_sbatch_missing_is_one_line(run_cli, tmp_path: Path, fake_slurm: FakeSlurm) -> None:
    fake_slurm.missing("sbatch")
    result = run_cli("template", "submit", "torchrun", "--script-dir", str(tmp_path), exit_code=2)
    assert "'sbatch' not found on PATH" in result.stderr


def test_script_or_log_dir_that_is_a_file_is_refused(run_cli, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run_cli(
        "template", "submit", "torchrun", "--script-dir", str(blocker), "--dry-run", exit_code=2
    )
    assert "is a file" in result.stderr
    result = run_cli(
        "template", "submit", "torchrun", "--script-dir", str(tmp_path / "s"),
        "--set", f"log_dir={blocker}", "--dry-run", exit_code=2,
    )  # fmt: skip
    assert result.stderr == f"slurmkit: log_dir {blocker} exists and is not a folder\n"
    assert not (tmp_path / "s").exists() or not list((tmp_path / "s").iterdir())


def test_list_and_show_do_not_load_jinja() -> None:
    """Listing reads the declaration blocks only; Jinja2 is paid for when rendering."""
    code = (
        "import sys\nfrom slurmkit.cli import cli\n"
        "for args in (['template', 'list'], ['template', 'show', 'torchrun', '--json']):\n"
        "    try:\n        cli.main(args, standalone_mode=False)\n"
        "    except SystemExit:\n        pass\n"
        "print('JINJA', 'jinja2' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "JINJA False"
