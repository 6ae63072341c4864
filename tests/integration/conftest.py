"""Integration tests run against the real sandbox cluster, brought up once per session.

If the sandbox cannot start, the run fails: integration tests never skip
(a green run must mean slurmkit worked against real Slurm).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import pwd
import shlex
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from slurmkit import _proc, sandbox
from slurmkit.hostlist import expand
from slurmkit.sandbox.daemons import children_of
from slurmkit.sandbox.starters import add_users
from slurmkit.sandbox.versions import host_series
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm

pytestmark = pytest.mark.integration


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


def requested_slurm() -> str:
    """The version the session asked for: SLURMKIT_TEST_SLURM (22.05, 24.11, 26.05) or ""
    for the host's packages."""
    return os.environ.get("SLURMKIT_TEST_SLURM", "")


# Each version's session has a slot of its own: its sandbox dir, ports and node addresses,
# so the sessions of all versions can run side by side (scripts/test runs them so). Slot 0
# is the default sandbox's (the demo's: ports 17800+, 127.0.1.N), which tests never touch.
SLOTS = {"22.05": 1, "24.11": 2, "26.05": 3, "25.11": 4}
PORT_STRIDE = 400  # > the 300 ports a sandbox may claim (slurmd ports from port_base + 100)
SPARE_SLOT = 10  # + the session's slot: a throwaway sandbox a test starts beside its own


def slot_spec(slot: int, **kwargs: object) -> sandbox.SandboxSpec:
    """A sandbox in ``slot``: its own dir, ports and node addresses, timed for tests."""
    values: dict[str, object] = {
        "dir": Path(f"/tmp/slurmkit-test-{slot}"),
        "port_base": sandbox.SandboxSpec.port_base + PORT_STRIDE * slot,
        "net": 1 + slot,
        "profile": "test",
    }
    values.update(kwargs)
    return sandbox.SandboxSpec(**values)  # type: ignore[arg-type]


def session_slot() -> int:
    version = requested_slurm() or host_series()
    return SLOTS.get(version, 5)


def session_spec() -> sandbox.SandboxSpec:
    """The session's sandbox; SLURMKIT_SANDBOX_DIR chooses another dir (same slot)."""
    spec = slot_spec(session_slot(), slurm=requested_slurm())
    chosen = os.environ.get("SLURMKIT_SANDBOX_DIR")
    return dataclasses.replace(spec, dir=Path(chosen)) if chosen else spec


def spare_spec(
    cluster: sandbox.SandboxSpec, tmp_path: Path, **kwargs: object
) -> sandbox.SandboxSpec:
    """A second sandbox beside the session's, sharing no port and no node address with it."""
    return slot_spec(
        session_slot() + SPARE_SLOT, dir=tmp_path / "sbx", slurm=cluster.slurm, **kwargs
    )


def _log_tail(directory: Path, lines: int = 15) -> str:
    """The end of every log the sandbox wrote: why it did not start, for the test report."""
    parts = []
    for log in sorted((directory / "log").glob("*.log")):
        with contextlib.suppress(OSError):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log}\n" + "\n".join(tail))
    return "\n".join(parts)


# The accounts tests use besides root, made before any sandbox starts: the root of another
# Slurm version binds the host's /etc/passwd as the file was when its sandbox started, so an
# account made later (by a test of another version's session running at the same time) is
# unknown on that version's nodes ("Invalid --uid specification", ssh "Permission denied").
TEST_ACCOUNTS = {
    "slurmkit-test": ["--no-create-home", "--uid", "2001", "--shell", "/usr/sbin/nologin"],
    # password field "*": not locked ("!" is, and sshd without PAM refuses a locked account)
    "slurmkit-sudo": ["--no-create-home", "--shell", "/bin/sh", "--password", "*"],
    "sk-trainmate": ["--no-create-home", "--shell", "/usr/sbin/nologin"],
}


# The plain user tests submit jobs as. Not nobody: the sandbox enforces associations, and
# Slurm 25.11+ reads the name "nobody" as its own uid 99 (uid.c, SLURM_AUTH_NOBODY), so
# uid 65534 gets no association (26.05: "User 65534 not found", job refused).
PLAIN_USER = "slurmkit-test"


def ensure_test_accounts() -> None:
    """Make each missing test account (root only; scripts/test calls it before the sessions).

    /etc/shadow is rewritten only when an account's password field is not yet as wanted:
    a rewrite after a root's sandbox started is a file that root no longer sees.
    """
    for name, args in TEST_ACCOUNTS.items():
        if _proc.run(["getent", "passwd", name], timeout=30).returncode != 0:
            made = _proc.run(["useradd", *args, name], timeout=60)
            if made.returncode != 0 and "already exists" not in made.stderr:
                raise RuntimeError(f"useradd {name}: {made.stderr.strip()}")
        if "--password" in args:
            want = args[args.index("--password") + 1]
            shadow = _proc.run(["getent", "shadow", name], timeout=30).stdout.split(":")
            if len(shadow) < 2 or shadow[1] != want:
                _proc.run(["usermod", "--password", want, name], timeout=60)


@pytest.fixture(scope="session")
def cluster() -> Iterator[sandbox.SandboxSpec]:
    """The session's sandbox: reused when already up, else started here and stopped at the end.

    SLURMKIT_TEST_SLURM=26.05 runs the whole suite on that version (its own slot); its
    client wrappers go first on PATH for the session, so slurmkit's library calls, the
    tests' own Slurm calls and the jobs they submit all use that version.
    SLURMKIT_KEEP_SANDBOX=1 keeps a sandbox this session started (for the next session).
    A sandbox that does not start fails every test of this session with its logs; other
    versions' sessions, in their own slots, go on.
    """
    if os.geteuid() != 0:
        pytest.fail("integration tests need root to run the sandbox cluster")
    spec = session_spec()
    ensure_test_accounts()
    try:
        report = sandbox.up(spec)
        # Jobs of users without an association are refused (AccountingStorageEnforce):
        # `up` adds every account there is; a sandbox reused from before they were made not.
        add_users(report.spec, ["nobody", *TEST_ACCOUNTS])
    except Exception as exc:  # every cause is reported, with the logs
        pytest.fail(f"the sandbox in {spec.dir} did not start: {exc}\n{_log_tail(spec.dir)}")
    keep = report.already_up or bool(os.environ.get("SLURMKIT_KEEP_SANDBOX"))
    saved = {name: os.environ.get(name) for name in ("SLURM_CONF", "PATH")}
    for line in sandbox.env_lines(spec.dir):
        name, value = line.removeprefix("export ").split("=", 1)
        os.environ[name] = os.path.expandvars(shlex.split(value)[0])
    try:
        yield report.spec
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if not keep:
            sandbox.down(spec.dir)


SETTLE_TIMEOUT = 45.0  # > one slurmctld ping round (SlurmdTimeout=30 pings every 10 s)


def _not_responding() -> list[str]:
    """Nodes sinfo marks ``*`` (not responding), e.g. ``idle*``."""
    out = _proc.run(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=30).stdout  # not in call_log
    return sorted({n for n, _, s in (ln.partition(" ") for ln in out.splitlines()) if "*" in s})


@pytest.fixture(autouse=True)
def machine_share(request: pytest.FixtureRequest) -> Iterator[None]:
    """The machine, shared by the sessions of every version that run at once (scripts/test).

    Every test holds a shared lock; a test marked ``serial`` holds it alone, so it runs on a
    quiet machine while the other sessions wait between their tests: what it measures is a
    rate or a timing that load on 2 cores would change (a healthy pair read "slow" at 100
    against 214 MB/s while the others ran). A turnstile gives the serial test its turn:
    once it waits, no new test starts beside the running ones.
    """
    from slurmkit.locks import default_lock_dir

    folder = default_lock_dir()
    serial = request.node.get_closest_marker("serial") is not None
    with (
        open(folder / "itest-turnstile.lock", "a") as gate,
        open(folder / "itest-machine.lock", "a") as machine,
    ):
        fcntl.flock(gate, fcntl.LOCK_EX if serial else fcntl.LOCK_SH)
        fcntl.flock(machine, fcntl.LOCK_EX if serial else fcntl.LOCK_SH)
        if not serial:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield


@pytest.fixture(autouse=True)
def settled_nodes(request: pytest.FixtureRequest) -> None:
    """Start each test that uses the cluster with every node responding.

    Slurm 24.11 and 26.05 mark a node NOT_RESPONDING when it is resumed (``IDLE*``) until
    the controller's next ping, a second or more later; 22.05 does not. A test that resumes
    a node in its cleanup would otherwise hand the next one a node that cannot run jobs
    (CI saw ``faulty scan`` find node-1 "IDLE+NOT_RESPONDING" right after an undrain test).
    A node that stays unresponsive is left for the test to meet: this waits, it never fails.
    """
    if "cluster" not in request.fixturenames:
        return
    request.getfixturevalue("cluster")
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while _not_responding() and time.monotonic() < deadline:
        time.sleep(0.5)


@pytest.fixture(scope="session")
def slurm_version(cluster: sandbox.SandboxSpec) -> str:
    """The live cluster's release series (``22.05``), as ``sinfo --version`` reports it."""
    out = run_slurm(["sinfo", "--version"]).stdout.split()
    return ".".join(out[-1].split(".")[:2])


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


def usable_nodes(nodes: str = "node-[1-4]", timeout: float = 300.0) -> None:
    """Wait until every node of ``nodes`` can run jobs (one ``scontrol show node`` a poll).

    Nodes an earlier test's job left drained "Kill task failed" are resumed once idle: under
    load a job's step can outlive UnkillableStepTimeout and slurmctld drains its node (CI saw
    node-1 IDLE+COMPLETING+DRAIN right after a hung-controller test). The drain is Slurm's
    verdict on an earlier test's job, and the node runs nothing now.
    """

    def usable() -> bool:
        seen = query.nodes(expand(nodes))
        stuck = [
            n.name
            for n in seen
            if n.is_drained
            and n.state == "IDLE"
            and (n.reason or "").startswith("Kill task failed")
        ]
        if stuck:
            run_slurm(["scontrol", "update", f"NodeName={','.join(stuck)}", "State=RESUME"])
            return False
        return all(
            n.state in ("IDLE", "MIXED") and not n.flags & {"DRAIN", "NOT_RESPONDING", "COMPLETING"}
            for n in seen
        )

    poll(usable, timeout, f"{nodes} to accept jobs")


def submit(*args: str) -> str:
    """sbatch --parsable ARGS; returns the job id.

    Without an output option the log goes to /dev/null, not to slurm-N.out in the repo.
    """
    if not any(a.startswith(("-o", "--output")) for a in args):
        args = ("--output=/dev/null", *args)
    out = run_slurm(["sbatch", "--parsable", *_numeric_uid(args)]).stdout.strip()
    return out.split(";")[0]


def _numeric_uid(args: tuple[str, ...]) -> list[str]:
    """``--uid NAME`` as a number: 26.05's sbatch rejects ``--uid=nobody`` ("Invalid --uid
    specification") where 22.05 and 24.11 looked the name up."""
    out: list[str] = []
    for i, arg in enumerate(args):
        prev = args[i - 1] if i else ""
        if prev == "--uid" and not arg.isdigit():
            arg = str(pwd.getpwnam(arg).pw_uid)
        elif arg.startswith("--uid=") and not arg[6:].isdigit():
            arg = f"--uid={pwd.getpwnam(arg[6:]).pw_uid}"
        out.append(arg)
    return out


def recorded_pid(cluster: sandbox.SandboxSpec, daemon: str) -> int:
    """The pid ``sandbox up`` recorded for ``daemon`` (``node-node-2``, ``sshd-node-2``, ...)."""
    (pid,) = [d["pid"] for d in sandbox.status(cluster.dir).daemons if d["name"] == daemon]
    return int(pid)


def slurmd_pid(cluster: sandbox.SandboxSpec, node: str) -> int:
    """The node's slurmd, found by name below the node's tini (recorded by ``sandbox up``).

    Not by position: while a job runs, the node's tini (its subreaper) has the job's
    slurmstepd as a child beside the supervisor, and its processes may end while we walk
    (CI on 24.11 met one gone between listing and reading).
    """
    found: list[int] = []
    todo = [recorded_pid(cluster, f"node-{node}")]
    while todo:
        pid = todo.pop()
        try:  # a job's process below the tini may exit while we walk: skip it
            kids = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        todo += kids
        if os.path.basename(argv0) == b"slurmd":
            found.append(pid)
    assert len(found) == 1, f"{node}: slurmd processes {found}"
    return found[0]


def _sshd_pid(cluster: sandbox.SandboxSpec, node: str) -> int:
    """The node's sshd listener, as ``sandbox up`` recorded it.

    A sandbox started before ``up`` recorded sshd itself recorded its ``nsenter``: its child.
    """
    pid = recorded_pid(cluster, f"sshd-{node}")
    if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"nsenter"):
        (pid,) = children_of(pid)
    assert f"sshd_config-{node}" in Path(f"/proc/{pid}/cmdline").read_text()
    return pid


def _process_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]


def _ssh_hostname(cluster: sandbox.SandboxSpec, node: str) -> str:
    argv = ["ssh", "-F", str(cluster.ssh_config), "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
    return _proc.run([*argv, node, "hostname"], timeout=20).stdout.strip()


@contextlib.contextmanager
def frozen_sshd(cluster: sandbox.SandboxSpec, node: str) -> Iterator[None]:
    """``node``'s sshd stopped (SIGSTOP) for the block: the kernel still accepts connections,
    nothing answers, as on a wedged node. Resumed whatever happens, and ssh to the node is
    polled until it works again so later tests find it as before."""
    pid = _sshd_pid(cluster, node)
    os.kill(pid, signal.SIGSTOP)
    try:
        poll(lambda: _process_state(pid) == "T", 10, f"sshd {pid} to stop")
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
    poll(lambda: _process_state(pid) != "T", 10, f"sshd {pid} to run again")
    poll(lambda: _ssh_hostname(cluster, node) == node, 30, f"ssh {node} to work again")


def sacct_state(job_id: str) -> str:
    out = run_slurm(["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State"]).stdout.split()
    return out[0] if out else ""
