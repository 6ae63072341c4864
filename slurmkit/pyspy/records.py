"""What ``slurmkit pyspy`` learned: one record per dumped process, one line per problem."""

from __future__ import annotations

from dataclasses import dataclass, field

from slurmkit.pyspy.stack import Dump, Frame

OK = "ok"
# Roles the node side gives Python processes (see node_script.py).
RANK = "rank"
LAUNCHER = "launcher"
CHILD = "child"


@dataclass(frozen=True)
class ProcessStack:
    """One process of the job: py-spy's text, parsed, or why there is none.

    ``status`` is ``ok``, ``gone``, ``ptrace_denied``, ``not_python``,
    ``timeout`` or ``error``; ``text`` is py-spy's own output, kept for the
    trace files.
    """

    node: str
    pid: int
    role: str
    status: str
    command: str = ""
    ppid: int | None = None
    error: str = ""
    text: str = ""
    dump: Dump = field(default_factory=Dump)

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def main_frames(self) -> tuple[Frame, ...]:
        thread = self.dump.main_thread
        return thread.frames if thread else ()


@dataclass(frozen=True)
class Problem:
    """One line a person can act on; ``kind`` is stable for scripts (``py_spy_missing``...)."""

    node: str
    kind: str
    message: str
    pids: tuple[int, ...] = ()


@dataclass(frozen=True)
class NodeStacks:
    """One node's answer: its processes, its problems, how many Python processes it had.

    ``python`` is None when the node never said (unreachable, timed out, failed).
    """

    node: str
    processes: tuple[ProcessStack, ...] = ()
    problems: tuple[Problem, ...] = ()
    python: int | None = None
