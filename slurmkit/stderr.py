"""The one way slurmkit writes to stderr: notices, progress and echoed commands.

Everything a command says that is not its result goes to stderr, so that stdout stays
what scripts read (a table, JSON, a hostlist). The library and the CLI both write
through these functions (the library never imports click): a notice is one line
``slurmkit: <message>``, the same shape as the CLI's error line, so a person sees at
once which lines are slurmkit's and a script can tell them from a node's output.
Each write is flushed, so notices interleave correctly with stdout and with the
output of processes slurmkit runs.
"""

from __future__ import annotations

import sys

PREFIX = "slurmkit: "


def line(text: str) -> None:
    """Write ``text`` as one stderr line, unprefixed (an echoed command, a report line)."""
    print(text, file=sys.stderr, flush=True)


def say(message: str) -> None:
    """One notice on stderr: ``slurmkit: <message>`` (a warning, what is awaited, an error)."""
    line(f"{PREFIX}{message}")


def progress(message: str) -> None:
    """Progress for slow work: on stderr, and only when a person is watching (a terminal)."""
    if sys.stderr.isatty():
        line(message)
