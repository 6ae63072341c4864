"""Text from processes, logs and other users, made safe to print on a person's terminal.

A process command line, a job name or a check's output line can hold escape
sequences: printed raw they retitle the terminal, hide lines, rewrite what was
printed before, or (on some terminals) answer back as typed input. Whatever
slurmkit prints for people and did not write itself goes through
:func:`printable`, which shows every control character as a visible escape.
JSON output needs none of this: the encoder escapes control characters already.
"""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the Unicode bidi overrides/isolates (which reorder what is shown)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character (newline and tab too) as ``\\xNN`` / ``\\uNNNN``."""
    return _UNSAFE.sub(_escape, text)
