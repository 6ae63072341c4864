"""The CLI shell: every command loads, start-up stays light, errors map to exit codes."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from slurmkit.cli import SUBCOMMANDS, cli
from slurmkit.cli._group import LazyGroup


def _walk(command: click.Command, ctx: click.Context) -> list[list[str]]:
    paths: list[list[str]] = [[]]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{name} listed but not loadable"
            sub_ctx = click.Context(sub, info_name=name, parent=ctx)
            paths += [[name, *rest] for rest in _walk(sub, sub_ctx)]
    return paths


def test_every_command_loads_and_has_help(run_cli) -> None:
    """A typo in the lazy registry fails here, not in a user's terminal."""
    paths = _walk(cli, click.Context(cli, info_name="slurmkit"))
    assert len(paths) > len(SUBCOMMANDS)
    for path in paths:
        result = run_cli(*path, "--help")
        assert "Usage:" in result.stdout, path


def test_start_up_imports_no_heavy_library() -> None:
    """paramiko, jinja2 and tabulate cost ~100 ms each invocation; help must not load them."""
    code = (
        "import sys; from slurmkit.cli import cli\n"
        "try:\n    cli.main(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        "print(','.join(m for m in ('paramiko', 'jinja2', 'tabulate', 'json')"
        " if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = out.strip().splitlines()[-1] if out.strip() else ""
    assert not {"paramiko", "jinja2", "tabulate"} & set(loaded.split(","))


def test_version(run_cli) -> None:
    assert run_cli("--version").stdout.startswith("slurmkit, version ")


def test_unknown_subcommand_is_a_usage_error(run_cli) -> None:
    result = run_cli("no-such-command", exit_code=2)
    assert "No such command" in result.stderr


def test_slurmkit_errors_become_one_line_and_their_exit_code(
    run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slurmkit import sandbox
    from slurmkit.errors import ControllerUnreachable

    def boom(directory: object) -> None:
        raise ControllerUnreachable("squeue: cannot reach slurmctld: connect failure")

    monkeypatch.setattr(sandbox, "status", boom)
    result = run_cli("sandbox", "status", exit_code=2)
    assert result.stderr == "slurmkit: squeue: cannot reach slurmctld: connect failure\n"
    assert result.stdout == ""


def test_lazy_group_rejects_a_registry_entry_that_is_not_a_command() -> None:
    group = LazyGroup(name="g", lazy_subcommands={"bad": "slurmkit.errors:SlurmkitError"})
    with pytest.raises(TypeError, match="not a click command"):
        group.get_command(click.Context(group), "bad")


def test_proc_refuses_shell_strings() -> None:
    from slurmkit import _proc

    with pytest.raises(TypeError, match="not a shell string"):
        _proc.run("echo hi")  # type: ignore[arg-type]
