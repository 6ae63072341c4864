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
from dataclasses import dataclass, field

from slurmkit import _proc
from slurmkit.gpu import pci, smi, xid
from slurmkit.gpu.findings import FAIL, PASS, SKIPPED, UNKNOWN
from slurmkit.health import kernlog
from slurmkit.health.config import Check

NO_DRIVER = "no NVIDIA driver on this node (nvidia-smi not found)"
NODE_ENV = "SLURMKIT_HEALTH_NODE"
# nvidia-smi is looked for here too: slurmd gives its HealthCheckProgram a bare PATH
_GPU_PATH = "/usr/bin:/usr/local/bin:/usr/sbin:/bin:/usr/local/nvidia/bin"
PCI_SYSFS = "/sys/bus/pci"
NVIDIA_SYSFS = "/sys/bus/pci/drivers/nvidia"


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
    """What a check may need beyond its config, and what the xid check hands back.

    ``xid_after``: where the last run stopped reading the kernel log; ``gpus``: this
    node's GPUs (None: ask the node); ``read_log``: the kernel log reader (a seam).
    The xid check sets ``xid_position`` to the last record it read.
    """

    node: str
    xid_after: kernlog.Position | None = None
    gpus: frozenset[pci.Address] | None = None
    read_log: Callable[..., kernlog.KernelLog] | None = None  # None: kernlog.read
    xid_position: kernlog.Position | None = None
    notes: list[str] = field(default_factory=list)


class _Unknown(Exception):
    """A probe that could not tell: the check is unknown, with this text."""


def run_check(check: Check, ctx: Context) -> Result:
    """One check's verdict; an unexpected OSError is ``unknown`` with its text, never a pass."""
    runner = _RUNNERS[check.kind]
    try:
        status, detail = runner(check, ctx)
    except _Unknown as exc:
        status, detail = UNKNOWN, str(exc)
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
    """The driver's Xid records on this node's GPUs after the last run's position."""
    program = nvidia_smi()
    if program is None:
        return SKIPPED, NO_DRIVER
    gpus = ctx.gpus if ctx.gpus is not None else node_gpus(program, check.timeout)
    if not gpus:
        return SKIPPED, xid.NO_GPU
    try:
        log = (ctx.read_log or kernlog.read)(ctx.xid_after, timeout=check.timeout)
    except kernlog.Unreadable as exc:
        return UNKNOWN, f"cannot read the kernel log: {exc}"
    ctx.xid_position = log.position
    ctx.notes.extend(f"xid: {note}" for note in log.notes)
    where = f" ({log.source}, after the last run)" if ctx.xid_after else f" ({log.source})"
    verdict = xid.verdict(xid.scan(log.records, gpus=gpus), where=where)
    return verdict.status, verdict.detail


def node_gpus(program: str, timeout: float) -> frozenset[pci.Address]:
    """The PCI addresses of the GPUs bound to the NVIDIA driver.

    sysfs first: no process to hang (nvidia-smi does, with a GPU off the bus, the very
    Xid that matters) and every GPU whatever the cgroup shows; nvidia-smi's bus ids
    only where sysfs has no PCI bus (a chroot without /sys).
    """
    if os.path.isdir(PCI_SYSFS):
        try:
            names = os.listdir(NVIDIA_SYSFS)
        except FileNotFoundError:
            return frozenset()  # the driver is not loaded: no GPU of its
        return frozenset(a for a in map(pci.address, names) if a is not None)
    done = _proc.run([program, "--query-gpu=pci.bus_id", "--format=csv,noheader"], timeout=timeout)
    if done.timed_out or done.returncode != 0:
        why = (
            "timed out" if done.timed_out else _last_line(done.stderr) or f"exit {done.returncode}"
        )
        raise _Unknown(f"cannot list this node's GPUs: nvidia-smi --query-gpu=pci.bus_id: {why}")
    found = [pci.address(line) for line in done.stdout.splitlines() if line.strip()]
    if None in found:
        raise _Unknown(f"unexpected nvidia-smi bus ids: {done.stdout.strip()[:80]!r}")
    return frozenset(a for a in found if a is not None)


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
