"""Which templates exist: ``templates/*.slurm.j2`` and ``cron/*.slurm.j2``, installed or not.

A template's name is its file name without ``.slurm.j2``; names are unique across the
two folders. Files in those folders that do not end in ``.slurm.j2`` (``_common.j2``,
README) are shared pieces or documentation, never listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from slurmkit.errors import TemplateError, UsageError
from slurmkit.files import read_text_bounded
from slurmkit.resources import data_dir
from slurmkit.templating.header import TemplateHeader, parse_header

SUFFIX = ".slurm.j2"
KINDS = ("templates", "cron")


@dataclass(frozen=True)
class Template:
    """A template file; its header is read on first use."""

    name: str
    kind: str
    path: Path

    @cached_property
    def source(self) -> str:
        return read_text_bounded(self.path, what="template", follow_links=True, error=TemplateError)

    @cached_property
    def header(self) -> TemplateHeader:
        return parse_header(self.source, self.path.name)


def default_dirs() -> list[tuple[str, Path]]:
    """The shipped folders, as (kind, path)."""
    return [(kind, data_dir(kind)) for kind in KINDS]


def discover(dirs: Sequence[tuple[str, Path]] | None = None) -> list[Template]:
    """Every template in ``dirs`` (default: the shipped ones), sorted by name."""
    found: dict[str, Template] = {}
    for kind, folder in dirs if dirs is not None else default_dirs():
        for path in sorted(folder.glob(f"*{SUFFIX}")):
            name = path.name[: -len(SUFFIX)]
            if name in found:
                raise TemplateError(f"template {name} exists twice: {found[name].path} and {path}")
            found[name] = Template(name=name, kind=kind, path=path)
    return sorted(found.values(), key=lambda t: t.name)


def find(name: str, dirs: Sequence[tuple[str, Path]] | None = None) -> Template:
    """The template called ``name``; an unknown name is a usage error listing the known ones."""
    templates = discover(dirs)
    for template in templates:
        if template.name == name:
            return template
    known = ", ".join(t.name for t in templates) or "none"
    raise UsageError(f"unknown template {name!r} (known: {known})")


def search_path(dirs: Sequence[tuple[str, Path]] | None = None) -> list[Path]:
    """Folders Jinja looks in for ``{% include %}``: a cron template may use templates/ pieces."""
    return [folder for _, folder in (dirs if dirs is not None else default_dirs())]
