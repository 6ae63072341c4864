"""The shipped sbatch templates as a library: find them, resolve their parameters, render them.

Other commands (``cpus check``, ``faulty scan``) render templates through
:func:`render_template` exactly like ``slurmkit template render`` does, so a fix in a
template reaches every user of it. Jinja2 is imported only when something is rendered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurmkit.templating.catalog import Template, discover, find
from slurmkit.templating.config import SiteConfig
from slurmkit.templating.header import Param, TemplateHeader
from slurmkit.templating.values import Resolved, resolve

__all__ = [
    "Param",
    "Rendered",
    "Resolved",
    "SiteConfig",
    "Template",
    "TemplateHeader",
    "discover",
    "find",
    "render_template",
]


@dataclass(frozen=True)
class Rendered:
    template: Template
    resolved: Resolved
    text: str


def render_template(
    name: str,
    *,
    overrides: Mapping[str, Any] | None = None,
    from_file: Mapping[str, Any] | None = None,
    from_file_name: str = "--from-file",
    site: SiteConfig | None = None,
    dirs: Sequence[tuple[str, Path]] | None = None,
) -> Rendered:
    """Render template ``name``; ``site`` None means no site config (callers load it if wanted)."""
    from slurmkit.templating.render import render

    template = find(name, dirs)
    resolved = resolve(
        template,
        site=site,
        from_file=from_file,
        from_file_name=from_file_name,
        overrides=overrides,
    )
    return Rendered(
        template=template, resolved=resolved, text=render(template, resolved.values, dirs)
    )
