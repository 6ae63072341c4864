"""``slurmkit undrain`` and ``nodes drained`` on the sandbox, over pdsh and ssh (paramiko).

Each test drains idle nodes itself with its own reasons, limits undrain to
them with ``--nodes`` (other engineers share the cluster) and resumes in a
``finally`` whatever it left drained. Stray processes run as a non-system
user (``slurmkit-test``, created if missing) started through the node's sshd;
a "down sshd" is a temporary ssh config sending one node to a closed port.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from slurmkit import _proc, locks, sandbox
from slurmkit.errors import NotFound
from slurmkit.hostlist import fold
from slurmkit.slurm import _exec, backend, query
from slurmkit.slurm._exec import run_slurm
from slurmkit.slurm.records import FINISHED_JOB_STATES
from slurmkit.undrain.select import DEFAULT_REASON
from tests.integration.conftest import poll, recorded_pid, submit

KTF = "Kill task failed"
TEST_USER = "slurmkit-test"
TEST_UID = 2001
SSH_TRANSPORTS = ["pdsh", "ssh"]


def _idle_nodes(count: int) -> list[str]:
    """``count`` nodes that are idle right now (no jobs, no flags); waits for them."""

    def free() -> list[str] | None:
        idle = [n.name for n in query.nodes() if n.state == "IDLE" and not n.flags]
        return idle[:count] if len(idle) >= count else None

    return poll(free, 180, f"{count} idle nodes")  # type: ignore[return-value]


@contextmanager
def _drained(reasons: dict[str, str]) -> Iterator[None]:
    """Drain nodes with the given reasons; afterwards resume those still drained with ours."""
    for reason in set(reasons.values()):
        names = fold([n for n, r in reasons.items() if r == reason])
        run_slurm(["scontrol", "update", f"nodename={names}", "state=drain", f"reason={reason}"])
    try:
        poll(
            lambda: all(n.is_drained for n in query.nodes(fold(list(reasons)))),
            120,
            "drained (not draining) nodes",
        )
        yield
    finally:
        ours = [
            n.name
            for n in query.nodes(fold(list(reasons)), exact_reasons=True)
            if "DRAIN" in n.flags and n.reason == reasons[n.name]
        ]
        if ours:
            run_slurm(["scontrol", "update", f"nodename={fold(ours)}", "state=undrain"])


def _state(name: str):
    (node,) = query.nodes(name)
    return node


def _ssh(node: str, command: str) -> _proc.Completed:
    return _proc.run(["ssh", node, command], timeout=30)


@pytest.fixture(scope="module")
def test_user() -> int:
    """A non-system user for stray processes; /etc/passwd is shared with the nodes."""
    found = _proc.run(["getent", "passwd", TEST_USER])
    if found.returncode != 0:
        made = _proc.run(
            [
                "useradd",
                "--no-create-home",
                "--uid",
                str(TEST_UID),
                "--shell",
                "/usr/sbin/nologin",
                TEST_USER,
            ]
        )
        assert made.returncode == 0, made.stderr
        found = _proc.run(["getent", "passwd", TEST_USER])
    return int(found.stdout.split(":")[2])


@pytest.fixture
def stray(test_user: int) -> Iterator[Callable[[str], int]]:
    """Start a detached process of the test user on a node (through its sshd); returns its pid."""
    started: list[str] = []

    def start(node: str) -> int:
        gid = _proc.run(["id", "-g", TEST_USER]).stdout.strip()
        launched = _ssh(
            node,
            f"setsid setpriv --reuid={test_user} --regid={gid} --clear-groups "
            "sleep 600 >/dev/null 2>&1 < /dev/null &",
        )
        assert launched.returncode == 0, launched.stderr
        started.append(node)
        pids = _ssh(node, f"pgrep -u {test_user} -x -f 'sleep 600'").stdout.split()
        assert pids, f"no stray process on {node}"
        return int(pids[-1])

    yield start
    for node in started:
        _ssh(node, f"pkill -KILL -u {test_user} || true")


def _alive(node: str, pid: int) -> bool:
    return _ssh(node, f"kill -0 {pid}").returncode == 0


def _undrain(run_cli, nodes: list[str], *args: str, exit_code: int | None = 0) -> dict:
    result = run_cli("undrain", "-w", fold(nodes), "--json", *args, exit_code=exit_code)
    return json.loads(result.stdout)


def _outcomes(report: dict) -> dict[str, dict]:
    return {o["node"]: o for o in report["nodes"]}


@pytest.mark.parametrize("via", SSH_TRANSPORTS)
@pytest.mark.smoke
def test_only_kill_task_failed_nodes_return(cluster: sandbox.SandboxSpec, run_cli, via) -> None:
    a, b, c = _idle_nodes(3)
    other = f"sk-test ECC error {uuid.uuid4().hex[:6]}"
    with _drained({a: KTF, b: KTF, c: other}):
        report = _undrain(run_cli, [a, b, c], "--yes", "--via", via)
        assert report["transport"] == via
        assert set(_outcomes(report)) == {a, b}
        assert all(o["returned"] and o["found"].startswith("no leftovers") for o in report["nodes"])
        assert all("GPU check skipped" in o["found"] for o in report["nodes"])
        assert "DRAIN" not in _state(a).flags and "DRAIN" not in _state(b).flags
        assert _state(c).is_drained and _state(c).reason == other
        assert report["slurm_calls"] == 5


@pytest.mark.parametrize("via", SSH_TRANSPORTS)
def test_processes_that_are_no_jobs_are_never_leftovers(
    cluster: sandbox.SandboxSpec, run_cli, stray, via
) -> None:
    """Issue 14 finding 1: an admin's detached process on a drained node (a user's and
    root's, started over the node's sshd, outside any job) is neither listed nor killed,
    even with --kill; the node is clean and returns."""
    (a,) = _idle_nodes(1)
    with _drained({a: KTF}):
        pid = stray(a)
        launched = _ssh(a, "setsid sleep 602 </dev/null >/dev/null 2>&1 & echo $!")
        root_pid = int(launched.stdout.split()[-1])
        try:
            report = _undrain(run_cli, [a], "--yes", "--via", via, "--kill", "--grace", "2")
            outcome = _outcomes(report)[a]
            assert outcome["returned"] and outcome["verdict"] == "clean", outcome
            assert outcome["processes"] == [] and outcome["killed"] == []
            assert _alive(a, pid) and _alive(a, root_pid)
            assert "DRAIN" not in _state(a).flags
        finally:
            _ssh(a, f"kill -KILL {root_pid}")


def _ended(job: str) -> bool:
    try:
        return all(j.state in FINISHED_JOB_STATES for j in query.jobs(job_ids=[job]))
    except NotFound:
        return True  # already purged from slurmctld's memory


def test_a_real_jobs_leftover_is_found_and_killed_and_nothing_else(
    cluster: sandbox.SandboxSpec, run_cli, stray
) -> None:
    """A job step's child that escaped the job (setsid, reparented away from slurmstepd,
    ignoring SIGTERM) outlives the job with SLURM_JOB_ID in its environment: it is the
    leftover, found by that, TERMed then KILLed. The admin's process beside it survives."""
    (a,) = _idle_nodes(1)
    escape = "setsid sh -c 'trap \"\" TERM; exec sleep 601' </dev/null >/dev/null 2>&1 &"
    job = submit(
        "--uid", TEST_USER, "-w", a, "--chdir", "/tmp", "-J", "sk-leftover", "--wrap", escape
    )
    leftover = 0
    try:
        poll(lambda: _ended(job), 60, "the job to end")
        found = poll(lambda: _ssh(a, "pgrep -x -f 'sleep 601'").stdout.split(), 30, "leftover")
        (leftover,) = (int(p) for p in found)  # type: ignore[union-attr]
        environ = _ssh(a, f"tr '\\0' '\\n' < /proc/{leftover}/environ").stdout.split()
        assert f"SLURM_JOB_ID={job}" in environ
        with _drained({a: KTF}):
            pid = stray(a)
            dry = _outcomes(_undrain(run_cli, [a], "--dry-run", "--kill"))[a]
            assert [(p["pid"], p["job"], p["kinds"]) for p in dry["processes"]] == [
                (leftover, job, ["environ"])
            ]
            report = _undrain(run_cli, [a], "--yes", "--kill", "--grace", "1")
            outcome = _outcomes(report)[a]
            assert outcome["returned"], outcome
            assert outcome["killed"] == [f"TERM {leftover}", f"KILL {leftover}"]
            assert not _alive(a, leftover) and _alive(a, pid)
            assert "DRAIN" not in _state(a).flags
    finally:
        run_slurm(["scancel", job])
        if leftover:
            _ssh(a, f"kill -KILL {leftover} 2>/dev/null || true")


@pytest.mark.parametrize("via", SSH_TRANSPORTS)
def test_node_with_down_sshd_is_unknown_and_others_return(
    cluster: sandbox.SandboxSpec, run_cli, tmp_path: Path, via
) -> None:
    a, b = _idle_nodes(2)
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host {b}\n  Port 1\nMatch all\nInclude {cluster.ssh_config}\n")
    with _drained({a: KTF, b: KTF}):
        report = _undrain(
            run_cli, [a, b], "--yes", "--via", via, "--ssh-config", str(cfg), exit_code=1
        )
        outcomes = _outcomes(report)
        assert outcomes[a]["returned"]
        assert outcomes[b]["verdict"] == "unknown" and outcomes[b]["action"] == "skipped"
        assert outcomes[b]["found"].startswith("unknown: check unreachable")
        assert "DRAIN" not in _state(a).flags and _state(b).is_drained


def test_node_still_running_a_job_is_not_touched(cluster: sandbox.SandboxSpec, run_cli) -> None:
    from tests.integration.conftest import submit

    (a,) = _idle_nodes(1)
    job = submit("-w", a, "-J", "sk-undrain-busy", "-o", "/dev/null", "--wrap", "sleep 300")
    try:
        poll(lambda: query.jobs(job_ids=[job])[0].state == "RUNNING", 60, "job to run")
        run_slurm(["scontrol", "update", f"nodename={a}", "state=drain", f"reason={KTF}"])
        report = _undrain(run_cli, [a], "--yes", exit_code=1)
        outcome = _outcomes(report)[a]
        assert outcome["action"] == "skipped" and "jobs still running" in outcome["why"]
        assert outcome["verdict"] is None  # never even checked remotely
        assert "DRAIN" in _state(a).flags
    finally:
        run_slurm(["scancel", job])
        if _state(a).reason == KTF:
            run_slurm(["scontrol", "update", f"nodename={a}", "state=undrain"])


def test_dry_run_changes_nothing(cluster: sandbox.SandboxSpec, run_cli, stray) -> None:
    a, b = _idle_nodes(2)
    with _drained({a: KTF, b: KTF}):
        pid = stray(b)
        report = _undrain(run_cli, [a, b], "--dry-run", "--kill", "--yes")
        actions = {n: o["action"] for n, o in _outcomes(report).items()}
        assert actions == {a: "would return", b: "would return"}  # the stray is no job's
        assert _state(a).is_drained and _state(b).is_drained and _alive(b, pid)


def test_without_tty_or_yes_nothing_changes(cluster: sandbox.SandboxSpec) -> None:
    from slurmkit.cli import cli

    (a,) = _idle_nodes(1)
    with _drained({a: KTF}):
        result = CliRunner().invoke(cli, ["undrain", "-w", a], input="y\n")
        assert result.exit_code == 1, result.stderr  # the confirm rule: a change was skipped
        assert "dry run only" in result.stderr
        assert "would return" in result.stdout
        assert _state(a).is_drained


def test_second_run_waits_on_the_lock_and_does_nothing(
    cluster: sandbox.SandboxSpec, run_cli, tmp_path: Path
) -> None:
    (a,) = _idle_nodes(1)
    path = tmp_path / "undrain.lock"
    with _drained({a: KTF}), locks.hold(path, wait=0, what="test"):
        result = run_cli(
            "undrain", "-w", a, "--yes", "--lock", str(path), "--lock-wait", "0.5", exit_code=2
        )
        assert "undrain is busy: another slurmkit run holds" in result.stderr
        assert _state(a).is_drained


def test_slurm_calls_do_not_grow_with_node_count(cluster: sandbox.SandboxSpec, run_cli) -> None:
    calls = []
    for size in (1, 3):
        nodes = _idle_nodes(size)
        with _drained(dict.fromkeys(nodes, KTF)):
            before = len(_exec.call_log)
            report = _undrain(run_cli, nodes, "--yes")
            calls.append([_call_kind(argv) for argv in _exec.call_log[before:]])
            assert all(o["returned"] for o in report["nodes"]) and len(report["nodes"]) == size
    show, squeue, update = "scontrol show", "squeue", "scontrol update"
    assert calls == [[show, squeue, show, update, show]] * 2  # reasons re-read before update


def _call_kind(argv: tuple[str, ...]) -> str:
    """What a logged Slurm call did, the same for a client run (``scontrol show node --all``)
    and for the pyslurm backend's RPC (``scontrol (pyslurm) Nodes.load``)."""
    if argv[0] == "scontrol":
        return "scontrol update" if "update" in argv else "scontrol show"
    return argv[0]


def test_reasons_with_key_words_or_two_lines_are_read_whole(
    cluster: sandbox.SandboxSpec, run_cli
) -> None:
    """Issue 14 (Low): 'Kill task failed Comment=...' was cut to 'Kill task failed' and the
    node returned; a two-line reason broke every undrain and nodes drained run."""
    from slurmkit.drained import drained

    a, b, c = _idle_nodes(3)
    tag = uuid.uuid4().hex[:6]
    key_words = f"{KTF} Comment=see ticket {tag} Extra=x"
    two_lines = f"{KTF}\nsk-test PSU {tag}: do not return"
    with _drained({a: key_words, b: two_lines, c: KTF}):
        report = _undrain(run_cli, [a, b, c], "--yes")
        assert set(_outcomes(report)) == {c} and _outcomes(report)[c]["returned"]
        exact = {n.name: n for n in query.nodes(fold([a, b]), exact_reasons=True)}
        assert exact[a].reason == key_words and exact[b].reason == two_lines
        assert exact[a].is_drained and exact[b].is_drained
        assert two_lines in [g.reason for g in drained()]
        result = run_cli("nodes", "drained", "--reason", tag, exit_code=0)
        assert f"sk-test PSU {tag}" in result.stdout and "see ticket" in result.stdout


def test_a_node_re_drained_during_the_check_is_left_alone(
    cluster: sandbox.SandboxSpec, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An admin drains b for a disk while undrain checks it: b keeps the admin's drain."""
    from slurmkit.undrain import flow

    a, b = _idle_nodes(2)
    other = f"sk-test disk failing {uuid.uuid4().hex[:6]}"
    real_run = flow.remote.run

    def check_then_admin_drains(*args, **kwargs):
        outcome = real_run(*args, **kwargs)
        admin = ["scontrol", "update", f"nodename={b}", "state=drain", f"reason={other}"]
        assert _proc.run(admin).returncode == 0  # not undrain's call: not in its count
        return outcome

    monkeypatch.setattr(flow.remote, "run", check_then_admin_drains)
    try:
        with _drained({a: KTF, b: KTF}):
            report = _undrain(run_cli, [a, b], "--yes", exit_code=1)
            outcomes = _outcomes(report)
            assert outcomes[a]["returned"] and not outcomes[b]["returned"]
            why = f"reason changed since the check (now: {other!r}): left alone"
            assert outcomes[b]["why"] == why
            assert _state(b).is_drained and _state(b).reason == other
            assert report["slurm_calls"] == 5
    finally:
        if _state(b).reason == other:
            run_slurm(["scontrol", "update", f"nodename={b}", "state=undrain"])


def test_nodes_drained_report(cluster: sandbox.SandboxSpec) -> None:
    from slurmkit.drained import drained

    a, b = _idle_nodes(2)
    reason = f"sk-test drained report {uuid.uuid4().hex[:6]}"
    with _drained({a: reason, b: reason}):
        before = len(_exec.call_log)
        (group,) = drained(f"^{reason}$")
        # sinfo -R is one client run; pyslurm loads nodes and partitions (two RPCs)
        assert len(_exec.call_log) - before == (2 if backend.selected().name == "pyslurm" else 1)
        assert group.nodes == fold([a, b]) and group.count == 2
        assert group.user == "root" and group.state == "drained" and group.time


@pytest.fixture
def freezable_fs(cluster: sandbox.SandboxSpec, test_user: int) -> Iterator[FreezableFs]:
    """A small ext4 mounted (loop device) inside one idle node's mount namespace, writable by
    the test user. Frozen with fsfreeze, a writer blocks in state D and SIGKILL cannot end it:
    the hung-filesystem case behind most real "Kill task failed" drains."""
    (node,) = _idle_nodes(1)
    ns_pid = recorded_pid(cluster, f"node-{node}")  # the node's tini, inside its namespaces
    root = Path(tempfile.mkdtemp(prefix="slurmkit-ktf-", dir="/tmp"))
    root.chmod(0o755)
    image, mountpoint = root / "fs.img", root / "mnt"
    mountpoint.mkdir()
    # -r: the node's own root directory too (a version from a root runs chrooted there)
    fs = FreezableFs(node, ["nsenter", "-t", str(ns_pid), "-m", "-r", "--"], mountpoint)
    _ok(["truncate", "-s", "32M", str(image)])
    _ok(["mkfs.ext4", "-q", "-F", str(image)])
    _ok([*fs.enter, "mount", "-o", "loop", str(image), str(mountpoint)])
    _ok([*fs.enter, "chmod", "1777", str(mountpoint)])
    try:
        yield fs
    finally:
        _proc.run([*fs.enter, "fsfreeze", "-u", str(mountpoint)])  # fails if not frozen: fine
        _proc.run([*fs.enter, "umount", "-l", str(mountpoint)])
        shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class FreezableFs:
    node: str
    enter: list[str]  # nsenter into the node's mount namespace
    mountpoint: Path

    def freeze(self) -> None:
        _ok([*self.enter, "fsfreeze", "-f", str(self.mountpoint)])

    def thaw(self) -> None:
        _ok([*self.enter, "fsfreeze", "-u", str(self.mountpoint)])


def _ok(argv: list[str]) -> None:
    done = _proc.run(argv, timeout=60)
    assert done.returncode == 0, f"{argv}: {done.stderr}"


def test_a_real_kill_task_failed_drain_waits_for_the_hung_io_then_returns(
    cluster: sandbox.SandboxSpec,
    run_cli,
    freezable_fs: FreezableFs,
    slurm_version: str,
    request: pytest.FixtureRequest,
) -> None:
    """The whole recipe against Slurm's own drain: a job writing to a filesystem that hangs
    is cancelled; slurmd cannot kill it and drains the node "Kill task failed"; undrain
    finds the stuck process, --kill cannot end it, the node stays out; once the I/O
    completes the process dies and undrain returns the node."""
    if slurm_version == "26.05":
        # Measured on the 26.05 sandbox (proctrack/linuxproc, CgroupPlugin=disabled in its
        # chroot): slurmstepd never declares the step unkillable; the node is not drained and
        # the job stays COMPLETING until the I/O completes. 22.05 and 24.11 drain it.
        request.applymarker(
            pytest.mark.xfail(strict=True, reason="26.05 sandbox: no Kill task failed drain")
        )
    node, target = freezable_fs.node, freezable_fs.mountpoint / "f"
    loop = f"while :; do echo x > {target}; sleep 0.2; done"
    job = submit("--uid", TEST_USER, "-w", node, "--chdir", "/tmp", "-J", "sk-ktf", "--wrap", loop)
    try:
        poll(lambda: _on(node, f"test -s {target}"), 60, "the job's first write")
        freezable_fs.freeze()
        blocked = f"ps -o stat= -u {TEST_USER} | grep -q ^D"
        poll(lambda: _on(node, blocked), 30, "the job's next write to block in state D")
        run_slurm(["scancel", job])
        if _version(slurm_version) >= (25, 5):
            # 25.11 (measured): slurmd drains "Kill task failed (JobId=.. StepId=..)" while the
            # job stays COMPLETING until its stuck process ends, so Slurm's own state rules the
            # node out and undrain must leave it, even with --kill.
            poll(lambda: _is_ktf(_state(node).reason), 120, f"slurmd to drain {node}")
            assert "COMPLETING" in _state(node).flags
            kill = ("--kill", "--grace", "2", "--yes")
            held = _outcomes(_undrain(run_cli, [node], *kill, exit_code=1))[node]
            assert held["action"] == "skipped" and not held["returned"]
            assert "a job is still completing" in held["why"], held
            assert _on(node, f"pgrep -u {TEST_USER}")  # nothing was killed
        else:
            poll(
                lambda: _is_ktf((n := _state(node)).reason) and "COMPLETING" not in n.flags,
                120,
                f"slurmd to drain {node} with {KTF!r}",
            )
            stuck = _outcomes(_undrain(run_cli, [node], "--dry-run", exit_code=1))[node]
            assert (
                stuck["verdict"] == "leftovers" and "[D: in uninterruptible I/O]" in stuck["found"]
            )
            assert any(p["user"] == TEST_USER for p in stuck["processes"])

            kill = ("--kill", "--grace", "2", "--yes")
            killed = _outcomes(_undrain(run_cli, [node], *kill, exit_code=1))
            assert killed[node]["action"] == "skipped" and not killed[node]["returned"]
            assert "survived SIGKILL: 1 in state D" in killed[node]["why"]
        slurms_reason = _state(node).reason
        assert _is_ktf(slurms_reason)

        freezable_fs.thaw()
        poll(lambda: not _on(node, f"pgrep -u {TEST_USER}"), 60, "the stuck process to end")
        poll(lambda: "COMPLETING" not in _state(node).flags, 120, "the job to finish completing")
        back = _outcomes(_undrain(run_cli, [node], "--yes"))[node]
        assert back["returned"] and back["verdict"] == "clean"
        poll(lambda: "DRAIN" not in _state(node).flags, 60, f"{node} back in service")
    finally:
        run_slurm(["scancel", job])
        if _is_ktf(_state(node).reason):  # a failed run must not leave the node out
            run_slurm(["scontrol", "update", f"nodename={node}", "state=undrain"])


def _version(series: str) -> tuple[int, ...]:
    return tuple(int(part) for part in series.split("."))


def _is_ktf(reason: str | None) -> bool:
    """Slurm's own "Kill task failed" drain, by undrain's default selection."""
    return re.search(DEFAULT_REASON, reason or "") is not None


def _on(node: str, command: str) -> bool:
    return _ssh(node, command).returncode == 0
