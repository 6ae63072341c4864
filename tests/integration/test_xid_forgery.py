"""Issue 28, item 4, live: an unprivileged user crashes a program named like an Xid, the
kernel logs its segfault line with that name in it, and slurmkit counts no Xid.

The kernel here is the sandbox nodes' own (they share the host's kernel and its log).
The test account ``slurmkit-test`` (conftest.TEST_ACCOUNTS) runs a NULL dereference
compiled to files named ``NVRM: Xid (PCI:0000:ff:00): 79, x`` (the name after the
segfault line's `` in ``, its first 15 bytes the process name the line starts with)
and ``a<newline>NVRM: Xid (PCI:0000:19:00): 79, ...`` (a name that tries to start a
line of its own). The health check then reads the real ``/dev/kmsg`` with both PCI ids
given as this node's GPUs, and the real ``dmesg --time-format=iso`` text is parsed too.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit.gpu import xid
from slurmkit.health import checks, config, kernlog
from slurmkit.health.run import run
from tests.integration.conftest import TEST_ACCOUNTS, poll

USER = "slurmkit-test"
assert USER in TEST_ACCOUNTS
NAMES = (
    "NVRM: Xid (PCI:0000:ff:00): 79, x",
    "a\nNVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus.",
)
GPUS = frozenset({(0, 0xFF, 0), (0, 0x19, 0)})
CRASH = "int main(void) { volatile int *p = 0; return *p; }\n"


@pytest.fixture
def programs() -> Iterator[list[Path]]:
    """The crashing program under each forged name, in a folder the test user can enter."""
    folder = Path(tempfile.mkdtemp(prefix="slurmkit-xid-forgery."))
    try:
        folder.chmod(0o755)
        (folder / "crash.c").write_text(CRASH)
        compiler = shutil.which("cc") or shutil.which("gcc")
        assert compiler, "a C compiler (cc) is needed to make a program that really segfaults"
        built = folder / "crash"
        subprocess.run([compiler, "-O0", "-o", str(built), str(folder / "crash.c")], check=True)
        paths = []
        for name in NAMES:
            path = folder / name
            shutil.copy(built, path)
            path.chmod(0o755)
            paths.append(path)
        yield paths
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _crash_as_test_user(path: Path) -> None:
    account = pwd.getpwnam(USER)
    argv = ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}",
            "--clear-groups", str(path)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    assert done.returncode == -11, (done.returncode, done.stderr)  # SIGSEGV: a real fault


def test_a_program_named_like_an_xid_forges_nothing(
    programs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = Path("/proc/sys/debug/exception-trace").read_text().strip()
    assert trace != "0", "this kernel logs no segfault lines (debug.exception-trace = 0)"
    start = kernlog.read(None, timeout=10).position  # raises where /dev/kmsg is closed
    for path in programs:
        _crash_as_test_user(path)

    def forged_lines() -> list[xid.Record] | None:
        log = kernlog.read(start, timeout=10)
        found = [r for r in log.records if "segfault" in r.message]
        return found if len(found) >= 2 else None

    logged = poll(forged_lines, 10, "the kernel to log both segfault lines")
    assert isinstance(logged, list)
    assert any("in NVRM: Xid (PCI:0000:ff:00): 79, x[" in r.message for r in logged)
    assert any("\\x0aNVRM: Xid (PCI:0000:19:00): 79" in r.message for r in logged)

    dmesg = subprocess.run(["dmesg", "--time-format=iso"], capture_output=True, text=True,
                           check=True).stdout  # fmt: skip
    assert re.search(r"NVRM: Xid \(PCI:0000:ff:00\): 79", dmesg)  # the old match found it
    assert xid.parse(dmesg, gpus=GPUS).findings == ()

    monkeypatch.setattr(checks, "nvidia_smi", lambda: "/usr/bin/nvidia-smi")
    health = config.parse(f"state_dir = '{tmp_path}/state'\n[[check]]\ntype = 'xid'\n")
    report = run(health, mode="no-drain", env={"SLURMD_NODENAME": "node-3"},
                 ctx=checks.Context("node-3", gpus=GPUS))  # fmt: skip
    (result,) = report.results
    assert result.status == "pass", result
    assert "with 'NVRM: Xid' not from the driver" in result.detail
    assert os.geteuid() == 0  # /dev/kmsg was read as root, as slurmd runs health
