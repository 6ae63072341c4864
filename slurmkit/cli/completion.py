"""``slurmkit completion bash|zsh|fish``, and which values each option completes.

Click completes subcommand and option names by itself; values come from one table here,
keyed by the parameter's name (``nodelist``, ``exclude``, ``jobid``, ``partition``, ...),
so that no command module has to declare a completer: when the shell asks, the parameter
being completed is looked up in :data:`COMPLETERS`. Only the command on the line is ever
imported, so a TAB costs one command module and at most one Slurm call (about 1 s at most,
nothing when the controller is down: :mod:`slurmkit.slurm.quick`).

Bash splits words at ``:`` (``COMP_WORDBREAKS``), which would cut ``@partition:gpu`` in
three; the bash class joins the pieces back and answers with the part after the last
``:``, the part bash replaces.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.shell_completion import (
    BashComplete,
    CompletionItem,
    FishComplete,
    ShellComplete,
    ZshComplete,
    add_completion_class,
    get_completion_class,
)

from slurmkit import completion as values
from slurmkit.errors import SlurmkitError

Completer = Callable[[click.Context, click.Parameter, str], list[CompletionItem]]
SHELLS = ("bash", "zsh", "fish")


def _items(found: list[str]) -> list[CompletionItem]:
    return [CompletionItem(value) for value in found]


def _simple(lookup: Callable[[str], list[str]]) -> Completer:
    return lambda _ctx, _param, incomplete: _items(lookup(incomplete))


def _group_of(ctx: click.Context) -> str | None:
    return ctx.parent.info_name if ctx.parent is not None else None


def _param_dir(ctx: click.Context, *names: str) -> Path | str | None:
    for name in names:
        if ctx.params.get(name):
            return ctx.params[name]
    return None


def _name(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """NAME is a template in ``template ...`` and a train in ``train ...``."""
    group = _group_of(ctx)
    if group == "template":
        return _items(values.templates(incomplete))
    if group == "train":
        return _items(values.trains(incomplete, _param_dir(ctx, "directory")))
    return []


def _periods(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    if _group_of(ctx) != "cron":
        return []
    return _items(values.cron_periods(incomplete, _param_dir(ctx, "cron_dir")))


_hostlist = _simple(values.hostlist)
_jobs = _simple(values.job_ids)

COMPLETERS: dict[str, Completer] = {
    # node lists: -w/--nodelist, -x/--exclude, NODES arguments, nodes expand|fold|... lists
    "nodelist": _hostlist,
    "exclude": _hostlist,
    "nodes": _hostlist,
    "node": _hostlist,
    "hostlists": _hostlist,
    "names": _hostlist,
    # jobs
    "jobid": _jobs,
    "job": _jobs,
    "job_id": _jobs,
    "after": _jobs,
    # partitions, templates, lint rules
    "partition": _simple(values.partitions),
    "template": _simple(values.templates),
    "explain": _simple(values.lint_rules),
    "rule": _simple(values.lint_rules),
    # train names in --dir, cron periods in --dir (the --dir options complete folders: click)
    "name": _name,
    "periods": _periods,
}

_NOT_A_LIST = (click.types.IntParamType, click.types.FloatParamType, click.types.BoolParamType)


def completer_for(param: click.Parameter) -> Completer | None:
    """The table's completer for ``param``; none for a count (``-N/--nodes 4``) or a flag."""
    if param.name is None or isinstance(param.type, _NOT_A_LIST):
        return None
    if getattr(param, "_custom_shell_complete", None) is not None:
        return None  # the option declared its own
    return COMPLETERS.get(param.name)


class _ClusterValues(ShellComplete):
    """Looks the parameter being completed up in :data:`COMPLETERS`; never raises."""

    def get_completions(self, args: list[str], incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import _resolve_context, _resolve_incomplete

        try:
            ctx = _resolve_context(self.cli, self.ctx_args, self.prog_name, args)
            obj, incomplete = _resolve_incomplete(ctx, args, incomplete)
            completer = completer_for(obj) if isinstance(obj, click.Parameter) else None
            if completer is not None:
                return completer(ctx, obj, incomplete)  # type: ignore[arg-type]
            return obj.shell_complete(ctx, incomplete)
        except (SlurmkitError, click.ClickException, click.exceptions.Exit, OSError):
            return []


class SlurmkitBash(_ClusterValues, BashComplete):
    _cut = ""

    def get_completion_args(self) -> tuple[list[str], str]:
        args, incomplete = super().get_completion_args()
        words = _join_breaks([*args, incomplete])
        incomplete = words.pop()
        value = incomplete
        if value.startswith("-") and "=" in value:
            value = value.partition("=")[2]
        self._cut = value.rpartition(":")[0] + ":" if ":" in value else ""
        return words, incomplete

    def format_completion(self, item: CompletionItem) -> str:
        value = item.value
        if self._cut and isinstance(value, str) and value.startswith(self._cut):
            item = CompletionItem(value[len(self._cut) :], type=item.type, help=item.help)
        return super().format_completion(item)


def _join_breaks(words: list[str]) -> list[str]:
    """Undo bash's split at ``:`` (and ``=`` after an option): ``@partition : gpu`` -> one word."""
    out: list[str] = []
    glue = False
    for word in words:
        if (word == ":" or (word == "=" and out and out[-1].startswith("-"))) and out:
            out[-1] += word
            glue = True
            continue
        if glue and out:
            out[-1] += word
        else:
            out.append(word)
        glue = False
    return out


class SlurmkitZsh(_ClusterValues, ZshComplete):
    pass


class SlurmkitFish(_ClusterValues, FishComplete):
    pass


def register() -> None:
    """Make click's completion machinery use the classes above (before ``main`` runs)."""
    add_completion_class(SlurmkitBash, "bash")
    add_completion_class(SlurmkitZsh, "zsh")
    add_completion_class(SlurmkitFish, "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion_command(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script: eval "$(slurmkit completion bash)".

    Install it once, in ~/.bashrc: eval "$(slurmkit completion bash)" (zsh: in ~/.zshrc with
    zsh; fish: slurmkit completion fish > ~/.config/fish/completions/slurmkit.fish).
    Node names and groups, job ids (yours first), partitions, template names, lint rules,
    train names and cron periods then complete; each cluster lookup is one Slurm call that
    gives up after about 1 s.
    """
    register()
    cls: Any = get_completion_class(shell)
    root = ctx.find_root()
    script = cls(root.command, {}, "slurmkit", "_SLURMKIT_COMPLETE").source()
    click.echo(script, nl=not script.endswith("\n"))
