"""The remote check and kill scripts: parsing their reports, and running them on this machine."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import pytest

from slurmkit import _proc
from slurmkit.nodechange import leftovers as chk
from slurmkit.remote.command import new_token
from slurmkit.remote.result import NodeResult

T = "__slurmkit_end_0123456789abcdef__"


def _ps(*rows: tuple) -> list[str]:
    """ps lines from (pid, ppid, sid, uid, user, args), with STAT "S" unless a 7th item
    (pid, ppid, sid, uid, stat, user, args) gives it."""
    full = [r if len(r) == 7 else (*r[:4], "S", *r[4:]) for r in rows]
    return [
        f"{pid:>7} {ppid:>7} {sid:>7} {uid:>5} {stat:<4} {user} {args}"
        for pid, ppid, sid, uid, stat, user, args in full
    ]


SSHD = (50, 1, 50, 0, "root", "sshd: root@notty")
SELF = (100, 50, 100, 0, "root", f"sh -c T={T} ...")
PS = (101, 100, 100, 0, "root", "ps -e -o pid= ...")
INIT = (1, 0, 0, 0, "root", "/sbin/init")


def _report(
    ps: list[str],
    gpu: list[str] | None = None,
    *,
    gpu_rc: int = 0,
    done: bool = True,
    ps_rc: int = 0,
    env: dict[int, str] | None = None,
    cgroup: dict[int, str] | None = None,
    euid: int = 0,
    sections: tuple[str, ...] = ("cgroup", "environ", "start"),
) -> str:
    """A node's check report; ``env``/``cgroup`` map pids to their job evidence."""
    lines = [f"{T} self 100", f"{T} host gpu-node-7", f"{T} euid {euid}"]
    lines += [f"{T} ps", *ps, f"{T} ps-end {ps_rc}"]
    bodies = {
        "cgroup": [f"/proc/{p}/cgroup:{path}" for p, path in (cgroup or {}).items()],
        "environ": [f"/proc/{p}/environ:SLURM_JOB_ID={job}" for p, job in (env or {}).items()],
        "start": [f"{line.split()[0]} {1000 + i}" for i, line in enumerate(ps)],
    }
    for name in sections:
        lines += [f"{T} {name}", *bodies[name], f"{T} {name}-end"]
    if gpu is None:
        lines.append(f"{T} gpu-absent")
    else:
        lines += [f"{T} gpu", *gpu, f"{T} gpu-end {gpu_rc}"]
    if done:
        lines.append(f"{T} done")
    return "\n".join(lines) + "\n"


def _ok(stdout: str, stderr: str = "") -> NodeResult:
    return NodeResult("node-2", "ok", stdout, stderr, 0, 0.1)


def test_clean_node_says_the_gpu_check_was_skipped_not_passed() -> None:
    result = chk.parse_check(_ok(_report(_ps(INIT, SSHD, SELF, PS))), T)
    assert result.verdict == chk.CLEAN
    assert result.gpu_note == chk.GPU_SKIPPED
    assert result.host == "gpu-node-7"
    assert "GPU check skipped" in result.summary and "clean GPU" not in result.summary


ADMIN_SESSION = (
    (500, 1, 500, 0, "root", "sshd: ops [priv]"),
    (501, 500, 500, 1200, "ops", "sshd: ops@pts/0"),
    (502, 501, 502, 1200, "ops", "-bash"),
    (503, 1, 503, 1200, "ops", "/lib/systemd/systemd --user"),
    (504, 1, 504, 1200, "ops", "tmux new -s debug"),
    (505, 504, 505, 1200, "ops", "sleep 600"),
)


def test_leftovers_are_processes_of_jobs_never_of_a_uid() -> None:
    """Issue 14 finding 1: an admin's login, systemd --user, tmux are not leftovers."""
    rows = _ps(
        INIT,
        SSHD,
        SELF,
        PS,
        *ADMIN_SESSION,
        (200, 1, 200, 0, "root", "slurmstepd: [41.batch]"),
        (201, 200, 201, 2001, "alice", "/bin/bash /var/spool/slurmd/job00041/slurm_script"),
        (202, 201, 201, 2001, "alice", "python train.py"),
        (300, 1, 300, 2001, "alice", "python escaped.py"),
        (301, 1, 301, 2002, "bob", "python cgroup.py"),
        (302, 1, 302, 999, "munge", "munged"),
    )
    report = _report(rows, env={300: "41", 202: "41"}, cgroup={301: "/slurm/uid_2002/job_42/"})
    result = chk.parse_check(_ok(report), T)
    assert result.verdict == chk.LEFTOVERS
    kinds = {p.pid: p.kinds for p in result.processes}
    assert kinds == {
        200: ("slurmstepd",),
        201: ("step",),
        202: ("step", "environ"),
        300: ("environ",),
        301: ("cgroup",),
    }
    jobs = {p.pid: p.job for p in result.processes}
    assert jobs[300] == "41" and jobs[301] == "42" and jobs[200] == ""
    assert all(p.signal and p.start is not None for p in result.processes)


def test_an_admin_session_alone_is_clean() -> None:
    rows = _ps(INIT, SSHD, SELF, PS, *ADMIN_SESSION)
    result = chk.parse_check(_ok(_report(rows, cgroup={503: "/user.slice/cron_job_7.scope"})), T)
    assert result.verdict == chk.CLEAN, result.summary


def test_gpu_processes_count_only_when_they_are_a_jobs() -> None:
    rows = _ps(
        INIT,
        SSHD,
        SELF,
        PS,
        (400, 1, 400, 0, "root", "/usr/bin/dcgm-exporter"),
        (401, 1, 401, 2001, "alice", "python train.py"),
    )
    result = chk.parse_check(_ok(_report(rows, gpu=["400", "401"], env={401: "7"})), T)
    assert [(p.pid, p.kinds) for p in result.processes] == [(401, ("environ", "gpu"))]
    assert result.gpu_note == "GPU: checked with nvidia-smi"


def test_a_gpu_pid_this_namespace_does_not_show_makes_the_node_unknown() -> None:
    """The review's case: pid 777 of another namespace collided with a root daemon here."""
    rows = _ps(INIT, SSHD, SELF, PS)
    result = chk.parse_check(_ok(_report(rows, gpu=["777"])), T)
    assert result.verdict == chk.UNKNOWN and "777 not visible" in result.error
    assert result.processes == ()


def test_a_system_users_process_named_only_by_its_environment_is_never_signalled() -> None:
    """SLURM_JOB_ID in a root process's environment can come from a user (setuid); a
    GPU match adds nothing: reported, node kept out, never signalled."""
    rows = _ps(INIT, SSHD, SELF, PS, (400, 1, 400, 0, "root", "passwd"))
    (proc,) = chk.parse_check(_ok(_report(rows, gpu=["400"], env={400: "9"})), T).processes
    assert proc.kinds == ("environ", "gpu") and not proc.signal
    assert "[system user: not signalled]" in str(proc)
    assert chk.signallable([proc]) == []
    lower = chk.parse_check(_ok(_report(rows, env={400: "9"})), T, uid_min=1)
    assert lower.processes[0].signal is False  # root stays below any threshold
    rows = _ps(INIT, SSHD, SELF, PS, (400, 1, 400, 1500, "bob", "sleep 9"))
    assert (
        chk.parse_check(_ok(_report(rows, env={400: "9"})), T, uid_min=2000).processes[0].signal
        is False
    )
    assert chk.parse_check(_ok(_report(rows, env={400: "9"})), T).processes[0].signal


def test_a_check_that_is_not_root_is_unknown() -> None:
    rows = _ps(INIT, SSHD, SELF, PS)
    result = chk.parse_check(_ok(_report(rows, euid=1200)), T)
    assert result.verdict == chk.UNKNOWN and "not root" in result.error


def test_the_checks_own_session_is_not_a_leftover_even_for_a_user_login() -> None:
    rows = _ps(
        INIT,
        (50, 1, 50, 0, "root", "sshd: ops [priv]"),
        (51, 50, 50, 1200, "ops", "sshd: ops@notty"),
        (100, 51, 100, 1200, "ops", "sh -c ..."),
        (101, 100, 100, 1200, "ops", "ps -e"),
        (300, 1, 300, 1200, "ops", "leftover"),
    )
    report = _report(rows, env={100: "5", 101: "5", 300: "5"})
    result = chk.parse_check(_ok(report), T)
    assert [p.pid for p in result.processes] == [300]


def test_the_checks_children_are_its_own_when_ps_shows_session_zero() -> None:
    # A session leader outside the PID namespace (containers, CI runners) shows as sid 0.
    rows = _ps(
        INIT,
        (100, 0, 0, 0, "root", "sh -c ..."),
        (101, 100, 0, 0, "root", "ps -e -o pid= -o ppid="),
        (102, 101, 0, 0, "root", "grandchild"),
        (300, 0, 0, 0, "root", "leftover"),
    )
    result = chk.parse_check(_ok(_report(rows, env=dict.fromkeys([100, 101, 102, 300], "5"))), T)
    assert sorted(p.pid for p in result.processes) == [300]


@pytest.mark.parametrize(
    ("stdout", "status", "error"),
    [
        (_report(_ps(INIT, SELF, PS), done=False), "ok", "did not run to its end"),
        (_report(_ps(INIT, SELF, PS), ps_rc=1), "ok", "ps failed"),
        (
            _report(_ps(INIT, SELF, PS), gpu=["No devices were found"], gpu_rc=6),
            "ok",
            "nvidia-smi failed",
        ),
        (
            _report(_ps(INIT, SELF, PS), gpu=["[Insufficient Permissions]"]),
            "ok",
            "unexpected nvidia-smi output",
        ),
        (_report(["garbage line"]), "ok", "unreadable ps output"),
        (_report(_ps(INIT, SELF, PS), sections=("cgroup", "start")), "ok", "no environ report"),
        ("", "unreachable", "check unreachable"),
        (_report(_ps(INIT, SELF, PS))[:40], "timeout", "check timeout"),
    ],
)
def test_anything_incomplete_is_unknown_never_clean(stdout: str, status: str, error: str) -> None:
    result = NodeResult("node-2", status, stdout, "", 0 if status == "ok" else None, 0.1, "x")
    verdict = chk.parse_check(result, T)
    assert verdict.verdict == chk.UNKNOWN
    assert error in verdict.error
    assert verdict.summary.startswith("unknown:")


# ---------------------------------------------------------------- for real, on this machine


def _sh(script: str, timeout: float = 30) -> NodeResult:
    done = _proc.run(["sh", "-c", script], timeout=timeout)
    return NodeResult(
        "local",
        "ok" if done.returncode == 0 else "failed",
        done.stdout,
        done.stderr,
        done.returncode,
        done.seconds,
    )


def _start_time(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(") ", 1)[1].split()[19])


@pytest.mark.skipif(os.geteuid() != 0, reason="the check reads other users' environ as root")
def test_check_script_finds_a_jobs_process_here_and_nothing_else() -> None:
    # Sessions of their own, as on a node: the check skips its own session.
    job = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, "SLURM_JOB_ID": "4242"}, start_new_session=True
    )
    plain = subprocess.Popen(
        ["sleep", "60"], env={"PATH": os.environ["PATH"]}, start_new_session=True
    )
    try:
        token = new_token()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        done = _proc.run(["sh", "-c", chk.check_script(token)], timeout=30, env=env)
        result = chk.parse_check(NodeResult("local", "ok", done.stdout, done.stderr, 0, 0), token)
        assert result.verdict in (chk.CLEAN, chk.LEFTOVERS), result.error
        assert result.host
        found = {p.pid: p for p in result.processes}
        assert found[job.pid].kinds == ("environ",) and found[job.pid].job == "4242"
        assert found[job.pid].start == _start_time(job.pid)
        assert plain.pid not in found
        assert os.getpid() not in found  # pytest started the check: an ancestor, like sshd
        assert not [p for p in result.processes if token in p.args]
    finally:
        for proc in (job, plain):
            proc.kill()
            proc.wait()


def _hostname() -> str:
    return _proc.run(["hostname"]).stdout.strip()


def test_kill_script_terms_then_kills() -> None:
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stubborn.stdout is not None and stubborn.stdout.readline().strip() == "ready"
        start = _start_time(stubborn.pid)
        target = chk.Process(stubborn.pid, os.getuid(), "me", "python", ("environ",), start=start)
        token = new_token()
        result = _sh(chk.kill_script(token, {_hostname(): [target]}, grace=1))
        sent, error = chk.parse_kill(result, token)
        assert error == ""
        assert sent == [f"TERM {stubborn.pid}", f"KILL {stubborn.pid}"]
        assert stubborn.wait(timeout=10) == -9
    finally:
        stubborn.kill()


def test_kill_script_spares_a_pid_now_owned_by_someone_else_or_on_another_host() -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        start = _start_time(sleeper.pid)
        right = chk.Process(sleeper.pid, os.getuid(), "x", "sleep", ("environ",), start=start)
        token = new_token()
        spared = [
            {_hostname(): [replace(right, uid=os.getuid() + 4242)]},  # owner changed
            {_hostname(): [replace(right, start=start + 1)]},  # pid reused by a newer process
            {_hostname(): [replace(right, start=None)]},  # start time unknown
            {_hostname(): [replace(right, signal=False)]},  # a system user's, environ only
            {"not-this-host": [right]},
        ]
        for targets in spared:
            sent, _ = chk.parse_kill(_sh(chk.kill_script(token, targets, 0)), token)
            assert sent == [], targets
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_kill_report_without_its_end_is_an_error() -> None:
    sent, error = chk.parse_kill(_ok(f"{T} sent TERM 5\n"), T)
    assert sent == ["TERM 5"] and "did not run to its end" in error
    _, error = chk.parse_kill(NodeResult("n", "unreachable", "", "", None, 0, "refused"), T)
    assert error == "kill unreachable: refused"
