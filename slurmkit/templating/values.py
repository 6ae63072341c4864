"""Which value each parameter gets, and from where: default < site config < --from-file < --set.

Every value, whatever its source, is checked against the declared type here, so a
template only ever sees checked values and an error always names the parameter, the
expected type and the source that gave the bad value.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slurmkit.errors import UsageError
from slurmkit.templating.catalog import Template
from slurmkit.templating.config import SiteConfig, load_toml
from slurmkit.templating.param_types import BadValue


@dataclass(frozen=True)
class Resolved:
    """Checked values for every parameter, where each came from, and site keys not used."""

    values: dict[str, Any]
    sources: dict[str, str]
    unused_site_defaults: list[str] = field(default_factory=list)


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """``["nodes=2", "script=a b.py"]`` -> dict; the value is everything after the first ``=``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE")
        out[key] = value
    return out


def load_vars_file(path: Path) -> dict[str, Any]:
    """A ``vars.toml`` of top-level ``name = value`` pairs."""
    data = load_toml(path, "vars file")
    tables = [key for key, value in data.items() if isinstance(value, dict)]
    if tables:
        raise UsageError(
            f"vars file {path}: expected name = value pairs, found table [{tables[0]}]"
        )
    return data


def resolve(
    template: Template,
    *,
    site: SiteConfig | None = None,
    from_file: Mapping[str, Any] | None = None,
    from_file_name: str = "--from-file",
    overrides: Mapping[str, Any] | None = None,
) -> Resolved:
    """Layer the sources over the declared defaults and check every value."""
    params = template.header.params
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for name, param in params.items():
        if not param.required:
            values[name] = param.default
            sources[name] = "default"
    unused: list[str] = []
    if site is not None:
        shared = {k: v for k, v in site.defaults.items() if k in params}
        unused = sorted(k for k in site.defaults if k not in params)
        _layer(template, values, sources, shared, f"config file {site.path}")
        own = site.per_template.get(template.name, {})
        _layer(
            template, values, sources, own, f"config file {site.path} [template.{template.name}]"
        )
    _layer(template, values, sources, from_file or {}, from_file_name)
    _layer(template, values, sources, overrides or {}, "--set")
    missing = [name for name in params if name not in values]
    if missing:
        example = " ".join(f"--set {name}=..." for name in missing)
        raise UsageError(
            f"template {template.name}: missing required parameter"
            f"{'s' if len(missing) > 1 else ''} {', '.join(missing)} ({example})"
        )
    return Resolved(values=values, sources=sources, unused_site_defaults=unused)


def _layer(
    template: Template,
    values: dict[str, Any],
    sources: dict[str, str],
    given: Mapping[str, Any],
    source: str,
) -> None:
    params = template.header.params
    for name, raw in given.items():
        if name not in params:
            raise UsageError(_unknown(template, name, source))
        try:
            values[name] = params[name].type.parse(raw)
        except BadValue as exc:
            raise UsageError(
                f"template {template.name}: parameter {name} ({source}): {exc}"
            ) from None
        sources[name] = source


def _unknown(template: Template, name: str, source: str) -> str:
    known: Sequence[str] = list(template.header.params)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]}?" if close else f" (parameters: {', '.join(known)})"
    return f"template {template.name} has no parameter {name!r} ({source}){hint}"
