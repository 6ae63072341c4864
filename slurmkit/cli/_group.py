"""The click group class every slurmkit group uses.

Subcommands are loaded lazily (name -> "module:attribute"), so ``slurmkit
--help`` and ``slurmkit nodes expand`` never import paramiko, Jinja2 or
tabulate: start-up time is paid on every invocation inside job scripts.
Each registry entry also carries the subcommand's short help, so a group's
``--help`` lists its commands without importing any of them.
"""

from __future__ import annotations

import importlib
import io
import sys
from typing import NoReturn

import click

from slurmkit import stderr
from slurmkit.errors import EXIT_ERROR, SlurmkitError

LazyRegistry = dict[str, tuple[str, str]]
"""Subcommand name -> ("module:attribute", its short help as click derives it from the help).

The short help is a copy so that listing commands imports nothing; a unit test compares
every copy with the loaded command's ``get_short_help_str``, so the two cannot drift.
"""


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when invoked, not when listed in help."""

    def __init__(self, *args: object, lazy_subcommands: LazyRegistry | None = None, **kwargs):
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy_subcommands = dict(lazy_subcommands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_subcommands:
            return self._load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands from the registry's short helps instead of importing each one.

        Importing every subcommand doubled the cost of ``slurmkit --help``. Stand-in commands
        holding the registry's short help go through click's own listing, so truncation to
        the terminal width and layout stay exactly what the real commands would print.
        """
        stand_ins = {
            name: click.Command(name, help=short_help)
            for name, (_, short_help) in self.lazy_subcommands.items()
        }
        listing = click.Group(self.name, commands={**self.commands, **stand_ins})
        listing.format_commands(ctx, formatter)

    def _load(self, cmd_name: str) -> click.Command:
        target, _ = self.lazy_subcommands[cmd_name]
        module_name, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"lazy subcommand {cmd_name!r} -> {target} is not a click command")
        return command


class RootGroup(LazyGroup):
    """Maps every :class:`SlurmkitError` to ``slurmkit: <message>`` and its exit code, once.

    Click's own usage errors (unknown option, missing argument, bad value) get the
    same one line, ``slurmkit: <message> (see 'slurmkit CMD --help')`` and exit 2,
    instead of click's three lines of usage, hint and error. They are raised while
    parsing the root's arguments (:meth:`make_context`) or a subcommand's (inside
    :meth:`invoke`), so both are caught.
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: object,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            _usage_error(exc)

    def invoke(self, ctx: click.Context):
        _bytes_out_as_they_came_in()
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            _usage_error(exc)
        except SlurmkitError as exc:
            _traceback_if_debug(ctx)
            stderr.say(str(exc))
            raise click.exceptions.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            stderr.say("interrupted")
            raise click.exceptions.Exit(130) from None
        except OSError as exc:
            # A path the user named that the system refuses (missing, a name too long,
            # not a directory, permission denied): the user's to fix, not a bug. An
            # OSError naming no file is one, and keeps its traceback.
            if exc.filename is None:
                raise
            _traceback_if_debug(ctx)
            name = str(exc.filename)
            shown = name if len(name) <= 200 else name[:200] + "..."
            stderr.line(f"slurmkit: {exc.strerror or exc}: {shown!r}"[:400])
            raise click.exceptions.Exit(EXIT_ERROR) from None


def _bytes_out_as_they_came_in() -> None:
    """Let stdout and stderr write back the non-UTF-8 bytes an argument or stdin held.

    Python reads such bytes as lone surrogates (``surrogateescape``); with a UTF-8
    locale its stdout is strict, so echoing the node name ``n\x80`` raised
    UnicodeEncodeError. Written back with the same handler, the bytes come out
    unchanged, as from any Unix filter.
    """
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="surrogateescape")


def _usage_error(exc: click.UsageError) -> NoReturn:
    """Print a click usage error as one line and exit 2; a bare group still shows its help."""
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        raise exc
    message = exc.format_message().strip().rstrip(".")
    # A value the user typed may hold a newline or an escape sequence: one line, plain.
    message = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
    names: list[str] = []
    ctx = exc.ctx or _innermost_context(exc)
    while ctx is not None and ctx.parent is not None:  # the root is "slurmkit" however invoked
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    command = " ".join(["slurmkit", *names])
    stderr.say(f"{message} (see '{command} --help')")
    raise click.exceptions.Exit(EXIT_ERROR) from None


def _innermost_context(exc: BaseException) -> click.Context | None:
    """The context of the command being parsed when ``exc`` was raised.

    Click's parser raises some errors ("Option '--sep' requires an argument")
    without their context; the frames that raised it still hold it as ``ctx``,
    so the hint can name the subcommand rather than the root.
    """
    found, frame = None, exc.__traceback__
    while frame is not None:
        ctx = frame.tb_frame.f_locals.get("ctx")
        if isinstance(ctx, click.Context):
            found = ctx
        frame = frame.tb_next
    return found


def _traceback_if_debug(ctx: click.Context) -> None:
    if ctx.meta.get("slurmkit.debug"):
        import traceback

        traceback.print_exc()


def exit_with(code: int) -> None:
    """End a command with a documented exit code (0 done, 1 findings/skips, 2 error)."""
    sys.stdout.flush()
    raise click.exceptions.Exit(code)
