"""``slurmkit template``: list, show, render and submit the shipped sbatch templates.

A thin layer over :mod:`slurmkit.templating`; Jinja2 and tabulate load only when a
command renders or prints a table.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from slurmkit import stderr
from slurmkit.cli._exclude_options import no_exclude_option, state_option
from slurmkit.cli._options import dry_run_option, file_option, json_option
from slurmkit.cli._output import print_json, print_table, progress
from slurmkit.errors import UsageError

if TYPE_CHECKING:
    from slurmkit.templating import Rendered

_json_option = json_option()
_set_option = click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="A parameter value (repeatable); wins over --from-file and the site config.",
)
_from_file_option = file_option(
    "--from-file",
    "vars_file",
    metavar="VARS.toml",
    help="Parameter values from a TOML file of name = value pairs.",
)


@click.group("template")
def template_group() -> None:
    """Shipped sbatch templates: launchers, train wrapper, cron, node checks.

    Parameters have declared types and defaults (see `template show NAME`). Values come
    from, lowest first: the template, the site config ($SLURMKIT_CONFIG or
    ~/.config/slurmkit/config.toml, tables [defaults] and [template.NAME]), --from-file,
    --set.
    """


@template_group.command("list")
@_json_option
def list_command(as_json: bool) -> None:
    """List the templates: name, folder, whether it needs GPUs, what it is for."""
    from slurmkit.templating import discover

    templates = discover()
    if as_json:
        print_json(
            [
                {
                    "name": t.name,
                    "kind": t.kind,
                    "gpu": t.header.gpu,
                    "summary": t.header.summary,
                    "path": str(t.path),
                }
                for t in templates
            ]
        )
        return
    print_table(
        [(t.name, t.kind, "yes" if t.header.gpu else "no", t.header.summary) for t in templates],
        headers=["NAME", "FOLDER", "GPU", "SUMMARY"],
    )


@template_group.command("show")
@click.argument("name")
@_json_option
def show_command(name: str, as_json: bool) -> None:
    """Show a template's parameters: type, default, site default, help."""
    from slurmkit.templating import config, find

    template = find(name)
    header = template.header
    site = config.load().values_for(template.name)
    params = [
        {
            "name": p.name,
            "type": p.type.spec,
            "required": p.required,
            "default": None if p.required else p.default_text(),
            "site_default": site.get(p.name),
            "help": p.help,
        }
        for p in header.params.values()
    ]
    if as_json:
        print_json(
            {
                "name": template.name,
                "kind": template.kind,
                "path": str(template.path),
                "gpu": header.gpu,
                "summary": header.summary,
                "notes": list(header.notes),
                "params": params,
            }
        )
        return
    click.echo(f"{template.name}: {header.summary}")
    click.echo(f"file: {template.path}")
    click.echo(f"needs GPUs: {'yes' if header.gpu else 'no'}")
    for note in header.notes:
        click.echo(f"- {note}")
    click.echo("")
    with_site = any(p["site_default"] is not None for p in params)
    rows = [
        [
            p["name"],
            p["type"],
            "(required)" if p["required"] else p["default"],
            *([_site_text(p["site_default"])] if with_site else []),
            p["help"],
        ]
        for p in params
    ]
    headers = ["PARAMETER", "TYPE", "DEFAULT", *(["SITE"] if with_site else []), "HELP"]
    print_table(rows, headers=headers)


def _site_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def _excluded(no_exclude: bool, state: Path | None) -> str:
    """The exclude list's nodes to add to the job's --exclude ("" with --no-exclude)."""
    from slurmkit.faulty import excluded

    return excluded.current(state, no_exclude)


@template_group.command("render")
@click.argument("name")
@_set_option
@_from_file_option
@no_exclude_option
@state_option
@file_option(
    "-o",
    "--output",
    help="Write the script to FILE (atomically: a temp file renamed) instead of stdout.",
)
def render_command(
    name: str,
    assignments: tuple[str, ...],
    vars_file: Path | None,
    no_exclude: bool,
    state: Path | None,
    output: Path | None,
) -> None:
    """Render template NAME to stdout or a file.

    The nodes of the faulty-node exclude list (`slurmkit faulty excluded`) are added to
    the script's --exclude (one more #SBATCH line), unless --no-exclude.
    """
    from slurmkit.faulty.excluded import add_to_script
    from slurmkit.files import write_atomic

    listed = _excluded(no_exclude, state)
    rendered = _render(name, assignments, vars_file)
    text = add_to_script(rendered.text, listed)
    if output is None:
        click.echo(text, nl=False)
        return
    write_atomic(output, text)
    progress(f"slurmkit: wrote {output}")


@template_group.command("submit")
@click.argument("name")
@_set_option
@_from_file_option
@click.option(
    "--script-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("slurmkit-scripts"),
    show_default=True,
    help="Folder for a copy of the rendered script, named <template>-<date>-<time>-<id>.slurm "
    "(yours, writable by nobody else; created 0700). sbatch reads the script on stdin.",
)
@dry_run_option("Write the script and print the sbatch command (script on stdin); submit nothing.")
@no_exclude_option
@state_option
@_json_option
@click.argument("sbatch_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- SBATCH_ARGS...]")
def submit_command(
    name: str,
    assignments: tuple[str, ...],
    vars_file: Path | None,
    script_dir: Path,
    dry_run: bool,
    no_exclude: bool,
    state: Path | None,
    as_json: bool,
    sbatch_args: tuple[str, ...],
) -> None:
    """Render template NAME into --script-dir and submit it with sbatch; print the job id.

    Options after `--` go to sbatch (before the script), e.g.
    `slurmkit template submit torchrun --set nodes=4 -- --exclude=node-7`.
    The job log folder (parameter log_dir) is created when missing, relative to the
    current folder: with `-- --chdir=DIR`, give log_dir as an absolute path.
    The faulty-node exclude list's nodes join the job's --exclude (in the script, or in
    an --exclude given after `--`), unless --no-exclude.
    """
    from slurmkit.faulty.excluded import add_to_args, add_to_script, exclude_values
    from slurmkit.slurm.submit import prepare, send

    listed = _excluded(no_exclude, state)
    rendered = _render(name, assignments, vars_file)
    text = add_to_script(rendered.text, listed)
    if listed and exclude_values(sbatch_args):  # sbatch's own --exclude replaces the script's
        sbatch_args = tuple(add_to_args(sbatch_args, listed))
    log_dir = rendered.resolved.values.get("log_dir")
    if isinstance(log_dir, str) and log_dir:
        _make_dir(Path(log_dir), "log_dir")
    submission = prepare(text, script_dir, rendered.template.name, sbatch_args, "--script-dir")
    script, argv = submission.record, list(submission.argv)
    if dry_run:
        if as_json:
            print_json({"dry_run": True, "script": str(script), "argv": argv, "stdin": str(script)})
        else:
            click.echo(submission.shown)
        return
    job_id = send(submission)
    if as_json:
        print_json(
            {
                "dry_run": False,
                "job_id": job_id,
                "script": str(script),
                "argv": argv,
                "stdin": str(script),
            }
        )
    else:
        progress(f"slurmkit: submitted {script} (on sbatch's stdin)")
        click.echo(job_id)


def _make_dir(path: Path, what: str) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise UsageError(f"{what} {path} exists and is not a folder") from None
    except PermissionError:
        raise UsageError(f"{what} {path} cannot be created: permission denied") from None


def _render(name: str, assignments: tuple[str, ...], vars_file: Path | None) -> Rendered:
    """Resolve values from every source, warn about site defaults no template knows, render."""
    from slurmkit.templating import config, discover, render_template
    from slurmkit.templating.values import load_vars_file, parse_assignments

    overrides = parse_assignments(assignments)
    from_file = load_vars_file(vars_file) if vars_file is not None else None
    site = config.load()
    rendered = render_template(
        name,
        overrides=overrides,
        from_file=from_file,
        from_file_name=str(vars_file) if vars_file else "--from-file",
        site=site,
    )
    unused = rendered.resolved.unused_site_defaults
    if unused:
        known = {p for t in discover() for p in t.header.params}
        for key in unused:
            if key not in known:
                stderr.say(
                    f"warning: config file {site.path}: [defaults] {key} is not a "
                    "parameter of any template"
                )
    return rendered
