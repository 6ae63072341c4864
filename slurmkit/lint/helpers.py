"""Scripts of the same repository that a step runs (issue 32 item 5).

``srun bash train.sh`` starts whatever train.sh starts: a launcher there is the step's
launcher. lint reads such a helper when the script being linted is a file (its
directory is known), the helper is named by a plain relative path (``bash x.sh``,
``sh -e scripts/run.sh``, ``./run.sh``: no variable, no glob), and the file resolves,
links followed, inside the script's git work tree (or its own directory outside one):
never elsewhere on the host. Relative paths are looked up from the script's directory
(where sbatch runs it from, as lint assumes for log directories) and then from the
work tree's top. Helpers run helpers: followed to depth 2, each file once.

A helper that exists but cannot be read (a link loop, not a regular file, too big,
not text) is skipped with an info line; a missing one says nothing (it may be
written by the job, or the step runs elsewhere).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from slurmkit.errors import UsageError
from slurmkit.files import read_bounded
from slurmkit.lint.parsed import Word

FindLauncher = Callable[[str], str | None]  # launchers.launcher_in
MAX_DEPTH = 2
MAX_HELPER_BYTES = 256 * 1024
_MAX_UP = 40
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "source", "."})
_PLAIN_PATH = re.compile(r"^[\w.][\w./+-]*$")
# Helper runs inside a helper's text (read as text, not parsed: it is only searched).
_NESTED = re.compile(
    r"(?:(?<![\w.-])(?:bash|sh|source)\s+(?:-\w+\s+)*(?P<shell>[\w.][\w./+-]*)"
    r"|(?<![\w./-])(?P<direct>\./[\w./+-]+))"
)


@dataclass(frozen=True)
class Helper:
    """A helper as found: its text, or why it was skipped (``text`` None)."""

    word: str
    path: str
    text: str | None
    why: str = ""


def helper_word(program: Sequence[Word]) -> str | None:
    """The relative script path a command runs, or None (not a helper, or not plain)."""
    if not program or not program[0].literal:
        return None
    first = program[0].text
    if posixpath.basename(first) in SHELLS:
        rest = program[1:]
        if any(_runs_string(w.text) for w in rest):
            return None  # bash -c '…': a command string, not a file
        files = [w for w in rest if not w.text.startswith("-")]
        candidate = files[0] if files else None
    else:
        candidate = program[0] if "/" in first else None  # x.sh alone is looked up in PATH
    if candidate is None or not candidate.literal:
        return None
    return _plain(candidate.text)


def _runs_string(flag: str) -> bool:
    """``-c``, ``-lc``, ``-ec``: bash runs the next word as a command string."""
    return flag.startswith("-") and not flag.startswith("--") and "c" in flag[1:]


def _plain(text: str) -> str | None:
    if text.startswith("/") or not _PLAIN_PATH.match(text) or ".." in text.split("/"):
        return None
    return text


def find_work_tree(start: str) -> str | None:
    """The git work tree holding ``start`` (a ``.git`` at most 40 levels up), or None."""
    current = os.path.abspath(start)
    for _ in range(_MAX_UP):
        if os.path.exists(posixpath.join(current, ".git")):
            return current
        parent = posixpath.dirname(current)
        if parent == current:
            return None
        current = parent
    return None


def work_tree(start: str) -> str:
    """The git work tree holding ``start``, else ``start`` itself: the helpers' bound."""
    real = os.path.realpath(start)
    return find_work_tree(real) or real


class Helpers:
    """Reads a script's helpers once each, within its tree; remembers what it skipped."""

    def __init__(self, script_dir: str) -> None:
        self.script_dir = script_dir
        self.root = work_tree(script_dir)
        self._cache: dict[tuple[str, str], Helper | None] = {}
        self.skipped: dict[str, Helper] = {}

    def read(self, word: str, base: str | None = None) -> Helper | None:
        """The helper ``word`` names (from ``base``, the script's directory, the top)."""
        key = (word, base or "")
        if key not in self._cache:
            self._cache[key] = self._find(word, base)
        return self._cache[key]

    def _find(self, word: str, base: str | None) -> Helper | None:
        bases = [b for b in (base, self.script_dir, self.root) if b]
        for directory in dict.fromkeys(bases):
            found = self._at(word, posixpath.normpath(posixpath.join(directory, word)))
            if found is not None:
                return found
        return None

    def _at(self, word: str, candidate: str) -> Helper | None:
        try:
            real = os.path.realpath(candidate, strict=True)
        except FileNotFoundError:
            return None
        except (OSError, RuntimeError):
            return self._skip(Helper(word, candidate, None, "a symbolic link loop"))
        if real != self.root and not real.startswith(self.root.rstrip("/") + "/"):
            return None  # outside the repository: never read
        try:
            data = read_bounded(real, what="helper script", max_bytes=MAX_HELPER_BYTES)
        except FileNotFoundError:
            return None
        except (UsageError, OSError) as exc:
            reason = str(exc).split(f" {real}: ", 1)[-1]
            return self._skip(Helper(word, real, None, reason))
        if b"\0" in data:
            return self._skip(Helper(word, real, None, "not a text file (NUL bytes)"))
        return Helper(word, real, data.decode("utf-8", errors="replace"))

    def _skip(self, helper: Helper) -> Helper:
        self.skipped.setdefault(helper.word, helper)
        return helper

    def launcher(self, word: str, find: FindLauncher, base: str | None = None) -> str | None:
        """The launcher the helper ``word`` starts, itself or through its helpers."""
        return self._launcher(word, find, base, 1, set())

    def _launcher(
        self, word: str, find: FindLauncher, base: str | None, depth: int, seen: set[str]
    ) -> str | None:
        helper = self.read(word, base)
        if helper is None or helper.text is None or helper.path in seen:
            return None
        seen.add(helper.path)
        name = find(helper.text)
        if name:
            return name
        if depth >= MAX_DEPTH:
            return None
        here = posixpath.dirname(helper.path)
        for match in _NESTED.finditer(helper.text):
            nested = _plain(match.group("shell") or match.group("direct") or "")
            if nested and nested != "-c":
                found = self._launcher(nested, find, here, depth + 1, seen)
                if found:
                    return found
        return None
