"""Every file slurmkit reads goes through ``slurmkit.files.read_bounded`` (issue 28, item 5).

A plain ``open``/``read_text`` blocks for ever on a FIFO, reads a link to
``/dev/zero`` without end and raises a traceback on bytes that are not UTF-8. One
reader handles all of it, so this test walks the code for any other way to read a
file and fails naming each call. What truly cannot go through the reader is
listed in ``ALLOWED`` with the reason; an entry no longer needed fails the test
too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import slurmkit

PACKAGE = Path(slurmkit.__file__).parent
READER = "files.py"


# (file, function holding the call) -> why it cannot use read_bounded.
ALLOWED: dict[tuple[str, str], str] = {
    ("pyspy/node_script.py", "_read"): "runs alone on the node under /usr/bin/python3, which "
    "cannot import slurmkit; it reads /proc/<pid>/environ, maps and the like, which never block",
    ("health/kernlog.py", "read_kmsg"): "/dev/kmsg is a character device read one record "
    "per read() (O_NONBLOCK|O_NOFOLLOW, checked S_ISCHR, at most MAX_RECORDS): no file to bound",
    ("pyspy/nodecmd.py", "node_script_source"): "package data through importlib.resources (a "
    "Traversable, possibly inside a zip), not a path anyone else can replace",
    ("locks.py", "_open_read_only"): "a lock file on a read-only file system, opened only to "
    "flock it (its pid is read by _holder, bounded); nothing is read from this descriptor",
}


@dataclass(frozen=True)
class Read:
    path: str
    line: int
    function: str
    call: str

    def __str__(self) -> str:
        return f"slurmkit/{self.path}:{self.line} in {self.function}(): {self.call}"


def _constant(node: ast.expr | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _mode(call: ast.Call, position: int) -> object:
    """The mode argument (positional at ``position`` or ``mode=``), "r" when absent."""
    for keyword in call.keywords:
        if keyword.arg == "mode":
            return _constant(keyword.value)
    if len(call.args) > position:
        return _constant(call.args[position])
    return "r"


def _reads(mode: object) -> bool:
    """A mode that reads: "r", "rb", "r+"...; an unknown (computed) mode counts as reading."""
    return not isinstance(mode, str) or "r" in mode or "+" in mode


def _names(node: ast.expr) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, (ast.Name, ast.Attribute))}  # fmt: skip


def _read_only_flags(call: ast.Call) -> bool:
    """``os.open(path, O_RDONLY...)`` for a file (a directory fd or a creation is no read)."""
    if len(call.args) < 2:
        return False
    flags = _names(call.args[1])
    return "O_RDONLY" in flags and not flags & {"O_WRONLY", "O_RDWR", "O_CREAT", "O_DIRECTORY"}


def describe(call: ast.Call) -> str | None:
    """What kind of file read ``call`` is, or None for anything else."""
    func = call.func
    if isinstance(func, ast.Name):
        if func.id == "open" and _reads(_mode(call, 1)):
            return "open()"
        if func.id == "open_nofollow" and _read_only_flags(call):
            return "open_nofollow(O_RDONLY)"
        return None
    if not isinstance(func, ast.Attribute):
        return None
    owner = func.value.id if isinstance(func.value, ast.Name) else ""
    if func.attr in ("read_text", "read_bytes"):
        return f".{func.attr}()"
    if func.attr == "fdopen" and owner == "os" and _reads(_mode(call, 1)):
        return "os.fdopen()"
    if func.attr == "open" and owner in ("os", "trust") and _read_only_flags(call):
        return f"{owner}.open(O_RDONLY)"
    if func.attr == "open_nofollow" and _read_only_flags(call):
        return "open_nofollow(O_RDONLY)"
    if func.attr == "open" and owner in ("io", "codecs") and _reads(_mode(call, 1)):
        return f"{owner}.open()"
    if func.attr == "File" and owner == "click" and _reads(_mode(call, 0)):
        return "click.File() (opened by click, unbounded)"
    if func.attr == "open" and _path_open(call):
        return "Path.open()"
    return None


def _path_open(call: ast.Call) -> bool:
    """``p.open()`` / ``p.open("rb")``: no argument, or a literal mode first (a class's own
    ``open(path)`` passes a path, not a mode)."""
    if not call.args:
        return all(k.arg != "mode" or _reads(_constant(k.value)) for k in call.keywords)
    first = _constant(call.args[0])
    return isinstance(first, str) and len(first) <= 3 and _reads(first)


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.stack: list[str] = []
        self.found: list[Read] = []

    def _scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scope

    def visit_Call(self, node: ast.Call) -> None:
        kind = describe(node)
        if kind is not None:
            function = self.stack[-1] if self.stack else "<module>"
            self.found.append(Read(self.path, node.lineno, function, kind))
        self.generic_visit(node)


def reads_in(source: str, path: str = "x.py") -> list[Read]:
    finder = _Finder(path)
    finder.visit(ast.parse(source))
    return finder.found


def all_reads() -> Iterator[Read]:
    for file in sorted(PACKAGE.rglob("*.py")):
        relative = file.relative_to(PACKAGE).as_posix()
        if relative != READER:
            yield from reads_in(file.read_text(encoding="utf-8"), relative)


def test_every_file_read_goes_through_the_bounded_reader() -> None:
    reads = all_reads()
    unexplained = [r for r in reads if (r.path, r.function) not in ALLOWED]
    assert not unexplained, (
        "read these through slurmkit.files.read_bounded / read_text_bounded "
        "(or add them to ALLOWED with the reason they cannot):\n"
        + "\n".join(f"  {r}" for r in unexplained)
    )


def test_no_allowance_outlives_its_read() -> None:
    used = {(r.path, r.function) for r in all_reads()}
    stale = [f"{path} {function}()" for path, function in ALLOWED if (path, function) not in used]
    assert not stale, f"remove these ALLOWED entries, their reads are gone: {stale}"


def test_every_allowance_says_why() -> None:
    reasons = list(ALLOWED.values())
    assert all(len(reason.split()) >= 3 for reason in reasons)


# ---------------------------------------------------------------- the walker itself


@pytest.mark.parametrize(
    "source",
    [
        "open(p)",
        "open(p, 'rb')",
        "open(p, mode='r', encoding='utf-8')",
        "open(p, m)",  # a computed mode may read
        "Path(p).read_text()",
        "p.read_bytes()",
        "os.fdopen(fd)",
        "os.fdopen(fd, 'rb')",
        "os.open(p, os.O_RDONLY | os.O_NONBLOCK)",
        "open_nofollow(p, os.O_RDONLY)",
        "trust.open_nofollow(p, os.O_RDONLY)",
        "p.open()",
        "p.open('rb')",
        "click.File('r')",
        "io.open(p)",
    ],
)
def test_the_walker_finds_each_way_to_read(source: str) -> None:
    assert len(reads_in(f"def f():\n    {source}\n")) == 1


@pytest.mark.parametrize(
    "source",
    [
        "open(p, 'w')",
        "open(p, 'ab')",
        "os.fdopen(fd, 'w', encoding='utf-8')",
        "os.open(p, os.O_WRONLY | os.O_CREAT)",
        "os.open(d, os.O_RDONLY | os.O_DIRECTORY)",
        "ActionLog.open(options.log)",
        "subprocess.Popen(argv)",
        "urllib.request.urlopen(request)",
        "p.write_text('x')",
    ],
)
def test_the_walker_leaves_writes_and_other_opens_alone(source: str) -> None:
    assert reads_in(f"def f():\n    {source}\n") == []


def test_a_read_is_named_by_file_line_and_function() -> None:
    (read,) = reads_in("class C:\n    def load(self):\n        return p.read_text()\n", "a/b.py")
    assert str(read) == "slurmkit/a/b.py:3 in load(): .read_text()"
