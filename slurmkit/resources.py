"""Where the shipped ``templates/`` and ``cron/`` folders are, installed or not.

In a wheel they live inside the package (``slurmkit/_data/``, put there by the
build); in a source checkout or editable install they are the repo's
top-level folders. Commands ask here instead of guessing paths.
"""

from __future__ import annotations

from pathlib import Path

from slurmkit.errors import EnvironmentProblem

_PACKAGE = Path(__file__).resolve().parent


def data_dir(kind: str) -> Path:
    """``kind`` is ``"templates"`` or ``"cron"``."""
    if kind not in ("templates", "cron"):
        raise ValueError(f"unknown data folder {kind!r}")
    for candidate in (_PACKAGE / "_data" / kind, _PACKAGE.parent / kind):
        if candidate.is_dir():
            return candidate
    raise EnvironmentProblem(f"slurmkit's {kind}/ folder is missing: the installation is broken")
