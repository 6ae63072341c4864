"""The ``#SBATCH`` header of a job script (and sbatch argv words) as normalised options.

A train's array job is submitted once, with the header of the script it starts from;
later scripts only borrow that allocation. The header is read by
:mod:`slurmkit.sbatch.directives` (exactly as sbatch reads it: only before the first
command, quotes, ``#`` comments, ``-N2``/``--nodes 2``/``--nodes=2``); this module turns
its options into one ``--long=value`` word each, so two scripts compare option by
option and the wrapper gets one quoted word per ``#SBATCH`` line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from slurmkit.errors import UsageError
from slurmkit.files import read_bounded
from slurmkit.sbatch.directives import read_directives
from slurmkit.sbatch.options import SHORT, parse_options

MAX_SCRIPT_BYTES = 10 * 1024 * 1024  # lint's limit: past it, not a batch script

_TAKES_VALUE = frozenset(SHORT.values())


@dataclass(frozen=True)
class HeaderOption:
    """One sbatch option: its long name (no dashes), value, and the script line it came from."""

    option: str
    value: str | None = None
    line: int | None = None

    @property
    def word(self) -> str:
        """The option as one sbatch word: ``--nodes=2`` or ``--exclusive``."""
        return f"--{self.option}" if self.value is None else f"--{self.option}={self.value}"

    @property
    def where(self) -> str:
        return f"line {self.line}" if self.line else "command line"


@dataclass(frozen=True)
class SbatchHeader:
    """The options of a script's ``#SBATCH`` header, in order (a later one wins in sbatch)."""

    directives: tuple[HeaderOption, ...] = ()
    # ``#SBATCH`` lines sbatch does not read (after the first command, indented, wrong case).
    ignored_lines: tuple[int, ...] = ()

    def value(self, option: str) -> str | None:
        """The effective value of ``option`` (the last one), None when unset or a bare flag."""
        found = [d for d in self.directives if d.option == option]
        return found[-1].value if found else None

    def has(self, option: str) -> bool:
        return any(d.option == option for d in self.directives)

    @property
    def words(self) -> list[str]:
        return [d.word for d in self.directives]


def _checked(option: str, value: str | None, where: str) -> HeaderOption:
    if len(option) == 1:
        raise UsageError(f"{where}: unknown sbatch option -{option}")
    if value is None and option in _TAKES_VALUE:
        raise UsageError(f"{where}: --{option} needs a value")
    return HeaderOption(option, value)


def parse_words(words: Sequence[str], where: str = "sbatch options") -> list[HeaderOption]:
    """sbatch option words (``-N 2 --time 1:00:00 --exclusive``) -> directives."""
    options, end = parse_options(list(words))
    if end < len(words):
        raise UsageError(f"{where}: {words[end]!r} is not an sbatch option")
    return [_checked(o.name, o.value, where) for o in options]


def parse_header(text: str, where: str = "script") -> SbatchHeader:
    """The ``#SBATCH`` options of a script's text that sbatch reads, in order."""
    directives: list[HeaderOption] = []
    ignored: list[int] = []
    for found in read_directives(text.splitlines()):
        if found.ignored is not None:
            ignored.append(found.line)
            continue
        at = f"{where} line {found.line}"
        for option in found.options:
            checked = _checked(option.name, option.value, at)
            directives.append(HeaderOption(checked.option, checked.value, found.line))
    return SbatchHeader(tuple(directives), tuple(ignored))


def read_header(path: Path) -> SbatchHeader:
    """The header of the script at ``path``; an unreadable or binary file is a usage error."""
    try:
        data = read_bounded(path, what="job script", max_bytes=MAX_SCRIPT_BYTES, follow_links=True)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    return header_of(data, str(path))


def header_of(data: bytes, where: str) -> SbatchHeader:
    """The header of a script already read (by a caller that checked the file it read)."""
    if b"\0" in data:
        raise UsageError(f"{where}: is a binary file, not a job script")
    return parse_header(data.decode(errors="replace"), where)


def merged(*groups: Iterable[HeaderOption]) -> SbatchHeader:
    """Directives of several sources in order (script header, then command-line extras)."""
    return SbatchHeader(tuple(d for group in groups for d in group))
