"""The remote check and kill scripts: parsing their reports, and running them on this machine."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from slurmkit import _proc
from slurmkit.remote.command import new_token
from slurmkit.remote.result import NodeResult
from slurmkit.undrain import check as chk

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
) -> str:
    lines = [f"{T} self 100", f"{T} host gpu-node-7", f"{T} ps", *ps, f"{T} ps-end {ps_rc}"]
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


def test_leftovers_are_stepd_user_and_gpu_processes() -> None:
    rows = _ps(
        INIT,
        SSHD,
        SELF,
        PS,
        (200, 1, 200, 0, "root", "slurmstepd: [41.batch]"),
        (300, 1, 300, 2001, "alice", "python train.py"),
        (301, 1, 301, 65534, "nobody", "dnsmasq"),
        (302, 1, 302, 999, "munge", "munged"),
        (400, 1, 400, 0, "root", "/usr/bin/python3 worker"),
    )
    result = chk.parse_check(_ok(_report(rows, gpu=["400", "777"])), T)
    assert result.verdict == chk.LEFTOVERS
    kinds = {p.pid: p.kinds for p in result.processes}
    assert kinds == {200: ("slurmstepd",), 300: ("user",), 400: ("gpu",), 777: ("gpu",)}
    assert next(p for p in result.processes if p.pid == 777).uid is None  # not in ps: pid only
    assert result.gpu_note == "GPU: checked with nvidia-smi"


def test_uid_threshold_is_configurable() -> None:
    rows = _ps(INIT, SSHD, SELF, PS, (300, 1, 300, 1500, "bob", "sleep 9"))
    assert chk.parse_check(_ok(_report(rows)), T, uid_min=2000).verdict == chk.CLEAN
    assert chk.parse_check(_ok(_report(rows)), T, uid_min=1000).verdict == chk.LEFTOVERS


def test_the_checks_own_session_is_not_a_leftover_even_for_a_user_login() -> None:
    rows = _ps(
        INIT,
        (50, 1, 50, 0, "root", "sshd: ops [priv]"),
        (51, 50, 50, 1200, "ops", "sshd: ops@notty"),
        (100, 51, 100, 1200, "ops", "sh -c ..."),
        (101, 100, 100, 1200, "ops", "ps -e"),
        (300, 1, 300, 1200, "ops", "leftover"),
    )
    report = _report(rows).replace(f"{T} self 100", f"{T} self 100")
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
    result = chk.parse_check(_ok(_report(rows)), T, uid_min=0)
    assert sorted(p.pid for p in result.processes) == [1, 300]


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


def test_check_script_runs_to_its_end_here_and_skips_itself() -> None:
    token = new_token()
    result = chk.parse_check(_sh(chk.check_script(token)), token, uid_min=0)
    assert result.verdict in (chk.CLEAN, chk.LEFTOVERS), result.error
    assert result.host
    # with uid_min=0 every process is a "leftover" except the check's own and its ancestors
    pids = {p.pid for p in result.processes}
    assert not [p for p in result.processes if token in p.args or p.args.startswith("ps -e")]
    assert 1 in pids
    assert os.getpid() not in pids  # pytest started the check: an ancestor, like sshd


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
        target = chk.Process(stubborn.pid, os.getuid(), "me", "python", ("user",))
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
        wrong_uid = chk.Process(sleeper.pid, os.getuid() + 4242, "x", "sleep", ("user",))
        token = new_token()
        sent, _ = chk.parse_kill(_sh(chk.kill_script(token, {_hostname(): [wrong_uid]}, 0)), token)
        assert sent == []
        right = chk.Process(sleeper.pid, os.getuid(), "x", "sleep", ("user",))
        sent, _ = chk.parse_kill(_sh(chk.kill_script(token, {"not-this-host": [right]}, 0)), token)
        assert sent == []
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_kill_report_without_its_end_is_an_error() -> None:
    sent, error = chk.parse_kill(_ok(f"{T} sent TERM 5\n"), T)
    assert sent == ["TERM 5"] and "did not run to its end" in error
    _, error = chk.parse_kill(NodeResult("n", "unreachable", "", "", None, 0, "refused"), T)
    assert error == "kill unreachable: refused"
