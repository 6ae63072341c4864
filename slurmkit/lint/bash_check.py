"""bash's own verdict on a script's syntax: ``bash -n`` reads the whole script and runs nothing.

``bash-syntax`` means "bash refuses this script", and the one authority on that is bash.
The grammar lint reads (tree-sitter-bash) recovers from anything and misreads some valid
bash: a ``<(…)`` inside backquotes, a ``fi`` after a construct it does not know. On the
seventh test part 5 of its 6 wrong bash-syntax errors were scripts bash reads whole (valid
bash, or templates whose tags bash takes for words). So where the grammar reports an error
and bash can run, bash confirms it: a script bash reads without complaint has no bash-syntax
error (:mod:`slurmkit.lint.rules.syntax`). Where bash cannot run (no bash, a timeout), the
grammar's reading stands, as before. The verdict names the line bash complains of, for
whoever reads it; lint itself keeps the grammar's place, which has a column.

``-O extglob``: ``bash -n`` runs no ``shopt``, so a script that turns extended globs on and
then uses them would be refused by ``-n`` alone while it runs fine. Nothing is executed: the
text goes to bash's standard input (read as ``/dev/stdin``, so that bash names lines) and
``-n`` only parses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurmkit import _proc

TIMEOUT_SECONDS = 10.0
# Read as the file /dev/stdin: bash names the line of a complaint only for a file.
ARGV = ("bash", "--noprofile", "--norc", "-O", "extglob", "-n", "/dev/stdin")
# "/dev/stdin: line 84: unexpected EOF while looking for matching `"'"
_LINE = re.compile(r"^/dev/stdin: line (\d+): (.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Verdict:
    """``ok``: bash reads it all; else the first line bash complains of, and what it says."""

    ok: bool
    line: int = 0
    message: str = ""


def verdict(text: str) -> Verdict | None:
    """What ``bash -n`` says of ``text``; None when bash could not say (missing, too slow)."""
    try:
        done = _proc.run(ARGV, input=text, timeout=TIMEOUT_SECONDS)
    except OSError:
        return None
    if done.timed_out:
        return None
    if done.returncode == 0:
        return Verdict(ok=True)
    found = _LINE.search(done.stderr or "")
    if found is None:
        return None  # not a syntax complaint bash words as usual: no verdict
    return Verdict(ok=False, line=int(found.group(1)), message=found.group(2).strip())
