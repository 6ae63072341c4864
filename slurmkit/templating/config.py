"""Site defaults for template parameters, read from the config files by :mod:`slurmkit.config`.

The files save everyone from typing the same partition and account on every render::

    [defaults]              # any template that declares these parameters gets them
    partition = "gpu"
    account = "proj42"
    time = "2:00:00"

    [template.torchrun]     # only for one template; wins over [defaults]
    nodes = 4

The layers are those of every command's defaults: ``/etc/slurmkit/config.toml``, then
``$SLURMKIT_CONFIG`` or ``~/.config/slurmkit/config.toml`` (the later file wins per key).
``--from-file`` and ``--set`` win over both. A file named by ``$SLURMKIT_CONFIG`` must
exist (the user asked for it); the default paths may be absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slurmkit import config as _config
from slurmkit.config import ENV_VAR, default_path, load_toml
from slurmkit.errors import UsageError

__all__ = ["ENV_VAR", "SiteConfig", "default_path", "load", "load_toml"]


@dataclass(frozen=True)
class SiteConfig:
    path: Path | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    per_template: dict[str, dict[str, Any]] = field(default_factory=dict)

    def values_for(self, template: str) -> dict[str, Any]:
        """``[defaults]`` overlaid with ``[template.NAME]``."""
        return {**self.defaults, **self.per_template.get(template, {})}


def load(path: Path | None = None, environ: Mapping[str, str] | None = None) -> SiteConfig:
    """The template sections of ``path`` if given, else of every config file that applies."""
    if path is not None:
        return _from_data(_config.read(path).data, path)
    layered = _config.load(environ)
    if not layered.files:
        return SiteConfig()
    for config_file in layered.files:
        _from_data(config_file.data, config_file.path)  # each file's shape, named in errors
    named = [f.path for f in layered.files if "defaults" in f.data or "template" in f.data]
    chosen = named[-1] if named else layered.files[-1].path
    return _from_data(layered.values, chosen)


def _from_data(data: dict[str, Any], path: Path) -> SiteConfig:
    defaults = data.get("defaults", {})
    per_template = data.get("template", {})
    if not isinstance(defaults, dict):
        raise UsageError(f"config file {path}: [defaults] must be a table")
    if not isinstance(per_template, dict) or not all(
        isinstance(v, dict) for v in per_template.values()
    ):
        raise UsageError(f"config file {path}: [template.NAME] entries must be tables")
    return SiteConfig(path=path, defaults=dict(defaults), per_template=dict(per_template))
