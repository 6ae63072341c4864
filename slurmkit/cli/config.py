"""``slurmkit config show``: every effective default and where it came from.

Like ``git config --list --show-origin``: one line per value set by a config file
(``file:PATH:LINE``) or by a ``SLURMKIT_*`` variable (``env:NAME``), the highest layer's
value only. Given a command (``slurmkit config show run``, ``... show faulty scan``) it
lists every option of that command instead, built-in defaults included (``default``).
The whole file is checked first, so a bad key anywhere is reported here (exit 2).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import click

from slurmkit import config
from slurmkit.cli._defaults import META_KEY, NOTIFY_PARAM, check_all, options
from slurmkit.cli._output import print_json, print_table
from slurmkit.errors import UsageError


@dataclass(frozen=True)
class Row:
    key: str
    value: Any
    origin: config.Origin


def _shown(key: str, value: Any) -> Any:
    return "(hidden)" if "password" in key.lower() or "secret" in key.lower() else value


def env_names(path: tuple[str, ...], param: click.Option) -> list[str]:
    """The variables click reads for ``param``: its own ``envvar``, else the automatic name."""
    if param.envvar:
        return [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)
    parts = [config.ENV_PREFIX, *path, param.name or ""]
    return ["_".join(parts).upper().replace("-", "_")]


def _walk(
    command: click.Command, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, (*path, name))


def _file_rows(
    layered: config.Layered, table: dict[str, Any], at: tuple[str, ...]
) -> Iterator[Row]:
    for key, value in table.items():
        keys = (*at, key)
        if isinstance(value, dict):
            yield from _file_rows(layered, value, keys)
        else:
            yield Row(".".join(keys), _shown(key, value), layered.origin(keys))


def _env_rows(root: click.Group) -> Iterator[Row]:
    for path, command in _walk(root, ()):
        for name, param in options(command).items():
            for var in env_names(path, param):
                if var in os.environ:
                    key = ".".join([*path, name])
                    yield Row(key, _shown(key, os.environ[var]), config.Origin(env=var))
                    break


def all_rows(root: click.Group, layered: config.Layered) -> list[Row]:
    """Every value a file or variable sets; a variable hides the file's value for its key."""
    rows = {row.key: row for row in _file_rows(layered, layered.values, ())}
    for row in _env_rows(root):
        rows[row.key] = row
    return list(rows.values())


def command_rows(root: click.Group, layered: config.Layered, path: tuple[str, ...]) -> list[Row]:
    """Every option of the command at ``path`` with its effective default and origin."""
    command: click.Command | None = root
    for name in path:
        if not isinstance(command, click.Group):
            command = None
            break
        command = command.get_command(click.Context(command), name)
    if command is None:
        raise UsageError(f"no command 'slurmkit {' '.join(path)}'")
    section = layered.section(path)
    notify = layered.section((config.NOTIFY_SECTION,)).get(config.NOTIFY_KEY)
    named = {k: k for k, v in section.items() if not isinstance(v, dict)}  # renamed by check_all
    rows = []
    for name, param in options(command).items():
        key = ".".join([*path, name])
        var = next((v for v in env_names(path, param) if v in os.environ), None)
        if var is not None:
            rows.append(Row(key, _shown(key, os.environ[var]), config.Origin(env=var)))
        elif name in named:
            keys = (*path, named[name])
            rows.append(Row(key, _shown(key, section[named[name]]), layered.origin(keys)))
        elif name == NOTIFY_PARAM and notify is not None:
            keys = (config.NOTIFY_SECTION, config.NOTIFY_KEY)
            rows.append(Row(key, notify, layered.origin(keys)))
        else:
            default = param.default if not callable(param.default) else None
            if default is getattr(click.core, "UNSET", object()):  # click 8.3+: "not given"
                default = False if param.is_flag and not param.multiple else None
            rows.append(Row(key, default, config.Origin()))
    return rows


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


@click.group("config")
def config_group() -> None:
    """Site defaults from the config files: each value and where it came from.

    Files, lowest first: /etc/slurmkit/config.toml, then $XDG_CONFIG_HOME/slurmkit/config.toml
    (~/.config when unset) or $SLURMKIT_CONFIG instead; then SLURMKIT_<COMMAND>_<OPTION>
    variables; then flags. Sections are command paths ([run], [faulty.scan]) holding option
    names (fanout = 64); [notify] targets = [...] sets --notify everywhere.
    """


@config_group.command("show")
@click.argument("command", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@click.pass_context
def show_command(ctx: click.Context, command: tuple[str, ...], as_json: bool) -> None:
    """Print each effective value and its origin (file:PATH:LINE, env:VAR, default).

    Without COMMAND: every value the files and variables set. With COMMAND (run,
    faulty scan, ...): every option of that command, built-in defaults included.
    """
    root = ctx.find_root()
    layered = root.meta.get(META_KEY)
    if layered is None:
        layered = config.load()
    assert isinstance(root.command, click.Group)
    check_all(root.command, layered)
    if command:
        rows = command_rows(root.command, layered, command)
    else:
        rows = all_rows(root.command, layered)
    if as_json:
        print_json(
            [
                {
                    "key": r.key,
                    "value": r.value,
                    "origin": str(r.origin),
                    "file": str(r.origin.path) if r.origin.path else None,
                    "line": r.origin.line,
                    "env": r.origin.env,
                }
                for r in rows
            ]
        )
        return
    if not rows:
        read = ", ".join(str(f.path) for f in layered.files) or "no config file"
        click.echo(f"no values set ({read}; see 'slurmkit config --help')")
        return
    print_table([(str(r.origin), r.key, _text(r.value)) for r in rows], ["ORIGIN", "KEY", "VALUE"])
