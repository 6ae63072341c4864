"""Site defaults for template parameters: $SLURMKIT_CONFIG, else ~/.config/slurmkit/config.toml.

The file saves everyone from typing the same partition and account on every render::

    [defaults]              # any template that declares these parameters gets them
    partition = "gpu"
    account = "proj42"
    time = "2:00:00"

    [template.torchrun]     # only for one template; wins over [defaults]
    nodes = 4

``--from-file`` and ``--set`` win over both. A file named by ``$SLURMKIT_CONFIG`` must
exist (the user asked for it); the default path may be absent.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slurmkit.errors import EnvironmentProblem, UsageError

ENV_VAR = "SLURMKIT_CONFIG"


@dataclass(frozen=True)
class SiteConfig:
    path: Path | None = None
    defaults: dict[str, Any] = field(default_factory=dict)
    per_template: dict[str, dict[str, Any]] = field(default_factory=dict)

    def values_for(self, template: str) -> dict[str, Any]:
        """``[defaults]`` overlaid with ``[template.NAME]``."""
        return {**self.defaults, **self.per_template.get(template, {})}


def default_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "slurmkit" / "config.toml"


def load_toml(path: Path, what: str) -> dict[str, Any]:
    """Parse a TOML file into a dict; any fault is one usage-error line naming the file."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[import-not-found,no-redef]
        except ModuleNotFoundError:
            raise EnvironmentProblem(
                f"reading {what} needs Python 3.11+ or the 'tomli' package"
            ) from None
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise UsageError(f"{what} {path} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path} is a directory") from None
    except PermissionError:
        raise UsageError(f"{what} {path} is not readable") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{what} {path} is not valid TOML: {exc}") from None


def load(path: Path | None = None, environ: Mapping[str, str] | None = None) -> SiteConfig:
    """The site config: ``path`` if given, else ``$SLURMKIT_CONFIG``, else the default path."""
    env = os.environ if environ is None else environ
    explicit = path is not None or bool(env.get(ENV_VAR))
    chosen = path or (Path(env[ENV_VAR]) if env.get(ENV_VAR) else default_path())
    if not explicit and not chosen.exists():
        return SiteConfig()
    data = load_toml(chosen, "config file")
    return _from_data(data, chosen)


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
