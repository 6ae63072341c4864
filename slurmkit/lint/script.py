"""A batch script as the rules see it: directives, the job they request, commands, sruns.

The environment each ``srun`` starts with is followed through the script in order
(assignments, ``export``, ``unset``, ``set -a``, ``VAR=x srun`` prefixes), because
whether ``SRUN_CPUS_PER_TASK`` reaches srun decides a finding. Variables whose name
starts with ``SLURM_`` come from sbatch's environment, so assigning one changes what
srun sees even without ``export`` (bash keeps an inherited variable exported).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from slurmkit.lint.findings import Finding
from slurmkit.lint.helpers import Helpers
from slurmkit.lint.sbatch_table import stock_meaning
from slurmkit.lint.shell import (
    Assignment,
    Command,
    Heredoc,
    Parsed,
    Word,
    as_assignment,
    mask_templates,
    parse,
)
from slurmkit.sbatch.directives import Directive, JobRequest, job_request, read_directives
from slurmkit.sbatch.options import Option, parse_options

_REFERENCE = re.compile(r"\$\{?([A-Za-z_]\w*)")
_INHERITED = re.compile(r"SLURM_\w+")
_BUILTINS = frozenset({"export", "declare", "typeset", "local", "readonly", "unset", "set"})
_DECLARE = frozenset({"declare", "typeset", "local", "readonly"})
# What a heredoc body may stand for in the script that feeds it to sbatch: the outer
# shell removes these escapes from an unquoted heredoc before sbatch reads it.
_HEREDOC_ESCAPES = re.compile(r"\\([$`\\])")


# a line whose first non-blank is # (blank: what str.isspace says, as lstrip strips)


@dataclass(frozen=True)
class Binding:
    """A variable's value at some point (None: exported without a value we know)."""

    name: str
    value: Word | None
    exported: bool
    line: int
    prefix: bool = False


class _Shell:
    """The shell's variables over time, so that each srun's view costs O(1) to take.

    Every change is kept with a sequence number; a view (:class:`_View`) is the
    history read at one number. Copying every variable for every srun made lint
    quadratic: 20,000 ``export``/``srun`` pairs took a minute and 10 GB.
    """

    def __init__(self) -> None:
        self._now: dict[str, Binding] = {}
        self._history: dict[str, tuple[list[int], list[Binding | None]]] = {}
        self._seq = 0

    def __contains__(self, name: object) -> bool:
        return name in self._now

    def __getitem__(self, name: str) -> Binding:
        return self._now[name]

    def get(self, name: str) -> Binding | None:
        return self._now.get(name)

    def __setitem__(self, name: str, binding: Binding) -> None:
        self._now[name] = binding
        self._record(name, binding)

    def pop(self, name: str) -> None:
        if self._now.pop(name, None) is not None:
            self._record(name, None)

    def _record(self, name: str, binding: Binding | None) -> None:
        self._seq += 1
        seqs, values = self._history.setdefault(name, ([], []))
        seqs.append(self._seq)
        values.append(binding)

    def view(self, exported_only: bool, extra: Mapping[str, Binding] | None = None) -> _View:
        return _View(self._history, self._seq, exported_only, dict(extra or {}))


class _View(Mapping[str, Binding]):
    """The variables as they were at one point (only the exported ones, if asked), read-only."""

    def __init__(
        self,
        history: Mapping[str, tuple[list[int], list[Binding | None]]],
        seq: int,
        exported_only: bool,
        extra: dict[str, Binding],
    ) -> None:
        self._history, self._seq, self._exported_only, self._extra = (
            history,
            seq,
            exported_only,
            extra,
        )

    def __getitem__(self, name: str) -> Binding:
        if name in self._extra:
            return self._extra[name]
        found = self._history.get(name)
        if found is not None:
            seqs, values = found
            index = bisect_right(seqs, self._seq) - 1
            binding = values[index] if index >= 0 else None
            if binding is not None and (binding.exported or not self._exported_only):
                return binding
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        yield from self._extra
        for name in self._history:
            if name not in self._extra and name in self:
                yield name

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return repr(dict(self))


def is_srun(name: str | None) -> bool:
    """srun by name or by path (``/opt/slurm/bin/srun``): the same step launcher."""
    return name is not None and (name == "srun" or name.endswith("/srun"))


@dataclass(frozen=True)
class Srun:
    command: Command
    options: tuple[Option, ...]
    program: tuple[Word, ...]
    line: int
    env: Mapping[str, Binding]
    shell: Mapping[str, Binding]

    def option(self, *names: str) -> Option | None:
        found = [o for o in self.options if o.name in names]
        return found[-1] if found else None

    def has(self, *names: str) -> bool:
        return self.option(*names) is not None


@dataclass(frozen=True)
class HeredocOrigin:
    """Where a job script fed to sbatch by a heredoc sits in the script that feeds it."""

    first_line: int  # the file line of the body's first line
    submit_line: int  # the file line of the command that feeds the heredoc to sbatch
    # the script whose shell runs that sbatch (its cd and mkdir decide the submit directory)
    feeder: Script | None = field(default=None, compare=False, repr=False)


@dataclass
class Script:
    """A batch script as the rules see it; ``origin`` is set for a heredoc fed to sbatch."""

    path: str
    text: str
    origin: HeredocOrigin | None = None
    # the scripts of its repository its steps run (None: a text with no file, no directory)
    helpers: Helpers | None = None
    # line of the first \r\n of the text as written (0: none); ``text`` has them as \n
    crlf_line: int = 0
    # lines of the file before ``text`` (a job script from a heredoc; 0: the file itself)
    line_base: int = 0
    lines: list[str] = field(init=False)
    parsed: Parsed = field(init=False)
    directives: list[Directive] = field(init=False)
    job: JobRequest = field(init=False)

    def shown(self, line: int) -> int:
        """A line of ``text`` as a message names it: the file's line number.

        A heredoc's job script is linted as its body alone (padded to its place in the
        file, 4,000 heredocs in 20,000 lines took 15 s); rules number its lines from 1,
        and lint moves each finding to the file's line (:func:`slurmkit.lint._placed`).
        """
        return line + self.line_base

    def __post_init__(self) -> None:
        self.lines = self.text.splitlines()
        self.parsed = parse(self.text)
        self.directives = read_directives(
            self.lines, self.parsed.comment_lines, mask=mask_templates
        )
        self.job = job_request(self.directives, stock_meaning)

    # ------------------------------------------------------------ job scripts inside

    @cached_property
    def submitted_heredocs(self) -> list[tuple[Heredoc, int]]:
        """(heredoc, line of the sbatch that reads it) for every heredoc that is a job script.

        ``sbatch <<EOF``, ``cat <<EOF | sbatch``, and ``cat > job.sh <<EOF`` followed by
        ``sbatch job.sh``: sbatch reads the body as a script of its own, header and all.
        """
        found: list[tuple[Heredoc, int]] = []
        submits = self._submits_by_word()
        for heredoc in self.parsed.heredocs:
            reader = heredoc.reader
            if reader is not None and reader.name == "sbatch":
                found.append((heredoc, self.line_of(reader.start)))
                continue
            piped = [c for c in heredoc.piped_to if c.name == "sbatch"]
            if piped:
                found.append((heredoc, self.line_of(piped[0].start)))
                continue
            target = heredoc.target
            if target and target in submits:
                starts, commands = submits[target]
                index = bisect_right(starts, heredoc.end)  # the first sbatch after the body
                if index < len(starts):
                    found.append((heredoc, self.line_of(commands[index].start)))
        return found

    def _submits_by_word(self) -> dict[str, tuple[list[int], list[Command]]]:
        """word -> (starts, commands) of the sbatch commands with that argument, in order.

        Looked up per heredoc, not scanned: a heredoc per sbatch made it quadratic.
        """
        found: dict[str, tuple[list[int], list[Command]]] = {}
        for command in self.commands:
            if command.name == "sbatch":
                for text in {w.text for w in command.argv[1:]}:
                    starts, commands = found.setdefault(text, ([], []))
                    starts.append(command.start)
                    commands.append(command)
        return found

    def job_scripts(self) -> list[Script]:
        """The heredocs fed to sbatch, each as a Script with its origin in this file."""
        scripts = []
        for heredoc, submit_line in self.submitted_heredocs:
            body = heredoc.body
            if not heredoc.quoted:
                body = _HEREDOC_ESCAPES.sub(r"\1", body)
            base = self.line_base + self.line_of(heredoc.start) - 1
            origin = HeredocOrigin(base + 1, self.shown(submit_line), self)
            scripts.append(Script(self.path, body, origin, line_base=base))
        return scripts

    @cached_property
    def hidden_lines(self) -> set[int]:
        """Lines of heredocs fed to sbatch: another script's, linted on their own."""
        return {
            number
            for heredoc, _ in self.submitted_heredocs
            if heredoc.end > heredoc.start
            for number in range(self.line_of(heredoc.start), self.line_of(heredoc.end - 1) + 1)
        }

    # ------------------------------------------------------------ helpers for rules

    def line_of(self, offset: int) -> int:
        return bisect_right(self.parsed._line_starts, offset)  # Parsed.line_of, one call less

    def finding(self, line: int, severity: str, rule: str, message: str, fix: str) -> Finding:
        return Finding(self.path, line, severity, rule, message, fix)

    @property
    def commands(self) -> list[Command]:
        return self.parsed.commands

    def source(self, command: Command) -> str:
        return self.parsed.source(command.start, command.end)

    def lines_matching(self, pattern: re.Pattern[str]) -> list[int]:
        """Numbers of the lines (of ``lines``) where ``pattern`` matches, in order.

        One scan of the text instead of one search per line, when the text breaks its
        lines only at \\n (as ``lines`` numbers them); else line by line.
        """
        text, lines = self.text, self.lines
        if len(lines) != text.count("\n") + (not text.endswith("\n") and bool(text)):
            return [n for n, line in enumerate(lines, start=1) if pattern.search(line)]
        starts = self.parsed._line_starts
        return sorted({bisect_right(starts, m.start()) for m in pattern.finditer(text)})

    def code_lines(self, heredocs: bool = False) -> Iterator[tuple[int, str]]:
        """(line number, text) of the lines that are not comments; heredoc bodies if asked.

        A bash comment after code (``srun torchrun --nnodes=2 t.py  # was --nnodes 4``)
        is cut off where the syntax tree says it starts.
        """
        return iter(self._code_lines_with_bodies if heredocs else self._code_lines)

    @cached_property
    def _code_lines(self) -> list[tuple[int, str]]:
        return self._read_code_lines(self._heredoc_lines | self.hidden_lines)

    @cached_property
    def _code_lines_with_bodies(self) -> list[tuple[int, str]]:
        return self._read_code_lines(self.hidden_lines)

    def _read_code_lines(self, bodies: set[int]) -> list[tuple[int, str]]:
        """Built once per kind: eight rules walk them, each pass was 40,000 strips."""
        skip = bodies | self._comment_only_lines
        cut = self._comment_columns
        return [
            (number, line if (column := cut.get(number)) is None else line[:column])
            for number, line in enumerate(self.lines, start=1)
            if number not in skip
        ]

    @cached_property
    def _comment_only_lines(self) -> set[int]:
        """Lines whose first non-blank is ``#``: a line without ``#`` is passed by in C,
        a third of the time of a regex scan of the text and a line number per match."""
        return {
            number
            for number, line in enumerate(self.lines, start=1)
            if "#" in line and line.lstrip()[:1] == "#"
        }

    @cached_property
    def _comment_columns(self) -> dict[int, int]:
        """Line -> column where a bash comment starts after code on that line."""
        starts = self.parsed._line_starts
        found: dict[int, int] = {}
        for start, _ in self.parsed.comments:
            line = bisect_right(starts, start)
            found.setdefault(line, start - starts[line - 1])
        return found

    @cached_property
    def _heredoc_lines(self) -> set[int]:
        return {
            number
            for heredoc in self.parsed.heredocs
            if heredoc.end > heredoc.start
            for number in range(self.line_of(heredoc.start), self.line_of(heredoc.end - 1) + 1)
        }

    # ------------------------------------------------------------ environment and sruns

    @cached_property
    def bindings(self) -> list[Binding]:
        """Every assignment the script makes (top level and prefixes), in order."""
        return [b for b, _ in self._walked[0]]

    @cached_property
    def sruns(self) -> list[Srun]:
        return self._walked[1]

    def assigned_sources(self, name: str) -> list[str]:
        """The source text of every value assigned to ``name`` (heredoc bodies included)."""
        return self._sources_by_name.get(name, [])

    @cached_property
    def _sources_by_name(self) -> dict[str, list[str]]:
        """Distinct assigned sources per name, built once: a scan per srun made lint quadratic."""
        found: dict[str, dict[str, None]] = {}
        for b in self.bindings:
            if b.value is not None:
                source = self.parsed.source(b.value.start, b.value.end)
                found.setdefault(b.name, {})[source] = None
        return {name: list(sources) for name, sources in found.items()}

    def expanded_source(self, text: str, depth: int = 3) -> str:
        """``text`` plus the assigned sources of the variables it references, recursively.

        Remembered per text: a script repeats the same srun line many times.
        """
        key = (text, depth)
        if key not in self._expanded:
            self._expanded[key] = self._expand(text, depth)
        return self._expanded[key]

    @cached_property
    def _expanded(self) -> dict[tuple[str, int], str]:
        return {}

    @cached_property
    def srun_launchers(self) -> dict[int, str | None]:
        """Each srun's launcher (by its command's offset), found once for every rule."""
        return {}

    @cached_property
    def memo(self) -> dict[str, Any]:
        """What several rules derive alike, derived once (keyed by the deriving function)."""
        return {}

    def _expand(self, text: str, depth: int) -> str:
        seen: set[str] = set()
        pieces = [text]
        frontier = [text]
        for _ in range(depth):
            names = {m.group(1) for piece in frontier for m in _REFERENCE.finditer(piece)}
            frontier = []
            for name in sorted(names - seen):
                seen.add(name)
                frontier.extend(self.assigned_sources(name))
            pieces.extend(frontier)
        return "\n".join(pieces)

    @cached_property
    def _walked(self) -> tuple[list[tuple[Binding, Command]], list[Srun]]:
        events: list[tuple[Binding, Command]] = []
        sruns: list[Srun] = []
        shell = _Shell()
        allexport = False
        for command in self.commands:
            line = self.line_of(command.start)
            prefix = command.prefix
            argv = command.argv
            name = argv[0].text if argv else None
            if name is None and command.depth == 0:
                for assignment in prefix:
                    exported = (
                        allexport
                        or _INHERITED.fullmatch(assignment.name) is not None
                        or (assignment.name in shell and shell[assignment.name].exported)
                    )
                    binding = Binding(assignment.name, assignment.value, exported, line)
                    shell[assignment.name] = binding
                    events.append((binding, command))
                continue
            if name is None:
                continue
            if is_srun(name):
                srun = self._srun(command, line, shell, prefix)
                # no command: srun exits at option parsing (opt.c "No command given to
                # execute."), before any step exists, so no step rule applies to it
                if srun.program:
                    sruns.append(srun)
            for assignment in prefix:
                events.append(
                    (Binding(assignment.name, assignment.value, True, line, prefix=True), command)
                )
            if command.depth == 0:
                allexport = self._builtin(name, argv, line, command, shell, events, allexport)
        return events, sruns

    @staticmethod
    def _srun(command: Command, line: int, shell: _Shell, prefix: list[Assignment]) -> Srun:
        words = command.argv[1:]
        options, first = parse_options([w.text for w in words])
        extra = {
            assignment.name: Binding(assignment.name, assignment.value, True, line, prefix=True)
            for assignment in command.env_prefix
        }
        return Srun(
            command=command,
            options=tuple(options),
            program=tuple(words[first:]),
            line=line,
            env=shell.view(exported_only=True, extra=extra),
            shell=shell.view(exported_only=False),
        )

    @staticmethod
    def _builtin(
        name: str,
        argv: tuple[Word, ...],
        line: int,
        command: Command,
        shell: _Shell,
        events: list[tuple[Binding, Command]],
        allexport: bool,
    ) -> bool:
        """Apply export/declare -x/unset/set -a; return the new allexport flag."""
        if name not in _BUILTINS:
            return allexport
        args = argv[1:]
        flags = "".join(w.text[1:] for w in args if w.text.startswith("-"))
        if name == "export" or (name in _DECLARE and "x" in flags):
            unexport = "n" in flags and name == "export"
            for word in args:
                if word.text.startswith("-"):
                    continue
                assignment = as_assignment(word)
                if assignment is not None:
                    binding = Binding(assignment.name, assignment.value, not unexport, line)
                    shell[assignment.name] = binding
                    events.append((binding, command))
                elif re.fullmatch(r"[A-Za-z_]\w*", word.text):
                    old = shell.get(word.text)
                    shell[word.text] = Binding(
                        word.text, old.value if old else None, not unexport, line
                    )
        elif name == "unset":
            for word in args:
                shell.pop(word.text)
        elif name == "set":
            texts = [w.text for w in args]
            for index, text in enumerate(texts):
                following = texts[index + 1] if index + 1 < len(texts) else ""
                option = text[:1] in "-+" and not text.startswith("--")
                if option and (
                    "a" in text[1:] or (text.endswith("o") and following == "allexport")
                ):
                    allexport = text[0] == "-"
        return allexport

    # ------------------------------------------------------------ shell options

    def pipefail_from(self) -> int | None:
        """Offset from which ``set -o pipefail`` is in force at top level, or None."""
        for command in self.commands:
            if command.depth or command.name != "set":
                continue
            words = [w.text for w in command.argv[1:]]
            for index, word in enumerate(words):
                short = word.startswith("-") and not word.startswith("--")
                if short and word.endswith("o") and words[index + 1 : index + 2] == ["pipefail"]:
                    return command.start
        return None
