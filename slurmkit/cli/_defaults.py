"""Site defaults into click: the config files become each command's ``default_map``.

:mod:`slurmkit.config` reads and layers the files; this module checks them against the
real click parameters and hands them to click, whose precedence then does the rest:
a flag wins over a ``SLURMKIT_<COMMAND>_<OPTION>`` variable (``auto_envvar_prefix``),
which wins over the config files (``default_map``), which win over the built-in default.

What is checked, and when: every invocation checks the top level (section names against
the command registry, without importing any command; the root's own keys; ``[notify]``)
and the sections of the command being run. ``slurmkit config show`` checks everything.
A bad key or value is one line naming the file, the line and the key, exit 2.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import click

from slurmkit import config, stderr
from slurmkit.cli._group import RootGroup
from slurmkit.errors import SlurmkitError

META_KEY = "slurmkit.config"
COMPLETE_VAR = "_SLURMKIT_COMPLETE"
NOTIFY_PARAM = "notify"


def key_name(key: str) -> str:
    """``ssh-config`` and ``ssh_config`` both name the option ``--ssh-config``."""
    return key.replace("-", "_")


class Defaults(dict[str, Any]):
    """One context's ``default_map``; a subcommand's map also carries the ``[notify]`` targets.

    Click asks the parent's map for a subcommand's map with ``.get(name)`` (and for a value
    with ``in`` and ``[]``), so ``get`` is where the global ``[notify] targets`` join every
    command's own section: a command without ``--notify`` simply never looks the key up.
    """

    def __init__(self, values: Mapping[str, Any], notify: Any = None) -> None:
        super().__init__((k if isinstance(v, dict) else key_name(k), v) for k, v in values.items())
        self.notify = notify

    def get(self, key: str, default: Any = None) -> Any:
        value = super().get(key, default)
        if value is not None and not isinstance(value, dict):
            return value
        child = Defaults(value or {}, self.notify)
        if self.notify is not None and NOTIFY_PARAM not in child:
            dict.__setitem__(child, NOTIFY_PARAM, self.notify)
        return child

    @classmethod
    def root(cls, layered: config.Layered) -> Defaults:
        notify = layered.section((config.NOTIFY_SECTION,)).get(config.NOTIFY_KEY)
        if isinstance(notify, str):
            notify = [notify]
        return cls(layered.values, notify)


def options(command: click.Command) -> dict[str, click.Option]:
    """The options a config file may set for ``command``: not --help or --version, and not a
    hidden one (a deprecated alias such as run's ``--nodes LIST``, or ``--debug``)."""
    return {
        p.name: p
        for p in command.params
        if isinstance(p, click.Option)
        and p.name
        and p.expose_value
        and not p.hidden
        and p.name != "help"
    }


def aliases(command: click.Command) -> dict[str, str]:
    """Every key that names an option -> its parameter name: ``log`` (from ``--log``) and
    ``log_path`` both name undrain's ``--log``; ``ssh-config`` and ``ssh_config`` the same."""
    found: dict[str, str] = {}
    for name, param in options(command).items():
        for opt in [*param.opts, *param.secondary_opts]:
            if opt.startswith("--") and not (param.is_flag and opt in param.secondary_opts):
                found.setdefault(key_name(opt[2:]), name)
        found[name] = name
    return found


def _rename(
    layered: config.Layered, keys: tuple[str, ...], table: dict[str, Any], key: str, name: str
) -> None:
    """Store ``key``'s value under the parameter name click looks up (origin kept)."""
    if key == name:
        return
    if name in table:
        raise layered.error((*keys, key), f"sets the same option as {name}")
    table[name] = table.pop(key)
    renamed: tuple[str, ...] = (*keys, name)
    layered.origins[renamed] = layered.origin((*keys, key))


def check_value(command: click.Command, param: click.Option, value: Any) -> str | None:
    """Why ``value`` (as TOML read it) cannot be ``param``'s default, or None when it can."""
    if param.multiple or param.nargs != 1:
        items = value if isinstance(value, list) else [value]
    elif isinstance(value, (list, dict)):
        return "expected one value, not a list"
    else:
        items = [value]
    ctx = click.Context(command)
    for item in items:
        if isinstance(item, (list, dict)):
            return "expected a value, not a table or a nested list"
        if getattr(param, "is_bool_flag", False) or isinstance(
            param.type, click.types.BoolParamType
        ):
            if not isinstance(item, bool):
                return f"expected true or false, not {item!r}"
            continue
        if isinstance(item, bool):
            return f"expected {param.type.name}, not a boolean"
        if isinstance(param.type, (click.Path, click.File)) and not isinstance(item, str):
            return f"expected a path (a string), not {item!r}"
        try:
            param.type.convert(item, param, ctx)
        except click.BadParameter as exc:
            return exc.message.rstrip(".")
        except (SlurmkitError, ValueError, TypeError) as exc:
            return str(exc)
    return None


def _unknown(keys: tuple[str, ...], known: list[str], what: str) -> str:
    import difflib  # only on the error path: start-up time is paid on every call

    close = difflib.get_close_matches(keys[-1], known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown {what}{hint}"


def check_command(
    layered: config.Layered, command: click.Command, keys: tuple[str, ...], table: Mapping[str, Any]
) -> None:
    """Every key of ``[keys]`` names an option of ``command`` and has a value it takes.

    Keys spelled as the long option (``log`` for ``--log``) are renamed in place to the
    parameter name, which is what click's ``default_map`` is looked up by.
    """
    params = options(command)
    names = aliases(command)
    ctx = click.Context(command)
    subcommands = command.list_commands(ctx) if isinstance(command, click.Group) else []
    for key, value in list(table.items()):
        here = (*keys, key)
        if isinstance(value, dict):
            group = command if isinstance(command, click.Group) else None
            sub = group.get_command(ctx, key) if group and key in subcommands else None
            if sub is not None:
                check_command(layered, sub, here, value)
            elif keys == ("template",):
                continue  # [template.NAME]: a template's parameters, checked when it renders
            else:
                raise layered.error(here, _unknown(here, subcommands, "command section"))
        elif key_name(key) in names:
            problem = check_value(command, params[names[key_name(key)]], value)
            if problem:
                raise layered.error(here, problem)
            _rename(layered, keys, table, key, names[key_name(key)])  # type: ignore[arg-type]
        else:
            path = " ".join(["slurmkit", *keys])
            known = sorted(names)
            raise layered.error(here, _unknown(here, known, f"option for '{path}'"))


def check_top(root: click.Group, layered: config.Layered) -> None:
    """Section names, the root's own keys and ``[notify]``; imports no subcommand."""
    commands = root.list_commands(click.Context(root))
    params = options(root)
    names = aliases(root)
    for key, value in list(layered.values.items()):
        keys = (key,)
        if key == config.NOTIFY_SECTION:
            _check_notify(layered, value)
        elif key in config.NOT_COMMANDS:
            if not isinstance(value, dict):
                raise layered.error(keys, f"[{key}] must be a table")
        elif isinstance(value, dict):
            if key not in commands:
                raise layered.error(keys, _unknown(keys, commands, "command section"))
        elif key_name(key) in names:
            problem = check_value(root, params[names[key_name(key)]], value)
            if problem:
                raise layered.error(keys, problem)
            _rename(layered, (), layered.values, key, names[key_name(key)])
        else:
            known = sorted([*params, *commands])
            raise layered.error(keys, _unknown(keys, known, "option for 'slurmkit'"))


def _check_notify(layered: config.Layered, table: Any) -> None:
    keys = (config.NOTIFY_SECTION,)
    if not isinstance(table, dict):
        raise layered.error(keys, "[notify] must be a table with targets = [...]")
    for key, value in table.items():
        if key != config.NOTIFY_KEY:
            raise layered.error((*keys, key), f"unknown key (only {config.NOTIFY_KEY})")
        values = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) for v in values):
            raise layered.error((*keys, key), "expected a list of targets (strings)")


def check_invoked(ctx: click.Context) -> None:
    """Check the sections of the subcommand about to run (its module is loaded anyway)."""
    layered = ctx.meta.get(META_KEY)
    name = ctx.invoked_subcommand
    if layered is None or not name or not isinstance(ctx.command, click.Group):
        return
    table = layered.values.get(name)
    if isinstance(table, dict):
        command = ctx.command.get_command(ctx, name)
        if command is not None:
            check_command(layered, command, (name,), table)


def check_all(root: click.Group, layered: config.Layered) -> None:
    """Every section of every file (``config show``): imports the commands named."""
    check_top(root, layered)
    ctx = click.Context(root)
    for name, table in layered.values.items():
        if name in config.NOT_COMMANDS or not isinstance(table, dict):
            continue
        command = root.get_command(ctx, name)
        if command is not None:
            check_command(layered, command, (name,), table)


class ConfiguredRootGroup(RootGroup):
    """The root group: loads the config files into ``default_map`` before parsing anything."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        if os.environ.get(COMPLETE_VAR):
            from slurmkit.cli.completion import register

            register()
        return super().main(*args, **kwargs)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        layered = None
        if parent is None and "default_map" not in extra:
            try:
                layered = config.load()
                check_top(self, layered)
            except SlurmkitError as exc:
                if not extra.get("resilient_parsing"):  # completing: offer values, not errors
                    stderr.say(str(exc))
                    raise click.exceptions.Exit(exc.exit_code) from None
                layered = config.Layered()
            extra["default_map"] = Defaults.root(layered)
        extra.setdefault("auto_envvar_prefix", config.ENV_PREFIX)
        ctx = super().make_context(info_name, args, parent=parent, **extra)
        if layered is not None:
            ctx.meta[META_KEY] = layered
        return ctx
