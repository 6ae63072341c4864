"""The quick node-local checks of ``slurmkit health``, each giving one :class:`Result`.

Statuses are the GPU parsers' (:mod:`slurmkit.gpu.findings`): ``pass``, ``fail``,
``skipped`` (not applicable here, and why: no NVIDIA driver) and ``unknown`` (slurmkit
could not tell, and why). Only ``fail`` drains a node; ``unknown`` never drains (a
node is not taken out of service because slurmkit could not read something) but
blocks an automatic resume and fails ``--no-drain``. ``skipped`` is never ``pass``:
it is reported as what it is, and neither drains nor blocks.

Every probe is bounded: commands run through :mod:`slurmkit._proc` with the check's
timeout, and ``statvfs`` (which blocks for ever on a hung network filesystem) runs in
a helper thread that is abandoned after the timeout.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from slurmkit import _proc
from slurmkit.gpu import smi, xid
from slurmkit.gpu.findings import FAIL, PASS, SKIPPED, UNKNOWN
from slurmkit.health.config import Check

NO_DRIVER = "no NVIDIA driver on this node (nvidia-smi not found)"
NODE_ENV = "SLURMKIT_HEALTH_NODE"
# nvidia-smi is looked for here too: slurmd gives its HealthCheckProgram a bare PATH
_GPU_PATH = "/usr/bin:/usr/local/bin:/usr/sbin:/bin:/usr/local/nvidia/bin"


@dataclass(frozen=True)
class Result:
    label: str
    kind: str
    status: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {
            "check": self.label,
            "type": self.kind,
            "status": self.status,
            "detail": self.detail,
        }


@dataclass
class Context:
    """What a check may need beyond its config: the node's name, the Xid "since"."""

    node: str
    xid_since: datetime | None = None


def run_check(check: Check, ctx: Context) -> Result:
    """One check's verdict; an unexpected OSError is ``unknown`` with its text, never a pass."""
    runner = _RUNNERS[check.kind]
    try:
        status, detail = runner(check, ctx)
    except OSError as exc:
        status, detail = UNKNOWN, f"{type(exc).__name__}: {exc.strerror or exc}"
    return Result(check.label, check.kind, status, detail)


# ---------------------------------------------------------------- disk


def _disk(check: Check, ctx: Context) -> tuple[str, str]:
    box: list[os.statvfs_result | OSError] = []

    def probe() -> None:
        try:
            box.append(os.statvfs(check.path))
        except OSError as exc:
            box.append(exc)

    worker = threading.Thread(target=probe, name="health-statvfs", daemon=True)
    worker.start()
    worker.join(check.timeout)
    if not box:
        return FAIL, f"{check.path}: statvfs did not answer within {check.timeout:g} s (hung?)"
    got = box[0]
    if isinstance(got, OSError):
        return FAIL, f"{check.path}: {got.strerror or got}"
    return judge_disk(check, got)


def judge_disk(check: Check, st: os.statvfs_result) -> tuple[str, str]:
    """pass, or fail naming every limit ``st`` is under (free as an unprivileged user sees it)."""
    free = st.f_bavail * st.f_frsize
    total = st.f_blocks * st.f_frsize
    problems = []
    if check.min_free is not None and free < check.min_free:
        problems.append(f"{human(free)} free < {human(check.min_free)}")
    if check.min_free_percent is not None:
        percent = 100.0 * st.f_bavail / st.f_blocks if st.f_blocks else 0.0
        if percent < check.min_free_percent:
            problems.append(f"{percent:.1f}% free < {check.min_free_percent:g}%")
    if check.min_free_inodes is not None and st.f_files and st.f_favail < check.min_free_inodes:
        problems.append(f"{st.f_favail} inodes free < {check.min_free_inodes}")
    if problems:
        return FAIL, f"{check.path}: {', '.join(problems)}"
    return PASS, f"{check.path}: {human(free)} of {human(total)} free, {st.f_favail} inodes free"


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1024 or unit == "T":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{size}B"  # pragma: no cover


# ---------------------------------------------------------------- GPUs


def nvidia_smi() -> str | None:
    """nvidia-smi's path, or None: a node without the driver (its GPU checks are skipped)."""
    return shutil.which("nvidia-smi") or shutil.which("nvidia-smi", path=_GPU_PATH)


def _gpu_count(check: Check, ctx: Context) -> tuple[str, str]:
    program = nvidia_smi()
    if program is None:
        return SKIPPED, NO_DRIVER
    done = _proc.run([program, "--query-gpu=index", "--format=csv,noheader"], timeout=check.timeout)
    return judge_gpu_count(check, done)


def judge_gpu_count(check: Check, done: _proc.Completed) -> tuple[str, str]:
    """A hang or a failure of nvidia-smi is a fail (a GPU off the bus does that), not a pass."""
    if done.timed_out:
        return FAIL, f"nvidia-smi did not answer within {check.timeout:g} s"
    lines = [ln.strip() for ln in done.stdout.splitlines() if ln.strip()]
    if done.returncode != 0:
        text = _last_line(done.stderr) or _last_line(done.stdout) or "no message"
        return FAIL, f"nvidia-smi failed (exit {done.returncode}): {text}"
    if not all(ln.isdigit() for ln in lines):
        bad = next(ln for ln in lines if not ln.isdigit())
        return UNKNOWN, f"unexpected nvidia-smi output: {bad[:60]!r}"
    if len(lines) != check.expected:
        return FAIL, f"{len(lines)} GPU(s) visible, {check.expected} expected"
    return PASS, f"{len(lines)} GPU(s)"


def _gpu_health(check: Check, ctx: Context) -> tuple[str, str]:
    program = nvidia_smi()
    if program is None:
        return SKIPPED, NO_DRIVER
    done = _proc.run([program, "-q"], timeout=check.timeout)
    if done.timed_out:
        return FAIL, f"nvidia-smi -q did not answer within {check.timeout:g} s"
    verdict = smi.parse(done.stdout or done.stderr)
    if done.returncode != 0 and verdict.status == PASS:
        return UNKNOWN, f"nvidia-smi -q exited {done.returncode}: {_last_line(done.stderr)}"
    return verdict.status, verdict.detail


def _xid(check: Check, ctx: Context) -> tuple[str, str]:
    if nvidia_smi() is None:
        return SKIPPED, NO_DRIVER
    dmesg = shutil.which("dmesg") or shutil.which("dmesg", path="/usr/bin:/bin")
    if dmesg is None:
        return UNKNOWN, "dmesg not found: cannot read the kernel log"
    done = _proc.run([dmesg, "--time-format", "iso"], timeout=check.timeout)
    if done.timed_out or done.returncode != 0:
        why = "timed out" if done.timed_out else _last_line(done.stderr) or "no message"
        return UNKNOWN, f"dmesg failed: {why}"
    verdict = xid.parse(done.stdout, since=ctx.xid_since)
    return verdict.status, verdict.detail


# ---------------------------------------------------------------- cmd


def cmd_argv(check: Check) -> list[str]:
    """The argv as configured; ``/bin/sh -c`` only for a ``shell =`` check."""
    return ["/bin/sh", "-c", check.shell] if check.shell is not None else list(check.argv)


def _cmd(check: Check, ctx: Context) -> tuple[str, str]:
    argv = cmd_argv(check)
    shown = check.shell if check.shell is not None else " ".join(check.argv)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    env = {**os.environ, NODE_ENV: ctx.node}
    try:
        done = _proc.run(argv, timeout=check.timeout, env=env)
    except FileNotFoundError:
        return FAIL, f"{shown!r}: {argv[0]} not found"
    except PermissionError:
        return FAIL, f"{shown!r}: {argv[0]} is not executable"
    if done.timed_out:
        return FAIL, f"{shown!r} did not finish within {check.timeout:g} s"
    if done.returncode != 0:
        said = _last_line(done.stderr) or _last_line(done.stdout)
        return FAIL, f"{shown!r} exited {done.returncode}" + (f": {said}" if said else "")
    return PASS, f"{shown!r} exited 0"


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:120] if lines else ""


_RUNNERS: dict[str, Callable[[Check, Context], tuple[str, str]]] = {
    "disk": _disk,
    "gpu-count": _gpu_count,
    "gpu-health": _gpu_health,
    "xid": _xid,
    "cmd": _cmd,
}
