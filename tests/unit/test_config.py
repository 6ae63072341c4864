"""Site defaults (issue 20 item 4): the layers, the checks against the real options, root's
trust rule, the template sections through the same reader, and ``slurmkit config show``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmkit import config
from slurmkit.cli import cli
from slurmkit.templating import config as template_config


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A system file and a user file (XDG) in tmp_path, neither written yet; no stray env."""
    system = tmp_path / "etc" / "config.toml"
    user = tmp_path / "xdg" / "slurmkit" / "config.toml"
    system.parent.mkdir(parents=True)
    user.parent.mkdir(parents=True)
    monkeypatch.setattr(config, "SYSTEM_PATH", system)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in list(os.environ):
        if name.startswith("SLURMKIT_") and name != "SLURMKIT_BACKEND":
            monkeypatch.delenv(name)
    return {"system": system, "user": user}


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


# ---------------------------------------------------------------- precedence


def test_layers_lowest_first_system_user_env_flag(files: dict[str, Path]) -> None:
    files["system"].write_text('[nodes.expand]\nsep = ";"\n')
    assert run("nodes", "expand", "n[1-3]").output == "n1;n2;n3\n"
    files["user"].write_text('[nodes.expand]\nsep = "+"\n')
    assert run("nodes", "expand", "n[1-3]").output == "n1+n2+n3\n"
    env = {"SLURMKIT_NODES_EXPAND_SEP": ":"}
    assert run("nodes", "expand", "n[1-3]", env=env).output == "n1:n2:n3\n"
    assert run("nodes", "expand", "--sep", "/", "n[1-3]", env=env).output == "n1/n2/n3\n"


def test_slurmkit_config_replaces_the_user_file(files: dict[str, Path], tmp_path: Path) -> None:
    files["user"].write_text('[nodes.expand]\nsep = "+"\n')
    named = tmp_path / "named.toml"
    named.write_text('[nodes.expand]\nsep = "|"\n')
    result = run("nodes", "expand", "n[1-2]", env={"SLURMKIT_CONFIG": str(named)})
    assert result.output == "n1|n2\n"
    result = run("nodes", "expand", "n[1-2]", env={"SLURMKIT_CONFIG": str(tmp_path / "nope")})
    assert result.exit_code == 2
    assert "nope does not exist" in result.output


def test_a_list_in_the_higher_file_replaces_the_lower_list(files: dict[str, Path]) -> None:
    files["system"].write_text('[notify]\ntargets = ["email:a@x", "email:b@x"]\n')
    files["user"].write_text('[notify]\ntargets = ["cmd:true"]\n')
    layered = config.load()
    assert layered.values["notify"]["targets"] == ["cmd:true"]
    assert layered.origin(("notify", "targets")).path == files["user"]


# ---------------------------------------------------------------- bad files: one line, exit 2


@pytest.mark.parametrize(
    ("text", "line", "key", "why"),
    [
        ('[run]\nfanout = "many"\n', 2, "run.fanout", "'many' is not a valid integer"),
        ("\n[run]\nfanuot = 64\n", 3, "run.fanuot", "did you mean fanout?"),
        ("[rnu]\nfanout = 3\n", 1, "rnu", "unknown command section (did you mean run?)"),
        ("[faulty.scan]\ndrain = 1\n", 2, "faulty.scan.drain", "expected true or false"),
        ("[faulty.scna]\n", 1, "faulty.scna", "unknown command section"),
        ('[undrain]\nlog = "/x"\nfanout = [1, 2]\n', 3, "undrain.fanout", "not a list"),
        ("[undrain]\nlog = 5\n", 2, "undrain.log", "expected a path (a string), not 5"),
        ('[notify]\ntargets = "x"\nevery = 2\n', 3, "notify.every", "unknown key"),
        ("backend = 3\n", 1, "backend", "3 is not one of 'auto'"),
    ],
)
def test_bad_key_or_value_names_file_line_key(
    files: dict[str, Path], text: str, line: int, key: str, why: str
) -> None:
    files["user"].write_text(text)
    command = ("faulty", "history") if key.startswith("faulty") else ("undrain",)
    if key.startswith(("run", "rnu")):
        command = ("run", "-w", "n1", "true")
    result = run(*command, "--help")
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1
    assert result.output.startswith(
        f"slurmkit: config file {files['user']}, line {line}, key {key}: "
    )
    assert why in result.output


def test_toml_syntax_error_names_line_and_key(files: dict[str, Path]) -> None:
    files["system"].write_text("[run]\nfanout = 64\ntimeout = \n")
    result = run("nodes", "expand", "n1")
    assert result.exit_code == 2
    assert result.output == (
        f"slurmkit: config file {files['system']} is not valid TOML at line 3, key timeout: "
        "Invalid value\n"
    )


def test_other_commands_sections_are_checked_when_they_run(files: dict[str, Path]) -> None:
    """A wrong value under [run] does not stop `nodes expand` (only the command run and the
    top level are checked on each call); `config show` checks them all."""
    files["user"].write_text('[run]\nfanout = "many"\n')
    assert run("nodes", "expand", "n1").output == "n1\n"
    result = run("config", "show")
    assert result.exit_code == 2
    assert "line 2, key run.fanout" in result.output


def test_option_spelled_as_its_flag_and_as_its_parameter(files: dict[str, Path]) -> None:
    files["user"].write_text('[undrain]\nlog = "/var/log/u.log"\nssh-config = "/etc/s"\n')
    rows = json.loads(run("config", "show", "undrain", "--json").output)
    by_key = {row["key"]: row for row in rows}
    assert by_key["undrain.log_path"]["value"] == "/var/log/u.log"
    assert by_key["undrain.log_path"]["line"] == 2
    assert by_key["undrain.ssh_config"]["value"] == "/etc/s"
    files["user"].write_text('[undrain]\nlog = "/a"\nlog_path = "/b"\n')
    result = run("undrain", "--help")
    assert result.exit_code == 2
    assert "line 2, key undrain.log: sets the same option as log_path" in result.output


# ---------------------------------------------------------------- root and trust


@pytest.mark.skipif(os.geteuid() != 0, reason="the trust rule applies to root only")
def test_root_refuses_a_config_file_others_can_write(files: dict[str, Path]) -> None:
    files["system"].write_text('[nodes.expand]\nsep = ";"\n')
    files["system"].chmod(0o664)
    result = run("nodes", "expand", "n[1-2]")
    assert result.exit_code == 2
    assert result.output == (
        f"slurmkit: refusing config file {files['system']}: writable by group or others "
        f"(owner uid 0, mode 0664); fix it with: chmod go-w {files['system']}\n"
    )
    files["system"].chmod(0o644)
    assert run("nodes", "expand", "n[1-2]").output == "n1;n2\n"


def test_a_user_may_read_a_group_writable_file_of_their_own(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    files["user"].write_text('[nodes.expand]\nsep = ";"\n')
    files["user"].chmod(0o664)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert [f.path for f in config.load().files] == [files["user"]]


# ---------------------------------------------------------------- [defaults], [template.NAME]


def test_template_sections_layer_system_then_user(files: dict[str, Path]) -> None:
    files["system"].write_text('[defaults]\npartition = "cpu"\naccount = "site"\n')
    files["user"].write_text('[defaults]\naccount = "me"\n[template.torchrun]\nnodes = 4\n')
    site = template_config.load()
    assert site.values_for("torchrun") == {"partition": "cpu", "account": "me", "nodes": 4}
    assert site.path == files["user"]


def test_template_subcommand_section_is_a_command_section(files: dict[str, Path]) -> None:
    """[template.render] holds `template render` options; [template.NAME] holds parameters."""
    files["user"].write_text("[template.render]\nno_exclude = true\n[template.torchrun]\nx = 1\n")
    rows = json.loads(run("config", "show", "template", "render", "--json").output)
    assert {r["key"]: r["value"] for r in rows}["template.render.no_exclude"] is True
    files["user"].write_text("[template.render]\nbogus = 1\n")
    result = run("template", "list")
    assert result.exit_code == 2
    assert "key template.render.bogus: unknown option for 'slurmkit template render'" in (
        result.output
    )


# ---------------------------------------------------------------- config show


def test_config_show_lists_values_with_their_origin(files: dict[str, Path]) -> None:
    files["system"].write_text("[run]\nfanout = 32\n")
    files["user"].write_text('\n[run]\nfanout = 64\n[notify]\ntargets = ["email:ops@x"]\n')
    result = run("config", "show", env={"SLURMKIT_UNDRAIN_GRACE": "90"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["ORIGIN", "KEY", "VALUE"]
    assert f"file:{files['user']}:3  run.fanout" in result.output
    # the user's value hides the system's: one run.fanout row, 64 (not a "32" anywhere in the
    # text: the temporary paths shown are pytest-of-root/pytest-N, and N reaches 32)
    assert [ln.split()[1:] for ln in lines if " run.fanout " in ln] == [["run.fanout", "64"]]
    assert any(ln.split() == ["env:SLURMKIT_UNDRAIN_GRACE", "undrain.grace", "90"] for ln in lines)
    rows = json.loads(run("config", "show", "--json").output)
    assert {
        "key": "notify.targets",
        "value": ["email:ops@x"],
        "origin": f"file:{files['user']}:5",
        "file": str(files["user"]),
        "line": 5,
        "env": None,
    } in rows


def test_config_show_command_shows_defaults_and_notify(files: dict[str, Path]) -> None:
    files["user"].write_text('[notify]\ntargets = ["cmd:true"]\n[watch.cron]\ngrace = "5m"\n')
    rows = {
        r["key"]: r for r in json.loads(run("config", "show", "watch", "cron", "--json").output)
    }
    assert rows["watch.cron.notify"]["value"] == ["cmd:true"]
    assert rows["watch.cron.notify"]["line"] == 2
    assert rows["watch.cron.grace"]["origin"] == f"file:{files['user']}:4"
    assert rows["watch.cron.realert"] == {
        "key": "watch.cron.realert",
        "value": "6h",
        "origin": "default",
        "file": None,
        "line": None,
        "env": None,
    }


def test_notify_targets_reach_every_command_with_notify(files: dict[str, Path]) -> None:
    """The [notify] targets are --notify's default: `watch fs` alerts them without a flag."""
    marker = files["user"].parent / "alerted"
    files["user"].write_text(f'[notify]\ntargets = ["cmd:touch {marker}"]\n')
    result = run("watch", "fs", "/", "--min-free", "100%", "--state", str(marker) + ".state")
    assert result.exit_code == 1, result.output
    assert marker.exists()


def test_smtp_password_is_hidden(files: dict[str, Path]) -> None:
    files["user"].write_text('[smtp]\nhost = "mail"\npassword = "hunter2"\n')
    files["user"].chmod(0o600)
    result = run("config", "show")
    assert "hunter2" not in result.output
    assert "smtp.password" in result.output
