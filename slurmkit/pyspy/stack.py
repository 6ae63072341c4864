"""py-spy's ``dump`` text read back into threads and frames.

The text is what people read and what the trace files keep, so it is parsed
rather than asking py-spy for ``--json`` (a second dump would show different
moments). Shapes handled, all from real py-spy output::

    Process 14340: /usr/bin/python3 prog.py
    Python v3.11.7 (/usr/bin/python3.11)

    Thread 14340 (idle): "MainThread"
        allreduce (prog.py:13)             <- innermost frame first
        <module> (prog.py:24)
    Thread 0x7F3A2C1FF640 (active+gil): "spinner"   <- older py-spy: hex thread id
        clock_nanosleep (libc.so.6)        <- --native: no line number
        0x7f2d3ce4524a (libc.so.6)         <- --native: bare address

Lines that fit none of these (``--locals`` detail, blank lines) are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PROCESS = re.compile(r"^Process (\d+): ?(.*)$")
_PYTHON = re.compile(r"^Python v(\S+)(?: \((.*)\))?\s*$")
_THREAD = re.compile(r'^Thread (0[xX][0-9A-Fa-f]+|\d+)(?: \(([^)]*)\))?(?:: "(.*)")?\s*$')
_FRAME = re.compile(r"^\s+(?P<function>.+?) \((?P<where>[^()]*)\)\s*$")
_LINE = re.compile(r"^(?P<file>.*):(?P<line>\d+)$")
_ADDRESS = re.compile(r"^0[xX][0-9A-Fa-f]+$")

MAIN_THREAD = "MainThread"


@dataclass(frozen=True)
class Frame:
    """One call: ``file`` is py-spy's short file name, or the library for native frames."""

    function: str
    file: str
    line: int | None = None

    @property
    def is_address(self) -> bool:
        """A native frame without a symbol: its address changes from process to process."""
        return bool(_ADDRESS.match(self.function))

    def key(self) -> tuple[str, str, int | None]:
        """What makes two frames the same call, ignoring ASLR addresses."""
        return ("?" if self.is_address else self.function, self.file, self.line)

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{self.function} ({where})"


@dataclass(frozen=True)
class Thread:
    """One thread; ``state`` is py-spy's word (``idle``, ``active``, ``active+gil``)."""

    thread_id: str
    name: str = ""
    state: str = ""
    frames: tuple[Frame, ...] = ()

    @property
    def idle(self) -> bool:
        return self.state == "idle"


@dataclass(frozen=True)
class Dump:
    """One process's dump: the command line py-spy saw, its Python, every thread."""

    pid: int | None = None
    command: str = ""
    python_version: str = ""
    python_path: str = ""
    threads: tuple[Thread, ...] = field(default=())

    @property
    def main_thread(self) -> Thread | None:
        """The thread named MainThread, else the one whose id is the pid, else the first."""
        for thread in self.threads:
            if thread.name == MAIN_THREAD:
                return thread
        for thread in self.threads:
            if self.pid is not None and thread.thread_id == str(self.pid):
                return thread
        return self.threads[0] if self.threads else None


def parse_dump(text: str) -> Dump:
    """The threads and frames of one ``py-spy dump`` (innermost frame first, as printed)."""
    pid: int | None = None
    command = version = path = ""
    threads: list[Thread] = []
    frames: list[Frame] = []
    current: Thread | None = None

    def close() -> None:
        if current is not None:
            threads.append(Thread(current.thread_id, current.name, current.state, tuple(frames)))

    for raw in text.splitlines():
        line = raw.rstrip()
        if not line:
            continue
        if match := _THREAD.match(line):
            close()
            current, frames = Thread(match[1], match[3] or "", match[2] or ""), []
        elif current is not None and (frame := _parse_frame(line)):
            frames.append(frame)
        elif match := _PROCESS.match(line):
            pid, command = int(match[1]), match[2]
        elif match := _PYTHON.match(line):
            version, path = match[1], match[2] or ""
    close()
    return Dump(pid, command, version, path, tuple(threads))


def _parse_frame(line: str) -> Frame | None:
    match = _FRAME.match(line)
    if match is None:
        return None
    where = match["where"]
    located = _LINE.match(where)
    if located:
        return Frame(match["function"], located["file"], int(located["line"]))
    return Frame(match["function"], where)
