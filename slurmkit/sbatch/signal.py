"""``--signal=[{R|B}:]SIG[@TIME]`` read as sbatch reads it (``get_signal_opts`` and
``sig_name2num`` in src/common/proc_args.c, alike in 22.05.8 and 25.11.7).

The flags are letters before one optional colon, the signal is a number or a name
(``SIG`` optional, any case), and TIME is whole seconds. Anything else, such as
``B:TERM@00:30`` (a clock time), makes sbatch stop with "Invalid --signal
specification", refusing the whole script. Reading the flags from the last colon
instead took that ``30`` for the signal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# sig_name2num's table; CHLD and PIPE came after 22.05, so they are taken as known.
NAMES = frozenset(
    [
        "HUP",
        "INT",
        "QUIT",
        "ABRT",
        "KILL",
        "ALRM",
        "TERM",
        "CHLD",
        "USR1",
        "USR2",
        "PIPE",
        "URG",
        "CONT",
        "STOP",
        "TSTP",
        "TTIN",
        "TTOU",
        "XCPU",
    ]
)
# The numbers job scripts write for the usual signals (Linux numbering), by name.
NUMBERS = {"1": "HUP", "2": "INT", "3": "QUIT", "10": "USR1", "12": "USR2", "15": "TERM"}
# A value with other characters is a template's blank ($SIG, <signal>, {{ sig }}): unknown.
_JUDGED = re.compile(r"[A-Za-z0-9:@+]+")


@dataclass(frozen=True)
class SignalSpec:
    batch: bool  # B: the batch shell gets it (else the steps alone)
    signal: str  # a name without SIG (TERM), or the number as written when unnamed
    readable: bool  # False: sbatch refuses the script


def read(value: str) -> SignalSpec | None:
    """The spec sbatch reads from ``value``; None for a blank to fill in."""
    if not _JUDGED.fullmatch(value):
        return None
    rest, batch = value, False
    for letter in "RBR":  # R, then B, then R again: RB, BR, R:, B:
        if rest[:1].upper() == letter:
            batch = batch or letter == "B"
            rest = rest[1:]
    rest = rest.removeprefix(":")
    name, at, seconds = rest.partition("@")
    signal = _signal_name(name)
    readable = bool(signal) and (not at or _seconds(seconds))
    return SignalSpec(batch, signal or name, readable)


def _signal_name(text: str) -> str:
    """The signal's name, or "" where sig_name2num finds none (0: refused)."""
    if text.isdigit():  # cast to 16 bits, then 0 is refused
        return NUMBERS.get(text.lstrip("0"), text) if int(text) % 0x10000 else ""
    name = text.upper().removeprefix("SIG")
    return name if name in NAMES else ""


def _seconds(text: str) -> bool:
    """strtol base 10 over the whole rest, 0 to 65535 ("" is 0)."""
    if text == "":
        return True
    digits = text.removeprefix("+")
    return digits.isdigit() and int(digits) <= 0xFFFF
