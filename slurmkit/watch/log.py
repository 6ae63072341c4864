"""``watch log``: a training that logs every few minutes and has not for ``--stale`` is hung.

A hang inside a collective ends in a timeout and a restart; a hang in a read from a
dead file system can last for hours with nothing failing. The log's modification time
is the cheapest heartbeat there is. The ``stat`` runs in a child with a timeout like
``watch fs``: the log usually lives on the very file system that may hang.
"""

from __future__ import annotations

from datetime import datetime

from slurmkit.grammar.duration import format_duration, human_duration
from slurmkit.watch.finding import WatchFinding
from slurmkit.watch.probe import DEFAULT_TIMEOUT, probe


def assess_log(path: str, mtime: float, stale: int, now: float) -> WatchFinding:
    age = int(now - mtime)
    when = datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds")
    shown = human_duration(age)
    healthy = age <= stale
    verdict = "" if healthy else f": stale (limit {format_duration(stale)})"
    message = f"last written {shown} ago ({when}){verdict}"
    details = {"mtime": when, "age_seconds": age, "stale_seconds": stale}
    return WatchFinding("log", f"log:{path}", f"log {path}", healthy, message, details)


def check_log(path: str, stale: int, now: float, timeout: float = DEFAULT_TIMEOUT) -> WatchFinding:
    answer = probe("stat", path, timeout)
    if answer.error:
        return WatchFinding(
            "log", f"log:{path}", f"log {path}", False, f"cannot stat: {answer.error}"
        )
    return assess_log(path, answer.values["mtime"], stale, now)
