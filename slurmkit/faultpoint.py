"""Named points where a test can make slurmkit die, exactly between two steps.

The fault suite must prove that a ``kill -9`` (or the SIGTERM that ``timeout`` and
cron send) landing between "the cluster changed" and "the record was written"
loses nothing. A kill timed from outside lands anywhere; a named point lands where
the test means. ``SLURMKIT_FAULT_POINT=<name>`` makes the process signal itself
when it reaches ``<name>``; ``SLURMKIT_FAULT_SIGNAL`` picks the signal (``KILL``,
the default, or ``TERM``). With the variable unset, ``reached`` is one dict lookup.

Only the test suite sets these variables. Root running slurmkit from cron does not
get hurt by them: an attacker who controls root's environment has won already.
"""

from __future__ import annotations

import os
import signal

ENV_POINT = "SLURMKIT_FAULT_POINT"
ENV_SIGNAL = "SLURMKIT_FAULT_SIGNAL"

_SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM}


def reached(name: str) -> None:
    """Die here with the configured signal if the test asked for this point."""
    if os.environ.get(ENV_POINT) != name:
        return
    sig = _SIGNALS.get(os.environ.get(ENV_SIGNAL, "KILL").upper(), signal.SIGKILL)
    os.kill(os.getpid(), sig)
    if sig == signal.SIGTERM:
        # a handler may have turned TERM into an exception already; if it did not
        # (the default action is to die), this line is never reached
        return
    signal.pause()  # SIGKILL is asynchronous in principle; never run past the point
