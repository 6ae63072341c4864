"""Start, find and stop the sandbox's daemons by pid, never by name.

``down`` must stop only what ``up`` started: every process is recorded in the
sandbox's ``state.json`` as it is spawned, a pid is trusted only while
``/proc/<pid>/cmdline`` still contains what we launched (pids get reused), and
a zombie counts as dead (in containers PID 1 may never reap our orphans).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from slurmkit import _proc
from slurmkit.errors import EnvironmentProblem, SlurmkitError
from slurmkit.files import read_text_bounded, write_atomic
from slurmkit.sandbox.spec import DamagedStateFile, SandboxSpec, read_json_object

# A command line in /proc is at most ARG_MAX (2 MiB with the usual 8 MiB stack).
PROC_MAX_BYTES = 4 * 1024 * 1024

POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Daemon:
    """A process ``up`` started: ``match`` is a piece of its command line that proves identity."""

    name: str
    pid: int
    match: str

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "pid": self.pid, "match": self.match}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Daemon:
        return cls(str(data["name"]), int(data["pid"]), str(data["match"]))  # type: ignore[call-overload]


def proc_text(path: Path) -> str:
    """A /proc file's text (its size reads as 0; it is read to its end, bounded)."""
    return read_text_bounded(path, what="/proc file", max_bytes=PROC_MAX_BYTES, errors="replace")


def is_alive(daemon: Daemon) -> bool:
    proc = Path("/proc", str(daemon.pid))
    try:
        stat = proc_text(proc / "stat")
        cmdline = proc_text(proc / "cmdline").replace("\0", " ")
    except (OSError, SlurmkitError):
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state not in ("Z", "X") and daemon.match in cmdline


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``: how we find the host pid of a node namespace's PID 1."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = proc_text(entry / "stat").rsplit(")", 1)[-1].split()
        except (OSError, SlurmkitError):
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def _reap(pid: int) -> None:
    """Collect our own child's exit status so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop_all(daemons: list[Daemon], timeout: float = 15.0) -> list[Daemon]:
    """TERM every live daemon at once, wait for all, KILL stragglers; return those that were live.

    All at once because stopping 32 nodes one after another takes a minute.
    """
    live = [d for d in daemons if is_alive(d)]
    for daemon in daemons:
        _reap(daemon.pid)
    for daemon in live:
        with contextlib.suppress(ProcessLookupError):
            os.kill(daemon.pid, signal.SIGTERM)

    def all_dead() -> bool:
        for daemon in live:
            _reap(daemon.pid)
        return not any(is_alive(d) for d in live)

    try:
        wait_for(all_dead, timeout, "daemons to stop")
    except EnvironmentProblem:
        for daemon in live:
            if is_alive(daemon):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(daemon.pid, signal.SIGKILL)
        wait_for(all_dead, 5.0, "daemons to die after SIGKILL")
    return live


def wait_for(ready: Callable[[], bool], timeout: float, what: str, hint: str = "") -> None:
    """Poll ``ready`` until it is true; a clear error naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        if time.monotonic() >= deadline:
            extra = f" ({hint})" if hint else ""
            raise EnvironmentProblem(f"timed out after {timeout:g} s waiting for {what}{extra}")
        time.sleep(POLL_SECONDS)


def port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def require_port_free(host: str, port: int, what: str) -> None:
    if port_open(host, port):
        raise EnvironmentProblem(
            f"port {host}:{port} for {what} is already in use "
            "(another sandbox running? try --port-base or 'slurmkit sandbox down')"
        )


# --------------------------------------------------------------------------- state file
def load_daemons(spec: SandboxSpec) -> list[Daemon]:
    """The daemons ``up`` recorded; a damaged state.json is one clear error."""
    if not os.path.lexists(spec.state_file):
        return []
    data = read_json_object(spec.state_file)
    entries = data.get("daemons", [])
    bad = f"{spec.state_file} is damaged (%s); stop what it started by hand and remove {spec.dir}"
    if not isinstance(entries, list):
        raise DamagedStateFile(bad % "'daemons' is not a list")
    daemons = []
    for entry in entries:
        if not (
            isinstance(entry, dict)
            and type(entry.get("pid")) is int
            and entry["pid"] > 1
            and isinstance(entry.get("name"), str)
            and isinstance(entry.get("match"), str)
            and entry["match"]
        ):
            raise DamagedStateFile(bad % f"bad entry {json.dumps(entry)[:80]}")
        daemons.append(Daemon.from_json(entry))
    return daemons


def record(spec: SandboxSpec, daemon: Daemon) -> None:
    daemons = [*load_daemons(spec), daemon]
    write_atomic(spec.state_file, json.dumps({"daemons": [d.to_json() for d in daemons]}, indent=2))


def slurm_env(spec: SandboxSpec) -> dict[str, str]:
    env = {"SLURM_CONF": str(spec.slurm_conf)}
    if spec.root or spec.prefix:  # the version's clients are the wrappers in <dir>/bin
        env["PATH"] = f"{spec.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


def spawn(
    spec: SandboxSpec,
    name: str,
    argv: list[str],
    match: str,
    extra_env: dict[str, str] | None = None,
) -> Daemon:
    env = {**os.environ, **slurm_env(spec), **(extra_env or {})}
    proc = _proc.spawn(argv, env=env, log_path=str(spec.path("log", f"{name}.out")))
    daemon = Daemon(name, proc.pid, match)
    record(spec, daemon)
    return daemon


def log_hint(spec: SandboxSpec, name: str) -> str:
    return f"see {spec.path('log', name + '.out')}"


def must(result: _proc.Completed, what: str) -> _proc.Completed:
    """The cause in one line: the first line saying ERROR (MariaDB's last one is a bare
    "[ERROR] Aborting", after the one that says why), else the last line."""
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines() or ["no output"]
        errors = [ln for ln in lines if "ERROR" in ln]
        msg = errors[0] if errors else lines[-1]
        raise EnvironmentProblem(f"{what} failed (exit {result.returncode}): {msg.strip()}")
    return result
