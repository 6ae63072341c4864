"""Issue 28, item 7: safety switches are never defaults.

``[undrain] yes = true`` in a config file, or ``SLURMKIT_UNDRAIN_YES=1``, made every
undrain (cron's too) act without asking; ``kill`` and ``drain`` the same. Every flag of
every command is walked here: each must be a safety switch
(:data:`slurmkit.cli._defaults.SAFETY_SWITCHES`) or one of :data:`ORDINARY_FLAGS`, so a
new flag cannot be missed, and each safety switch, on every command that has it, is
refused in a file and in the environment with one line, exit 2.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from slurmkit import config
from slurmkit.cli import cli
from slurmkit.cli._defaults import SAFETY_SWITCHES, safety_problem

# Flags that make a command do less, show more or differently, or choose among ways of
# doing what was asked: a config file may set them.
ORDINARY_FLAGS = frozenset(
    {
        "as_json", "verbose", "debug", "version", "dry_run",  # dry_run = true only narrows
        "show_all", "no_record", "no_drain", "seconds_left", "list_rules", "show_info",
        "no_wait", "expand_names", "unique", "keep_order", "multi_dim", "native",
        "all_processes", "no_install", "any_user",
        "no_exclude",  # which nodes a job of one's own may use: the submitter's choice
        "stacks",  # why: dump a running job's Python stacks (reads, changes nothing)
        "no_shellcheck",  # lint shows fewer findings; train's lint gate never runs ShellCheck
    }
)  # fmt: skip


def _flags() -> list[tuple[tuple[str, ...], click.Option]]:
    """(command path, flag) for every flag option of every command, loaded for real."""
    found: list[tuple[tuple[str, ...], click.Option]] = []

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        found.extend((path, p) for p in command.params if isinstance(p, click.Option) and p.is_flag)
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(sub, (*path, name))

    walk(cli, ())
    return found


FLAGS = _flags()
SWITCHES = [(path, p) for path, p in FLAGS if p.name in SAFETY_SWITCHES]


def _on(param: click.Option) -> bool:
    return param.flag_value if isinstance(param.flag_value, bool) else True


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
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


def test_every_flag_is_decided_a_safety_switch_or_ordinary() -> None:
    undecided = sorted(
        {f"{' '.join(path) or 'slurmkit'} --{p.name}" for path, p in FLAGS}
        - {f"{' '.join(path) or 'slurmkit'} --{p.name}" for path, p in FLAGS if p.name in
           SAFETY_SWITCHES | ORDINARY_FLAGS}
    )  # fmt: skip
    assert not undecided, f"decide: safety switch or ordinary flag? {undecided}"
    assert not SAFETY_SWITCHES & ORDINARY_FLAGS
    # the ones the issue names, on the commands it names
    names = {(" ".join(path), p.name) for path, p in SWITCHES}
    assert {("undrain", "yes"), ("undrain", "kill"), ("faulty scan", "drain")} <= names
    assert ("train stop", "now") in names


@pytest.mark.parametrize(
    ("path", "param"), SWITCHES, ids=[f"{'.'.join(p)}.{o.name}" for p, o in SWITCHES]
)
def test_a_safety_switch_in_a_config_file_is_refused(
    files: dict[str, Path], path: tuple[str, ...], param: click.Option
) -> None:
    section = ".".join(path)
    value = "true" if _on(param) else "false"
    files["system"].write_text(f"# site defaults\n[{section}]\n{param.name} = {value}\n")
    result = run(*path, "--help")
    flag = max(param.opts, key=len)
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"slurmkit: config file {files['system']}, line 3, key {section}.{param.name}: "
        f"safety switches are never defaults; pass {flag} on the command line\n"
    )
    assert run("config", "show").exit_code == 2  # config show checks every section
    off = "false" if _on(param) else "true"
    files["system"].write_text(f"[{section}]\n{param.name} = {off}\n")  # the default restated
    assert run(*path, "--help").exit_code == 0


@pytest.mark.parametrize(
    ("path", "param"), SWITCHES, ids=[f"{'.'.join(p)}.{o.name}" for p, o in SWITCHES]
)
def test_a_safety_switch_in_the_environment_is_refused(
    files: dict[str, Path], path: tuple[str, ...], param: click.Option
) -> None:
    assert param.name is not None
    name = "_".join(["SLURMKIT", *path, param.name]).upper().replace("-", "_")
    result = run(*path, "--help", env={name: "1" if _on(param) else "0"})
    flag = max(param.opts, key=len)
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"slurmkit: environment variable {name}: "
        f"safety switches are never defaults; pass {flag} on the command line\n"
    )
    assert run("config", "show", env={name: "yes" if _on(param) else "no"}).exit_code == 2
    assert run(*path, "--help", env={name: "0" if _on(param) else "1"}).exit_code == 0


def test_an_option_spelled_as_a_negative_flag_means_that_flag(files: dict[str, Path]) -> None:
    """``no_log = true`` is ``--no-log`` (it used to keep the log: the value went to
    ``keep_log`` as it was); ``no_log = false`` restates the default."""
    files["user"].write_text("[undrain]\nno_log = true\n")
    result = run("undrain", "--help")
    assert result.exit_code == 2
    assert "key undrain.no_log: safety switches are never defaults; pass --no-log" in (
        result.output
    )
    files["user"].write_text("[undrain]\nno-log = false\n")
    shown = run("config", "show", "undrain")
    assert shown.exit_code == 0, shown.output
    assert "undrain.keep_log" in shown.output and "true" in shown.output


def test_a_dry_run_by_default_cannot_be_turned_off_by_a_default() -> None:
    """No command has one today; the rule is in place for the first that does."""
    default_on = click.Option(["--dry-run/--apply"], default=True)
    assert safety_problem(default_on, False) == (
        "safety switches are never defaults; pass --apply on the command line"
    )
    assert safety_problem(default_on, True) is None
    default_off = click.Option(["--dry-run"], is_flag=True)
    assert safety_problem(default_off, False) is None and safety_problem(default_off, True) is None


def test_ordinary_flags_and_other_variables_still_work(files: dict[str, Path]) -> None:
    files["user"].write_text("[undrain]\ndry_run = true\n[faulty.scan]\nno_record = true\n")
    assert run("undrain", "--help").exit_code == 0
    assert run("faulty", "scan", "--help").exit_code == 0
    env = {"SLURMKIT_UNDRAIN_DRY_RUN": "1", "SLURMKIT_CONFIG_X": "1", "SLURMKIT_YES": "1"}
    assert run("undrain", "--help", env=env).exit_code == 0
