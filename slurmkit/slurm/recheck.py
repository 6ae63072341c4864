""" "No answer" is not "not done": ask Slurm again, within a bound, before deciding.

A hung slurmctld (SIGSTOP, overload) accepts a connection, takes the request into
its socket backlog and answers nothing; the client gives up after MessageTimeout
(10 s by default) with "Socket timed out". When slurmctld wakes up it still carries
out the request. So after a state change that timed out, the command's outcome is
*unknown*, and the only honest answer is the one read back afterwards. This module
holds the two pieces every state-changing command needs for that:
:func:`no_answer` (was the failure a silence, not a refusal?) and :func:`read_again`
(re-read, bounded by a deadline, saying on stderr what it waits for).
"""

from __future__ import annotations

import functools
import os
import re
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from slurmkit.errors import (
    ControllerUnreachable,
    NotFound,
    PermissionDenied,
    SlurmError,
    SlurmkitError,
    SlurmNotInstalled,
    SlurmParseError,
)
from slurmkit.files import read_bounded
from slurmkit.slurm import refusals

T = TypeVar("T")
Notify = Callable[[str], None]

# Slurm's own MessageTimeout when slurm.conf sets none (slurm.conf(5)).
SLURM_MESSAGE_TIMEOUT = 10.0
# Where Slurm's clients look for their config when $SLURM_CONF is unset: Debian's and
# Ubuntu's packages, then the configless cache slurmd keeps on a compute node.
_CONF_PATHS = ("/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf", "/run/slurm/conf/slurm.conf")
_CONF_MAX_BYTES = 16 << 20
_MESSAGE_TIMEOUT = re.compile(rb"^[ \t]*MessageTimeout[ \t]*=[ \t]*([0-9]+)", re.I | re.M)
_PAUSE = 1.0


def window(env: Mapping[str, str] | None = None) -> float:
    """How long to keep asking after a change got no answer: two MessageTimeouts.

    That is two silences of a controller that is still hung, or many quick refusals of
    one that is restarting; a command never waits longer than this plus one Slurm call.
    """
    return 2 * message_timeout(env)


def message_timeout(env: Mapping[str, str] | None = None) -> float:
    """The MessageTimeout the Slurm clients of this process use, in seconds.

    Read from the slurm.conf those clients read, not from ``scontrol show config``: this
    is needed right after a silence, when the controller that would answer that query is
    the one that is hung. The file's value is also the one that sets the client's own
    timeout. A file that cannot be read or sets none gives Slurm's default (10 s).
    """
    env = os.environ if env is None else env
    named = env.get("SLURM_CONF", "")
    paths = (named,) if named else _CONF_PATHS
    for path in paths:
        found = _message_timeout_in(path)
        if found is not None:
            return found
    return SLURM_MESSAGE_TIMEOUT


@functools.lru_cache(maxsize=8)
def _message_timeout_in(path: str) -> float | None:
    """The file's MessageTimeout; None when it is unreadable, or its default when unset."""
    try:
        text = read_bounded(path, what="slurm.conf", max_bytes=_CONF_MAX_BYTES, follow_links=True)
    except (OSError, SlurmkitError):  # missing, a FIFO, too big: Slurm's default
        return None
    match = _MESSAGE_TIMEOUT.search(text)
    seconds = int(match.group(1)) if match else 0
    return float(seconds) if seconds > 0 else SLURM_MESSAGE_TIMEOUT


def no_answer(exc: BaseException) -> bool:
    """True when Slurm may have done what was asked although the client saw no answer.

    Only a known refusal (:data:`slurmkit.slurm.refusals.REFUSALS`: permission, an
    invalid id, state or value) is an answer that nothing was done; so is a connection
    that could not even be made ("connect failure", "Connection refused": no request
    left). Any other failure of a state-changing call is no answer, whatever its words:
    a timeout, a broken connection, 22.05's "Unexpected message received" from a stopped
    slurmctld, or a text no version has shown yet. The caller reads the state back.
    """
    if not isinstance(exc, SlurmError) or isinstance(exc, (SlurmNotInstalled, SlurmParseError)):
        return False
    text = f"{exc}\n{exc.stderr}"
    if isinstance(exc, ControllerUnreachable):
        return not refusals.not_sent(text)
    if isinstance(exc, (PermissionDenied, NotFound)):
        return False
    command = os.path.basename(exc.argv[0]) if exc.argv else ""
    return refusals.meaning(text, command) == refusals.NO_ANSWER


def _silent(exc: SlurmError) -> bool:
    """A read that timed out or lost its connection: worth asking again within the window."""
    return isinstance(exc, ControllerUnreachable) and not refusals.not_sent(f"{exc}\n{exc.stderr}")


def read_again(
    read: Callable[[], T],
    *,
    what: str,
    notify: Notify | None = None,
    within: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    until: Callable[[T], bool] | None = None,
    retry_silence: bool = True,
) -> tuple[T | None, SlurmError | None]:
    """Call ``read`` until it answers or ``within`` seconds have passed.

    Returns ``(answer, None)`` or ``(None, last_error)``. Only a silence is retried;
    another Slurm error (e.g. NotFound) is returned at once, since asking again would
    get the same answer. ``notify`` gets one line saying what is awaited.

    With ``until``, an answer it rejects is read again until the deadline, and the last
    answer is returned: a controller that wakes up may answer a query before it has
    carried out the request still in its backlog, so "not there yet" is no proof of
    "never done" until the whole window has passed.

    ``retry_silence`` False: a silence is returned at once too (only ``until``'s rejected
    answers are read again), for a command settling an older intent, which should cost
    one timeout on a controller that is still hung, not the window.
    """
    within = window() if within is None else within
    if notify is not None:
        notify(f"no answer from Slurm: reading {what} again to see what was done (<= {within:g} s)")
    deadline = clock() + within
    last: SlurmError | None = None
    answered = False
    answer: T | None = None
    while True:
        try:
            answer, answered = read(), True
            if until is None or until(answer):
                return answer, None
        except SlurmError as exc:
            last = exc
            if not (retry_silence and _silent(exc)):
                return None, exc
        if clock() + _PAUSE >= deadline:
            return (answer, None) if answered else (None, last)
        sleep(_PAUSE)
