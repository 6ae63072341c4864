"""The one place a template declares itself: a Jinja comment block at the top of the file.

Jinja renders a ``{# ... #}`` comment to nothing, so the declaration costs the output
nothing, lives beside the code that uses it, and is read by both the renderer (types,
defaults) and ``template show`` (help). The format, one item per line::

    {#- slurmkit-template
    summary: Multi-node torchrun launcher, one torchrun per node
    gpu: yes
    note: free text shown by `template show` (any number of note lines)
    param nodes: int>=1 = 2 | Number of nodes
    param script: str = train.py | Training script, relative to the job's working directory
    param tag: str required | A value with no default: rendering without it is an error
    -#}

``param NAME: TYPE = DEFAULT | HELP``: the default runs from ``=`` to the first `` | ``
(space, bar, space), so a default cannot contain that sequence; an empty default is
written ``= |``. Types are those of :func:`slurmkit.templating.param_types.parse_type`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from slurmkit.errors import TemplateError
from slurmkit.templating.param_types import BadValue, ParamType, parse_type

_BLOCK = re.compile(r"\A\{#-?[ \t]*slurmkit-template[ \t]*\n(?P<body>.*?)\n[ \t]*-?#\}", re.S)
_PARAM = re.compile(
    r"param\s+(?P<name>[a-z][a-z0-9_]*)\s*:\s*(?P<type>\S+)\s+"
    r"(?:=(?P<default>.*?)|(?P<required>required))\s+\|\s+(?P<help>.*)"
)
# Names the renderer puts in every template's context itself.
RESERVED = frozenset({"slurmkit"})
_FIELD = re.compile(r"(?P<key>summary|gpu|note)\s*:\s*(?P<value>.*)")


@dataclass(frozen=True)
class Param:
    """One declared parameter: its checked default (None when required) and one-line help."""

    name: str
    type: ParamType
    default: object
    required: bool
    help: str

    def default_text(self) -> str:
        return "" if self.required else self.type.render_default(self.default)


@dataclass(frozen=True)
class TemplateHeader:
    """A template's declaration block: summary, whether it needs GPUs, notes, parameters."""

    summary: str
    gpu: bool
    notes: tuple[str, ...] = ()
    params: dict[str, Param] = field(default_factory=dict)


def parse_header(source: str, where: str) -> TemplateHeader:
    """Read the declaration block of a template's source; ``where`` names it in errors."""
    match = _BLOCK.match(source)
    if not match:
        raise TemplateError(f"{where}: no '{{#- slurmkit-template ... #}}' block at the top")
    summary, gpu, notes = "", None, []
    params: dict[str, Param] = {}
    for lineno, raw in enumerate(match.group("body").splitlines(), start=2):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("param "):
            param = _parse_param(line, f"{where}:{lineno}")
            if param.name in params:
                raise TemplateError(f"{where}:{lineno}: parameter {param.name} declared twice")
            params[param.name] = param
            continue
        field_match = _FIELD.fullmatch(line)
        if not field_match:
            raise TemplateError(f"{where}:{lineno}: cannot read header line {line!r}")
        key, value = field_match.group("key"), field_match.group("value").strip()
        if key == "summary":
            summary = value
        elif key == "note":
            notes.append(value)
        else:
            gpu = _yes_no(value, f"{where}:{lineno}")
    if not summary or gpu is None:
        raise TemplateError(f"{where}: the header needs 'summary:' and 'gpu:' lines")
    return TemplateHeader(summary=summary, gpu=gpu, notes=tuple(notes), params=params)


def _parse_param(line: str, where: str) -> Param:
    match = _PARAM.fullmatch(line)
    if not match:
        raise TemplateError(f"{where}: cannot read {line!r} (param NAME: TYPE = DEFAULT | HELP)")
    name = match.group("name")
    if name in RESERVED:
        raise TemplateError(f"{where}: {name!r} is reserved for the renderer")
    try:
        ptype = parse_type(match.group("type"))
    except ValueError as exc:
        raise TemplateError(f"{where}: parameter {name}: {exc}") from None
    if match.group("required"):
        return Param(name, ptype, None, True, match.group("help").strip())
    try:
        default = ptype.parse(match.group("default").strip())
    except BadValue as exc:
        raise TemplateError(f"{where}: parameter {name}: bad default: {exc}") from None
    return Param(name, ptype, default, False, match.group("help").strip())


def _yes_no(value: str, where: str) -> bool:
    if value in ("yes", "true"):
        return True
    if value in ("no", "false"):
        return False
    raise TemplateError(f"{where}: 'gpu:' must be yes or no, not {value!r}")
