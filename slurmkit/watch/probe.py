"""``statvfs``/``stat`` of a path in a child process with a timeout.

A hung mount (NFS server gone, Lustre OST down) blocks ``statvfs`` in the kernel,
often for good. In a thread that would leave the watchdog unable to exit, and a
thread cannot be killed; in a child process (``python -c``, through
:mod:`slurmkit._proc`) the timeout kills the child (SIGKILL, which NFS/Lustre honour
for killable waits) and the watchdog reports "no answer", an alert, instead of
hanging like the mount. The child costs ~20 ms of Python start-up per path. It runs
isolated (:func:`slurmkit.safeexec.own_python`): ``python -c`` would import ``json``
from whatever folder the watchdog was started in.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from slurmkit import _proc, safeexec

DEFAULT_TIMEOUT = 30.0

# argv[1]: "statvfs" or "stat"; argv[2]: the path. Prints one JSON object either way.
_CHILD = """
import json, os, sys
mode, path = sys.argv[1], sys.argv[2]
try:
    if mode == "statvfs":
        s = os.statvfs(path)
        out = {"frsize": s.f_frsize, "blocks": s.f_blocks, "bfree": s.f_bfree,
               "bavail": s.f_bavail, "files": s.f_files, "ffree": s.f_ffree,
               "favail": s.f_favail}
    else:
        s = os.stat(path)
        out = {"mtime": s.st_mtime, "size": s.st_size}
except OSError as exc:
    out = {"error": exc.strerror or str(exc)}
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Probe:
    """The child's answer, or ``error`` (no such file, timeout, child crashed)."""

    values: dict[str, float]
    error: str | None = None


def probe(mode: str, path: str, timeout: float = DEFAULT_TIMEOUT) -> Probe:
    argv = safeexec.own_python("-c", _CHILD, mode, path)
    try:
        result = _proc.run(argv, timeout=timeout)
    except OSError as exc:
        return Probe({}, f"cannot start {sys.executable}: {exc.strerror or exc}")
    if result.timed_out:
        return Probe({}, f"no answer within {timeout:g} s (hung mount?)")
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        first = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return Probe({}, f"{mode} failed (exit {result.returncode}): {first}")
    if "error" in data:
        return Probe({}, str(data["error"]))
    return Probe({k: float(v) for k, v in data.items()})
