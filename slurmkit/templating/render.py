"""Turn a template and checked values into a job script, with Jinja2 (imported here, lazily).

``StrictUndefined`` makes a name the template uses but nobody defined an error that
names it, instead of an empty string in the middle of an ``srun`` line. Every Jinja
failure (syntax, undefined name, missing include) becomes one
:class:`~slurmkit.errors.TemplateError` line with the template and line number.

Filters the templates use for anything that reaches the shell:

``shquote``  one shell word (``shlex.quote``); sbatch reads ``#SBATCH`` lines with the
             same quoting rules, so it is right there too.
``shjoin``   a list of words, each quoted.
``seconds``  a duration as whole seconds.
"""

from __future__ import annotations

import shlex
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from slurmkit import __version__
from slurmkit.errors import TemplateError
from slurmkit.templating.catalog import Template, search_path
from slurmkit.templating.param_types import Duration


class _FilterError(Exception):
    """A filter given a value of the wrong shape: a bug in the template, reported as such."""


def shquote(value: object) -> str:
    if isinstance(value, (list, tuple, dict, set)):
        raise _FilterError(f"shquote got a {type(value).__name__}: use shjoin for lists")
    if isinstance(value, bool):
        value = "true" if value else "false"
    return shlex.quote(str(value))


def shjoin(value: object) -> str:
    if not isinstance(value, (list, tuple)):
        raise _FilterError(f"shjoin needs a list, got {type(value).__name__}")
    return " ".join(shlex.quote(str(item)) for item in value)


def seconds(value: object) -> int:
    if not isinstance(value, Duration):
        raise _FilterError(f"seconds needs a duration, got {type(value).__name__}")
    return value.seconds


def _environment(folders: Sequence[Path]) -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(f) for f in folders]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(shquote=shquote, shjoin=shjoin, seconds=seconds)
    return env


def render(
    template: Template,
    values: Mapping[str, Any],
    dirs: Sequence[tuple[str, Path]] | None = None,
) -> str:
    """The job script for ``values`` (already resolved and checked)."""
    import jinja2

    folders = [template.path.parent, *[f for f in search_path(dirs) if f != template.path.parent]]
    env = _environment(folders)
    context = {
        **values,
        "slurmkit": {"template": template.name, "version": __version__},
    }
    try:
        text = env.get_template(template.path.name).render(context)
    except jinja2.TemplateSyntaxError as exc:
        line = f" line {exc.lineno}" if exc.lineno else ""
        source = exc.filename or exc.name
        where = Path(source).name if source else template.path.name
        raise TemplateError(f"template {template.name}: {where}{line}: {exc.message}") from None
    except jinja2.TemplateNotFound as exc:
        raise TemplateError(
            f"template {template.name}: included file {exc.name!r} not found"
        ) from None
    except (jinja2.TemplateError, _FilterError) as exc:
        raise TemplateError(f"template {template.name}{_line_of(exc)}: {exc}") from None
    if not text.startswith("#!"):
        raise TemplateError(f"template {template.name}: output does not start with a #! line")
    return text if text.endswith("\n") else text + "\n"


def _line_of(exc: BaseException) -> str:
    """Jinja rewrites tracebacks to point into the template; report the innermost such frame."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(".j2")]
    if not frames:
        return ""
    last = frames[-1]
    return f": {Path(last.filename).name} line {last.lineno}"
