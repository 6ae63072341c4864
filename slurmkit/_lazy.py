"""Names a package loads on first use (PEP 562), so importing the package stays cheap.

``slurmkit nodes expand`` pays only for the hostlist parser and ``nodes drained`` only
for undrain's reason regex; the rest of each package is imported when a name of it
is first used. One ``__getattr__`` for every such package, so they cannot drift.
Standard library only: :mod:`slurmkit.hostlist` stays free of slurmkit's other parts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module


def attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """The module ``__getattr__`` of ``package``: each name of ``homes`` from its submodule.

    A loaded name is stored in the package, so the hook runs once per name.
    """
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    return __getattr__
