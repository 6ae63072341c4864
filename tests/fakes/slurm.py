"""One fake Slurm for the unit tests, at the process seam.

Why here and why this shape: ``slurmkit._proc`` is the only module that starts processes,
and every call goes through ``_proc.runner(argv, timeout=, input=, env=, cwd=)``. Replacing
that one callable fakes ``scontrol``, ``squeue``, ``sinfo``, ``sacct``, ``sbatch``, ``srun``
(and the few non-Slurm programs a command runs, such as ``pdsh``) without touching library
code, so the argv the library builds is exactly what the fake sees and records.

A route is an argv *pattern* and what to answer:

- a pattern is a list of arguments (or one string, split like a shell would), compared
  argument by argument and literally (hostlists such as ``node-[1-2]`` are not globs), except
  ``"*"`` (any one argument), ``"**"`` (any number, none included) and an argument ending in
  ``*`` (a prefix, e.g. ``"--comment=slurmkit:*"``); or a predicate over the argv tuple;
- an answer is stdout text (exit 0), ``(rc, stdout, stderr)``, a ``Completed``, an exception
  to raise (``FileNotFoundError`` for a missing program), a list of those (one per call, the
  last repeats), or a function of the :class:`Call` returning one of those (for a fake whose
  answer depends on earlier calls, e.g. a node that is drained by an update).

The newest matching route answers, so a test can override a default. A call no route
matches fails the test with the command line: an unexpected Slurm call is a finding.
:meth:`FakeSlurm.replay` answers with a recorded real output from ``tests/fixtures``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from slurmkit import _proc
from slurmkit.lint.bash_check import ARGV  # lint's bash -n, answered by bash itself
from tests.unit import fixtures_path

Reply: TypeAlias = "str | tuple[int, str, str] | _proc.Completed | BaseException"


@dataclass(frozen=True)
class Call:
    """One command the library ran: its argv and the keyword arguments it gave ``_proc``."""

    argv: tuple[str, ...]
    timeout: float | None = None
    input: str | None = None
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    @property
    def program(self) -> str:
        return self.argv[0]


Answer: TypeAlias = "Reply | Sequence[Reply] | Callable[[Call], Answer]"
Pattern: TypeAlias = "str | Sequence[str] | Callable[[tuple[str, ...]], bool]"

_REAL = object()  # the answer of run_really(): the real process runs


def _matches(pattern: Sequence[str], argv: Sequence[str]) -> bool:
    if not pattern:
        return not argv
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_matches(rest, argv[i:]) for i in range(len(argv) + 1))
    if not argv:
        return False
    arg = argv[0]
    if head == "*":
        ok = True
    elif len(head) > 1 and head.endswith("*"):
        ok = arg.startswith(head[:-1])
    else:
        ok = arg == head
    return ok and _matches(rest, argv[1:])


@dataclass
class _Route:
    pattern: Pattern
    answer: Answer | object

    def matches(self, argv: tuple[str, ...]) -> bool:
        if callable(self.pattern):
            return bool(self.pattern(argv))
        words = shlex.split(self.pattern) if isinstance(self.pattern, str) else self.pattern
        return _matches(list(words), argv)


@dataclass
class FakeSlurm:
    """Answers commands by argv pattern and records every call (see the module docstring)."""

    log: list[Call] = field(default_factory=list)
    ignored_prefixes: tuple[str, ...] = ()
    _routes: list[_Route] = field(default_factory=list)
    _real: _proc.Runner = field(default=_proc._run_subprocess, repr=False)

    # ------------------------------------------------------------------ routes

    def on(
        self,
        pattern: Pattern,
        stdout: str = "",
        *,
        rc: int = 0,
        stderr: str = "",
        answer: Answer | None = None,
    ) -> FakeSlurm:
        """Answer commands matching ``pattern`` with ``answer``, or with stdout/rc/stderr."""
        if isinstance(answer, list):
            answer = list(answer)  # consumed one per call; the caller's list stays as it was
        self._routes.append(_Route(pattern, (rc, stdout, stderr) if answer is None else answer))
        return self

    def answers(self, pattern: Pattern, *replies: Reply) -> FakeSlurm:
        """Answer the calls matching ``pattern`` with ``replies`` in turn; the last repeats
        (e.g. a job queued, then running, then gone)."""
        return self.on(pattern, answer=list(replies))

    def replay(
        self, version: str, scenario: str, name: str, pattern: Pattern | None = None
    ) -> FakeSlurm:
        """Answer with a recorded real output: its stdout, exit code and stderr as Slurm
        printed them. The route is the recorded command unless ``pattern`` is given (the
        recording's argument order may differ from the one slurmkit builds)."""
        recorded = fixtures_path.entry(version, scenario, name)
        answer = (
            int(recorded["exit_code"]),
            fixtures_path.read(version, scenario, name),
            fixtures_path.stderr(version, scenario, name),
        )
        return self.on(pattern if pattern is not None else recorded["command"], answer=answer)

    def missing(self, program: str) -> FakeSlurm:
        """``program`` is not installed: running it raises FileNotFoundError, as exec would."""
        error = FileNotFoundError(2, "No such file or directory", program)
        return self.on([program, "**"], answer=error)

    def run_really(self, pattern: Pattern) -> FakeSlurm:
        """Commands matching ``pattern`` really run (e.g. ``bash -n``, a health check's cmd)."""
        self._routes.append(_Route(pattern, _REAL))
        return self

    def ignore_args(self, *prefixes: str) -> FakeSlurm:
        """Arguments starting with one of ``prefixes`` are left out when matching routes
        (they are still recorded), e.g. the journal's random ``--comment=slurmkit:<token>``."""
        self.ignored_prefixes += prefixes
        return self

    # ------------------------------------------------------------------ what was run

    @property
    def calls(self) -> list[tuple[str, ...]]:
        """The argv of every call, in order."""
        return [call.argv for call in self.log]

    def calls_to(self, *prefix: str) -> list[tuple[str, ...]]:
        """The calls whose argv starts with ``prefix`` (e.g. ``"scontrol", "update"``)."""
        return [argv for argv in self.calls if argv[: len(prefix)] == prefix]

    def count(self, *prefix: str) -> int:
        return len(self.calls_to(*prefix))

    # ------------------------------------------------------------------ the seam

    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> _proc.Completed:
        if tuple(argv) == ARGV:
            # lint's syntax check (slurmkit.lint.bash_check): no Slurm call, not recorded, and
            # bash itself answers, as wherever lint runs
            return self._real(argv, timeout=timeout, input=input, env=env, cwd=cwd)
        call = Call(tuple(argv), timeout, input, env, cwd)
        self.log.append(call)
        key = tuple(a for a in call.argv if not a.startswith(self.ignored_prefixes or ("\0",)))
        for route in reversed(self._routes):
            if route.matches(key):
                if route.answer is _REAL:
                    return self._real(argv, timeout=timeout, input=input, env=env, cwd=cwd)
                return self._reply(call, route)
        raise AssertionError(f"unexpected command: {shlex.join(call.argv)}")

    def _reply(self, call: Call, route: _Route) -> _proc.Completed:
        answer = route.answer
        while True:
            if isinstance(answer, list):
                answer = answer.pop(0) if len(answer) > 1 else answer[0]
            elif callable(answer) and not isinstance(answer, BaseException):
                answer = answer(call)
            else:
                break
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, _proc.Completed):
            return answer
        if isinstance(answer, str):
            return _proc.Completed(call.argv, 0, answer, "", 0.0)
        if isinstance(answer, tuple) and len(answer) == 3:
            rc, stdout, stderr = answer
            return _proc.Completed(call.argv, rc, stdout, stderr, 0.0)
        raise TypeError(f"a FakeSlurm answer must be a Reply, got {answer!r}")
