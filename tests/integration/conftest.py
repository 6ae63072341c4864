"""Integration tests run against the real sandbox cluster, brought up once per session.

If the sandbox cannot start, the run fails: integration tests never skip
(a green run must mean slurmkit worked against real Slurm).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.slurm._exec import run_slurm

pytestmark = pytest.mark.integration


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def cluster() -> Iterator[sandbox.SandboxSpec]:
    """The default sandbox: reused when already up, else started here and stopped at the end.

    SLURMKIT_KEEP_SANDBOX=1 keeps a sandbox this session started (for parallel sessions).
    """
    if os.geteuid() != 0:
        pytest.fail("integration tests need root to run the sandbox cluster")
    directory = Path(os.environ.get("SLURMKIT_SANDBOX_DIR", str(sandbox.DEFAULT_DIR)))
    report = sandbox.up(sandbox.SandboxSpec(dir=directory))
    keep = report.already_up or bool(os.environ.get("SLURMKIT_KEEP_SANDBOX"))
    old_conf = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(report.spec.slurm_conf)
    try:
        yield report.spec
    finally:
        if old_conf is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old_conf
        if not keep:
            sandbox.down(directory)


def poll(check: Callable[[], object], timeout: float = 60.0, what: str = "condition") -> object:
    """Return ``check()``'s first truthy value; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


def submit(*args: str) -> str:
    """sbatch --parsable ARGS; returns the job id.

    Without an output option the log goes to /dev/null, not to slurm-N.out in the repo.
    """
    if not any(a.startswith(("-o", "--output")) for a in args):
        args = ("--output=/dev/null", *args)
    out = run_slurm(["sbatch", "--parsable", *args]).stdout.strip()
    return out.split(";")[0]


def sacct_state(job_id: str) -> str:
    out = run_slurm(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State"]).stdout.split()
    return out[0] if out else ""
