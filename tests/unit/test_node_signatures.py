"""Node lists travel as node sets, never as text: checked over every public signature.

The rule (issue 30, item 2): a library function that takes nodes takes a ``HostSet`` or a
sequence of names; the text a user typed is parsed once, at the edge (the CLI, a config
file). A string parameter holding nodes invites the old pattern, ``str(HostSet)`` passed
down and parsed again by each layer (undrain parsed its ``--nodes`` three times).

Precisely: in every module of ``slurmkit`` outside ``slurmkit.cli`` (the edge), every
public function, and every public method of a public class, defined in that module
(a name without a leading underscore) fails when a parameter whose name is in
:data:`NODE_PARAMS` is annotated ``str``, ``str | None``, or any union holding ``str``
(an alias such as ``Names = str | Sequence[str]`` counts: the annotation is resolved).
A parameter named for one node (``node``, ``name``) may be a ``str``. The parsers that turn
text into node sets are the edge with the CLI: ``slurmkit.hostlist`` is not walked, and
``slurmkit.nodesel`` takes the user's text as ``include`` and ``exclude`` (names not in the
set, by design). A dataclass's generated ``__init__`` is walked only for the options a caller
passes down (``UndrainOptions``, any ``...Options``): a record's field (``Job.nodelist``) holds
Slurm's own text as read, not a list a caller passes down.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from collections.abc import Iterator
from types import ModuleType, UnionType

import slurmkit

NODE_PARAMS = frozenset(
    {
        "nodes",
        "nodelist",
        "node_list",
        "node_names",
        "hosts",
        "hostlist",
        "host_list",
        "limit",
        "targets",
    }
)
# The parsers: text in, node sets out (the edge, with the CLI).
EDGE = ("slurmkit.cli", "slurmkit.hostlist", "slurmkit.__main__")
# Modules that still take a node list as text: none left (issue 30). A module added here
# must say why it is an edge.
KNOWN: frozenset[str] = frozenset()


def _modules() -> Iterator[ModuleType]:
    for info in pkgutil.walk_packages(slurmkit.__path__, "slurmkit."):
        if info.name.startswith(EDGE) or "pyslurm" in info.name:
            continue  # (importing pyslurm without a slurm.conf ends the process: not probed)
        try:
            yield importlib.import_module(info.name)
        except ImportError:  # an optional extra (pyslurm) that is not installed
            continue


def _functions(module: ModuleType) -> Iterator[tuple[str, object]]:
    for name, value in vars(module).items():
        if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(value):
            yield name, value
        elif inspect.isclass(value):
            for attr, member in vars(value).items():
                if attr.startswith("_") and attr != "__init__":
                    continue
                function = member
                if isinstance(member, (classmethod, staticmethod)):
                    function = member.__func__
                if inspect.isfunction(function) and not (
                    _generated(function) and not name.endswith("Options")
                ):
                    yield f"{name}.{attr}", function


def _generated(function: object) -> bool:
    """A dataclass's own ``__init__``: a record's field holds Slurm's text as Slurm printed it
    (``Job.nodelist``); it is data read, not a node list a caller passes down."""
    return getattr(function, "__qualname__", "").endswith("__init__") and (
        "<string>" in (getattr(getattr(function, "__code__", None), "co_filename", "") or "")
    )


def _holds_str(annotation: object) -> bool:
    if annotation is str:
        return True
    if isinstance(annotation, UnionType) or typing.get_origin(annotation) is typing.Union:
        return any(_holds_str(a) for a in typing.get_args(annotation))
    return False


def _annotation_holds_str(function: object, parameter: str, module: ModuleType) -> bool:
    """The parameter's annotation resolved in its module; a name that only exists for the type
    checker (TYPE_CHECKING) is read from the text, each word looked up in the module."""
    try:
        hints = typing.get_type_hints(function)
        return _holds_str(hints.get(parameter))
    except Exception:  # an annotation naming a TYPE_CHECKING-only import
        text = str(inspect.signature(function).parameters[parameter].annotation)  # type: ignore[arg-type]
        return any(
            member == "str" or _holds_str(getattr(module, member, None))
            for member in _top_level_members(text)
        )


def _top_level_members(text: str) -> list[str]:
    """``str | Sequence[str] | None`` -> ["str", "Sequence[str]", "None"]: the union's members,
    not the words inside a generic (``Sequence[str]`` holds names, not text)."""
    members, depth, current = [], 0, ""
    for char in text:
        depth += (char == "[") - (char == "]")
        if char == "|" and depth == 0:
            members.append(current.strip())
            current = ""
        else:
            current += char
    return [*members, current.strip()]


def offenders() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for module in _modules():
        for qualname, function in _functions(module):
            params = inspect.signature(function).parameters  # type: ignore[arg-type]
            for name in params:
                if name in NODE_PARAMS and _annotation_holds_str(function, name, module):
                    found.setdefault(module.__name__, []).append(f"{qualname}({name})")
    return found


def test_no_library_signature_takes_a_node_list_as_text() -> None:
    found = {m: f for m, f in offenders().items() if m not in KNOWN}
    assert found == {}, "parse node lists at the edge; take a HostSet or a sequence of names"


def test_the_rule_catches_a_text_node_list() -> None:
    """The check itself must see ``str``, ``str | None`` and an alias holding ``str``."""
    module = ModuleType("probe")
    exec(  # a throwaway module to probe the rule
        "from __future__ import annotations\n"
        "from collections.abc import Sequence\n"
        "Names = str | Sequence[str]\n"
        "def a(nodes: str) -> None: ...\n"
        "def b(limit: str | None = None) -> None: ...\n"
        "def c(hosts: Names) -> None: ...\n"
        "def d(nodes: Sequence[str]) -> None: ...\n",
        module.__dict__,
    )
    verdicts = {n: _annotation_holds_str(getattr(module, n), p, module) for n, p in
                [("a", "nodes"), ("b", "limit"), ("c", "hosts"), ("d", "nodes")]}  # fmt: skip
    assert verdicts == {"a": True, "b": True, "c": True, "d": False}
