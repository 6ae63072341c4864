"""The CLI shell: every command loads, start-up stays light, errors map to exit codes."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import click
import pytest

from slurmkit.cli import SUBCOMMANDS, cli
from slurmkit.cli._group import LazyGroup


def _walk(
    command: click.Command, ctx: click.Context, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command, click.Context]]:
    """Every command of the tree, loaded, with its path and context."""
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{name} listed but not loadable"
            yield from _walk(sub, click.Context(sub, info_name=name, parent=ctx), (*path, name))


def _lazy_groups() -> list[tuple[tuple[str, ...], LazyGroup, click.Context]]:
    root = click.Context(cli, info_name="slurmkit")
    return [(p, g, ctx) for p, g, ctx in _walk(cli, root) if isinstance(g, LazyGroup)]


def test_every_command_loads_and_has_help(run_cli) -> None:
    """A typo in the lazy registry fails here, not in a user's terminal."""
    paths = [path for path, _, _ in _walk(cli, click.Context(cli, info_name="slurmkit"))]
    assert len(paths) > len(SUBCOMMANDS)
    for path in paths:
        result = run_cli(*path, "--help")
        assert "Usage:" in result.stdout, path


def test_registry_short_help_is_each_commands_own() -> None:
    """Help lists the registry's copies: a docstring edited alone fails here, with the new text."""
    groups = _lazy_groups()
    assert {path for path, _, _ in groups} >= {(), ("nodes",)}
    drifted: dict[str, tuple[str, str]] = {}
    for path, group, ctx in groups:
        for name, (_, copied) in group.lazy_subcommands.items():
            command = group.get_command(ctx, name)
            assert command is not None and not command.hidden, (*path, name)
            real = command.get_short_help_str(limit=sys.maxsize)
            if real != copied:
                drifted[" ".join((*path, name))] = (copied, real)
    assert drifted == {}, "registry copy != the command's short help (copy, real)"


@pytest.mark.parametrize("width", [40, 60, 80, 100, 200])
def test_help_lists_commands_as_click_would_from_the_loaded_commands(width: int) -> None:
    """The stand-ins must shorten to the terminal width exactly as the real commands do."""
    for path, group, ctx in _lazy_groups():
        lazy, loaded = click.HelpFormatter(width=width), click.HelpFormatter(width=width)
        group.format_commands(ctx, lazy)
        click.Group.format_commands(group, ctx, loaded)  # imports every subcommand
        assert "Commands:" in loaded.getvalue(), path
        assert lazy.getvalue() == loaded.getvalue(), path


@pytest.mark.parametrize("path", [(), ("nodes",)], ids=["slurmkit", "slurmkit nodes"])
def test_help_imports_no_subcommand_and_no_heavy_library(path: tuple[str, ...]) -> None:
    """--help lists commands from the registry: importing them all made it cost twice a plain
    command, and paramiko, jinja2 and tabulate cost ~100 ms on each invocation."""
    group = next(g for p, g, _ in _lazy_groups() if p == path)
    modules = {target.partition(":")[0] for target, _ in group.lazy_subcommands.values()}
    watched = sorted({"paramiko", "jinja2", "tabulate", *modules})
    code = (
        "import sys; from slurmkit.cli import cli\n"
        "try:\n    cli.main(sys.argv[1:], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
        f"print('LOADED:', *(m for m in {watched!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *path, "--help"], capture_output=True, text=True, check=True
    ).stdout
    listed = out.partition("Commands:")[2].split()
    assert set(group.lazy_subcommands) <= set(listed)
    assert out.splitlines()[-1] == "LOADED:"


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
    group = LazyGroup(name="g", lazy_subcommands={"bad": ("slurmkit.errors:SlurmkitError", "")})
    with pytest.raises(TypeError, match="not a click command"):
        group.get_command(click.Context(group), "bad")


def test_proc_refuses_shell_strings() -> None:
    from slurmkit import _proc

    with pytest.raises(TypeError, match="not a shell string"):
        _proc.run("echo hi")  # type: ignore[arg-type]
