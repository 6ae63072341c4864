"""Site defaults into click: the config files become each command's ``default_map``.

:mod:`slurmkit.config` reads and layers the files; this module checks them against the
real click parameters and hands them to click, whose precedence then does the rest:
a flag wins over a ``SLURMKIT_<COMMAND>_<OPTION>`` variable (``auto_envvar_prefix``),
which wins over the config files (``default_map``), which win over the built-in default.

What is checked, and when: every invocation checks the top level (section names against
the command registry, without importing any command; the root's own keys; ``[notify]``)
and the sections of the command being run. ``slurmkit config show`` checks everything.
A bad key or value is one line naming the file, the line and the key, exit 2.

Safety switches are never defaults (issue 28): ``[undrain] yes = true`` or
``SLURMKIT_UNDRAIN_YES=1`` made every undrain, cron's included, act without asking. A
flag that makes a command change more or check less (:data:`SAFETY_SWITCHES`) is
refused in the files and in the environment: it has to be on the command line of the
run it is meant for. The same holds for a dry run by default: nothing but a flag may
turn it off.
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

# Flags (by parameter name) that make a command change more or check less than it would
# without them. tests/unit/test_config_safety.py fails on a flag of any command that is
# neither here nor in its list of ordinary flags, so a new one gets decided, not missed.
SAFETY_SWITCHES = frozenset(
    {
        "yes",  # acts without asking
        "kill",  # undrain: kills leftover processes
        "drain",  # faulty scan: drains nodes
        "now",  # train stop: cancels the running run too
        "expired",  # faulty excluded: removes entries
        "asap",  # node reboot: drains the nodes now
        "force",  # train: goes on past lint errors
        "no_check",  # node resume: returns nodes unchecked
        "insecure",  # accepts any ssh host key
        "sudo",  # runs the command as root on the nodes
        "keep_log",  # --no-log: no audit log to settle a killed run from
        "none_",  # train settle --none: closes open intents as having queued nothing
    }
)
DRY_RUN = "dry_run"
SAFETY_RULE = "safety switches are never defaults"


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
        except OverflowError:  # TOML's 1e400 is inf: int(inf) overflows
            return f"expected {param.type.name}, not {item!r}"
    return None


def _check_key(
    layered: config.Layered,
    command: click.Command,
    keys: tuple[str, ...],
    param: click.Option,
    value: Any,
) -> None:
    """One key's value: a value ``param`` takes, and not a safety switch turned on.

    A key spelled as a flag that sets False (``no_log`` for ``--no-log``, parameter
    ``keep_log``) means "pass that flag": its value is stored inverted, so ``no_log =
    true`` keeps no log, as the flag would (it used to keep the log).
    """
    problem = check_value(command, param, value)
    if problem:
        raise layered.error(keys, problem)
    if isinstance(value, bool) and key_name(keys[-1]) != param.name and _on_value(param) is False:
        value = not value
        _store(layered, keys, value)
    problem = safety_problem(param, value)
    if problem:
        raise layered.error(keys, problem)


def _store(layered: config.Layered, keys: tuple[str, ...], value: Any) -> None:
    table: Any = layered.values
    for key in keys[:-1]:
        table = table[key]
    table[keys[-1]] = value


def _on_value(param: click.Option) -> Any:
    """The value ``param``'s flag sets when given (click leaves flag_value unset for True)."""
    return param.flag_value if isinstance(param.flag_value, bool) else True


def safety_problem(param: click.Option, value: Any) -> str | None:
    """Why ``value`` may not be ``param``'s default: it turns a safety switch on, or a dry
    run by default off. None when it may (``yes = false`` is the default restated)."""
    if not param.is_flag:
        return None
    if param.name in SAFETY_SWITCHES and value == _on_value(param):
        flag = max(param.opts, key=len)
    elif param.name == DRY_RUN and param.default is True and value is not True:
        flag = max(param.secondary_opts or param.opts, key=len)
    else:
        return None
    return f"{SAFETY_RULE}; pass {flag} on the command line"


def check_environment(
    command: click.Command, prefix: str, environ: Mapping[str, str] | None = None
) -> None:
    """No ``SLURMKIT_<COMMAND>_<SWITCH>`` variable turns a safety switch on (click's names:
    each subcommand adds ``_<NAME>`` to the prefix). A subcommand is looked at only when a
    variable carries its prefix, so this imports nothing on an ordinary call."""
    env = os.environ if environ is None else environ
    for param in command.params:
        if isinstance(param, click.Option) and param.name and param.allow_from_autoenv:
            _check_variable(param, f"{prefix}_{param.name.upper()}", env)
    if not isinstance(command, click.Group):
        return
    ctx = click.Context(command)
    for name in command.list_commands(ctx):
        sub_prefix = f"{prefix}_{name.upper()}".replace("-", "_")
        if any(k.startswith(sub_prefix + "_") and v for k, v in env.items()):
            sub = command.get_command(ctx, name)
            if sub is not None:
                check_environment(sub, sub_prefix, env)


def _check_variable(param: click.Option, name: str, env: Mapping[str, str]) -> None:
    raw = env.get(name)
    if not raw or not (param.name in SAFETY_SWITCHES or param.name == DRY_RUN):
        return
    try:
        value = param.type.convert(raw, param, None)
    except click.BadParameter:
        value = None if param.name == DRY_RUN else _on_value(param)  # unreadable: not allowed
    problem = safety_problem(param, value)
    if problem:
        raise config.ConfigError(f"environment variable {name}: {problem}")


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
            _check_key(layered, command, here, params[names[key_name(key)]], value)
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
            _check_key(layered, root, keys, params[names[key_name(key)]], value)
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
    command = ctx.command.get_command(ctx, name)
    if command is None:
        return
    if isinstance(table, dict):
        check_command(layered, command, (name,), table)
    prefix = ctx.auto_envvar_prefix or config.ENV_PREFIX
    check_environment(command, f"{prefix}_{name.upper()}".replace("-", "_"))


def check_all(root: click.Group, layered: config.Layered) -> None:
    """Every section of every file (``config show``): imports the commands named."""
    check_top(root, layered)
    check_environment(root, config.ENV_PREFIX)
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
