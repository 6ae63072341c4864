"""``#SBATCH`` lines read the way sbatch reads them, and the job they request.

sbatch (``_opt_batch_script`` in its opt.c) reads a line as a directive only when
it starts with ``#SBATCH`` in column 0; it splits the rest into words honouring
quotes and backslash escapes, and an unquoted ``#`` ends the line (a comment). It
stops at the first line that is neither blank nor a comment: every ``#SBATCH``
after the first command is silently ignored. Lines are never joined: a trailing
backslash does not continue a directive. Later options win over earlier ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from slurmkit.errors import SlurmParseError
from slurmkit.grammar.gres import gpu_count
from slurmkit.sbatch.options import Option, parse_options
from slurmkit.slurm.records import SlurmVersion

MAGIC = "#SBATCH"
AFTER_COMMAND = "after-command"
INDENTED = "indented"
WRONG_CASE = "wrong-case"


@dataclass(unsafe_hash=True)
class Directive:
    """One ``#SBATCH`` line; ``ignored`` says why sbatch does not read it (None: it does).

    Read-only by convention, not frozen (as :class:`~slurmkit.sbatch.options.Option`).
    """

    line: int
    text: str
    options: tuple[Option, ...]
    ignored: str | None = None
    continued: bool = False


@dataclass(frozen=True)
class Setting:
    value: str | None
    line: int
    written: str


@dataclass
class JobRequest:
    """What the directives sbatch reads ask for; ``settings`` keeps the last of each option."""

    settings: dict[str, Setting] = field(default_factory=dict)

    def get(self, name: str) -> Setting | None:
        return self.settings.get(name)

    def value(self, name: str) -> str | None:
        setting = self.settings.get(name)
        return setting.value if setting else None

    def integer(self, name: str) -> int | None:
        return to_int(self.value(name))

    @property
    def nodes(self) -> tuple[int, int] | None:
        """``--nodes`` as (min, max); ``2`` is (2, 2), ``2-4`` is (2, 4)."""
        return node_range(self.value("nodes"))

    @property
    def cpus_per_task(self) -> int | None:
        return self.integer("cpus-per-task")

    @property
    def whole_nodes(self) -> bool:
        """A plain ``--exclusive`` (not ``=user``, ``=mcs`` or ``=topo``): the job holds every
        CPU and GRES of its nodes (sbatch(1), 22.05.8 and 25.11.7; slurmctld's
        ``gres_ctld_job_select_whole_node``), so a request is the least a node gives."""
        setting = self.settings.get("exclusive")
        if setting is None:
            return False
        return (setting.value or "").strip().strip("\"'").lower() in ("", "exclusive")

    @property
    def tasks_per_node(self) -> int | None:
        """``--ntasks-per-node``, else ``--ntasks`` spread over the (minimum) node count."""
        per_node = self.integer("ntasks-per-node")
        if per_node is not None:
            return per_node
        ntasks = self.integer("ntasks")
        if ntasks is None:
            return None
        nodes = self.nodes
        low = nodes[0] if nodes else 1
        return -(-ntasks // max(low, 1))

    @property
    def gpus_per_node(self) -> tuple[int, Setting] | None:
        """GPUs per node from ``--gres=gpu[:type]:N``, ``--gpus-per-node`` or ``--gpus``/nodes."""
        gres = self.get("gres")
        if gres is not None and gres.value is not None:
            count = gres_gpus(gres.value)
            if count is not None:
                return count, gres
        per_node = self.get("gpus-per-node")
        if per_node is not None and per_node.value is not None:
            count = to_int(per_node.value.rsplit(":", 1)[-1])
            if count is not None:
                return count, per_node
        total = self.get("gpus")
        nodes = self.nodes
        if total is not None and total.value is not None and nodes and nodes[0] == nodes[1]:
            count = to_int(total.value.rsplit(":", 1)[-1])
            if count is not None and count % nodes[0] == 0:
                return count // nodes[0], total
        return None


def to_int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def node_range(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+))?\s*", text)
    if not match:
        return None
    low = int(match.group(1))
    return low, int(match.group(2) or low)


def gres_gpus(text: str) -> int | None:
    """GPUs per node in a ``--gres`` request, None without any GPU or when it does not parse.

    The count is :func:`slurmkit.grammar.gres.gpu_count`'s (``gres/gpu:h100=4`` is 4, as
    everywhere in slurmkit); a request it cannot read is no GPU count here, because a
    script's typo is a finding of its own, never a crash of lint.
    """
    try:
        return gpu_count(text)
    except SlurmParseError:
        return None


# %j, %3j, %10A: Slurm reads a zero-padding width between % and the letter (22.05's fname.c,
# 25.11's expand_stdio_fields in print_fields.c); %% is a literal %.
FILENAME_PATTERN = re.compile(r"%(%|\d*[A-Za-z])")


def pattern_letters(value: str) -> set[str]:
    """The letters Slurm fills in a log name, padded or not: they tell which runs share it."""
    return {m.group(1)[-1] for m in FILENAME_PATTERN.finditer(value) if m.group(1) != "%"}


_QUOTES_OR_ESCAPES = re.compile(r"[\\\"']")
# From 24.05 sbatch reads "\\ " as a blank inside a word (slurm commit d44b67f7be).
ESCAPED_BLANK_FROM = SlurmVersion(24, 5, 0)
# A directive ending in a lone backslash and blanks: from 24.05 a word " " of its own.
TRAILING_ESCAPED_BLANK = re.compile(r"(?:^|\s)\\ +$")


def sbatch_words(text: str, escaped_blank: bool = True) -> list[str]:
    """Split a directive's text like sbatch's ``get_argument``: quotes, escapes, ``#``.

    Text without quotes or escapes (nearly every directive) splits on whitespace up to a
    ``#``: the same words, without walking it a character at a time in Python.
    ``escaped_blank``: the reading of Slurm 24.05 and later, where ``\\ `` (backslash,
    space) outside quotes is a blank inside the word (slurm commit d44b67f7be). Before
    24.05 the backslash only flags the blank, which still ends the word; with nothing
    read yet, ``get_argument`` returns no word and the rest of the line is dropped.
    """
    if not _QUOTES_OR_ESCAPES.search(text):
        return text.split("#", 1)[0].split()
    words: list[str] = []
    current: list[str] = []
    in_word = False
    quote = ""
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            if quote or not following.isspace() or (escaped_blank and following == " "):
                current.append(following)
                in_word = True
                index += 2
                continue
            if not in_word:
                return words  # sbatch reads no word here, and no more of the line
            index += 1  # the blank ends the word, as an unescaped one does
            continue
        if quote:
            if char == quote:
                quote = ""
            else:
                current.append(char)
        elif char in "\"'":
            quote = char
            in_word = True
        elif char == "#":
            break
        elif char.isspace():
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
        else:
            current.append(char)
            in_word = True
        index += 1
    if in_word:
        words.append("".join(current))
    return words


# A line that is one template tag alone ({{ extra_directives }}, {% if gpu %}, @batch_extra@):
# the template is rendered before sbatch reads it, into more directives or nothing.
_TAG_LINE = re.compile(r"\{\{[^{}]*\}\}|\{%[^%]*%\}|\{#[^#]*#\}|@[A-Za-z_]\w*@|<%(?:(?!%>).)*%>")


def read_directives(
    lines: list[str],
    comments: set[int] | None = None,
    mask: Callable[[str], str] | None = None,
) -> list[Directive]:
    """Every ``#SBATCH``-looking line, with whether and why sbatch ignores it.

    The header is read as sbatch reads it, line by line. After it, a line is listed
    only if bash reads it as a comment (``comments``, from the syntax tree): a
    ``#SBATCH`` line inside a heredoc or a multi-line string is not a misplaced
    directive of this script (a heredoc fed to sbatch is a script of its own).
    ``mask``: applied to a directive's text before it is split, so that a template tag
    (``{{ log_dir }}``) is one unknown word, not words split at its blanks (lint passes
    its ``mask_templates``: it reads templates; sbatch never sees a tag); with it, a header
    line that is one tag alone, or inside a code tag over several lines, does not end
    the header either. The options
    of an ignored line are not read here, since sbatch never reads them; lint's
    ``sbatch-directive-ignored`` parses one itself, raw, to compare it with the header.
    """
    found: list[Directive] = []
    header = True
    masked: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not header and "#" not in line:
            continue  # after the header only a #SBATCH-looking line counts
        stripped = line.lstrip()
        looks = stripped[: len(MAGIC)].upper() == MAGIC
        if not header and looks and comments is not None and number not in comments:
            continue
        if line.startswith(MAGIC):
            found.append(_directive(number, line, None if header else AFTER_COMMAND, mask))
        elif looks:
            why = INDENTED if stripped.startswith(MAGIC) else WRONG_CASE
            found.append(_directive(number, line, why if header else AFTER_COMMAND, mask))
        elif header and stripped and not stripped.startswith("#"):
            if mask is not None and not masked:
                masked = mask("\n".join(lines)).split("\n")  # a code block over lines
            header = mask is not None and (
                _TAG_LINE.fullmatch(stripped) is not None or not masked[number - 1].strip()
            )
    return found


def _directive(
    number: int, line: str, ignored: str | None, mask: Callable[[str], str] | None
) -> Directive:
    options: list[Option] = []
    if ignored is None:
        body = line.lstrip()[len(MAGIC) :]
        if mask is not None:
            body = mask(body)
        options, _ = parse_options(sbatch_words(body))
    return Directive(
        line=number,
        text=line.rstrip("\n"),
        options=tuple(options),
        ignored=ignored,
        continued=line.rstrip().endswith("\\") and not line.rstrip().endswith("\\\\"),
    )


def job_request(
    directives: list[Directive], meaning: Callable[[str], str] | None = None
) -> JobRequest:
    """The last value of each option the read directives give.

    ``meaning``: the option a written long name stands for (getopt's unambiguous prefix:
    ``--accoun`` is ``--account``); the caller owns sbatch's option table. Without it
    options are keyed as written.
    """
    request = JobRequest()
    for directive in directives:
        if directive.ignored is None:
            for option in directive.options:
                name = meaning(option.name) if meaning is not None else option.name
                request.settings[name] = Setting(option.value, directive.line, option.written)
    return request
