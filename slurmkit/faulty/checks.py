"""The checks a faulty-node scan can run: per node (``faulty-node-check``) or across nodes.

``net`` and ``nccl-multi`` run across pairs of nodes (``net-check``, which also runs
the per-node checks of the same scan first, so one scan stays one job).
"""

from __future__ import annotations

from slurmkit.errors import UsageError

NODE_CHECKS = (
    "python", "cuda", "gpu-count", "gpu-mem", "nccl", "disk", "dcgmi", "gpu-health", "xid",
)  # fmt: skip
NET_CHECKS = ("net", "nccl-multi")
KNOWN = NODE_CHECKS + NET_CHECKS
# Checks whose job asks for the node's GPUs: under ConstrainDevices a job without them
# sees none, and gpu-health would read "no GPU". xid reads the kernel log: no GPU needed.
GPU_CHECKS = frozenset(
    {"cuda", "gpu-count", "gpu-mem", "nccl", "dcgmi", "gpu-health", "nccl-multi"}
)
DEFAULT = ("python", "cuda", "gpu-count", "gpu-mem", "nccl", "disk")
CMD = "cmd:"


def parse_checks(text: str) -> tuple[str, ...]:
    """``python,cmd:test -d /scratch`` -> the checks, validated; a usage error names the bad one.

    Commas separate checks, so a ``cmd:`` command cannot contain one (put it in a script).
    """
    checks = tuple(item.strip() for item in text.split(",") if item.strip())
    if not checks:
        raise UsageError("--checks: give at least one check")
    for check in checks:
        if check.startswith(CMD):
            if not check[len(CMD) :].strip():
                raise UsageError("--checks: cmd: needs a command, e.g. cmd:test -d /scratch")
        elif check not in KNOWN:
            raise UsageError(
                f"--checks: unknown check {check!r} (known: {', '.join(KNOWN)}, cmd:COMMAND)"
            )
    if len(set(checks)) != len(checks):
        raise UsageError("--checks: a check is listed twice")
    return checks


def needs_gpus(checks: tuple[str, ...]) -> bool:
    return any(check in GPU_CHECKS for check in checks)


def across_nodes(checks: tuple[str, ...]) -> list[str]:
    """The checks that run across pairs of nodes (they need at least 2)."""
    return [check for check in checks if check in NET_CHECKS]
