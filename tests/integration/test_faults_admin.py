"""undrain and cron survive real faults on the sandbox (issue 22): nothing lost, orphaned or
done twice, and the exit code tells the truth.

- slurmctld hung for real (SIGSTOP) exactly when ``scontrol update`` / ``sbatch`` is sent:
  a PATH shim stops slurmctld, then runs the real client, so the request lands in the
  stopped controller's backlog and the client times out after MessageTimeout. slurmctld
  is resumed when slurmkit says on stderr that it is reading again, and always (SIGCONT)
  in ``finally``.
- slurmdbd hung during a read-only command: one line, exit 2, bounded.
- slurmkit killed with ``-9`` at each faultpoint (between "Slurm changed" and "recorded"):
  the next command settles it (the log gets the outcome; exactly one cron chain).
- ``--log`` and the cron dir on a small tmpfs, filled or remounted read-only: one line,
  exit 2, and nothing changed in the cluster.

Nodes are drained by the tests themselves ("Kill task failed", idle nodes only) and
resumed in ``finally``; cron chains get their own name prefix and are cancelled by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit import _proc, sandbox
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll, recorded_pid
from tests.integration.test_train_faults import SLURMKIT, _answers, _fill_bytes, small_tmpfs
from tests.integration.test_undrain import (  # noqa: F401  (test_user: a fixture)
    KTF,
    _drained,
    _idle_nodes,
    test_user,
)

LIMIT = 240.0  # no command here may take longer: a hang fails the test instead of blocking


def _env(
    point: str | None = None, path_first: Path | None = None, sig: str = "KILL"
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURMKIT_FAULT")}
    if point:
        env["SLURMKIT_FAULT_POINT"] = point
        env["SLURMKIT_FAULT_SIGNAL"] = sig
    if path_first is not None:
        env["PATH"] = f"{path_first}:{env.get('PATH', '')}"
    return env


def slurmkit(*args: str, point: str | None = None, cwd: Path | None = None, sig: str = "KILL"):
    return subprocess.run(
        [str(SLURMKIT), *args],
        env=_env(point, sig=sig),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )


def _errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip()]


@contextlib.contextmanager
def hung(pid: int) -> Iterator[None]:
    """``pid`` stopped for the block; always continued."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def stopping_shim(folder: Path, command: str, ctld: int, word: str | None) -> Iterator[Path]:
    """A ``command`` first on PATH that stops slurmctld (when its first argument is ``word``,
    or always) and then runs the real one; slurmctld is continued whatever happens."""
    real = shutil.which(command)
    assert real, f"{command} not on PATH"
    folder.mkdir()
    shim = folder / command
    test = f'[[ "${{1:-}}" == {shlex.quote(word)} ]] && ' if word else ""
    shim.write_text(f'#!/bin/bash\n{test}kill -STOP {ctld}\nexec {shlex.quote(real)} "$@"\n')
    shim.chmod(0o755)
    try:
        yield folder
    finally:
        os.kill(ctld, signal.SIGCONT)
        poll(_answers, 60, "slurmctld to answer again")


def _run_resuming(argv: list[str], shim: Path, ctld: int, cue: str) -> tuple[int, str, str]:
    """Run ``argv``; when its stderr says ``cue`` (it is reading again), continue slurmctld."""
    proc = subprocess.Popen(
        argv, env=_env(path_first=shim), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []

    def watch() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if cue in line:
                os.kill(ctld, signal.SIGCONT)

    reader = threading.Thread(target=watch, daemon=True)
    reader.start()
    try:
        out = proc.stdout.read() if proc.stdout else ""
        proc.wait(timeout=LIMIT)
    finally:
        os.kill(ctld, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=30)
    return proc.returncode, out, "".join(lines)


def _log_actions(log: Path) -> list[dict[str, str]]:
    """The audit log's records (JSON lines; old key=value ones too), as text fields."""
    from slurmkit.nodechange import auditlog

    return [{k: str(v) for k, v in r.to_json().items()} for r in auditlog.read(log)]


def _state(node: str) -> str:
    (found,) = query.nodes(node)
    return found.state_text


# ---------------------------------------------------------------- undrain


def test_undrain_whose_update_gets_no_answer_reports_the_checked_answer(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    (node,) = _idle_nodes(1)
    ctld = recorded_pid(cluster, "slurmctld")
    log = tmp_path / "undrain.log"
    argv = [str(SLURMKIT), "undrain", "-w", node, "--yes", "--json", "--log", str(log),
            "--lock", str(tmp_path / "lock")]  # fmt: skip
    with (
        _drained({node: KTF}),
        stopping_shim(tmp_path / "shim", "scontrol", ctld, "update") as shim,
    ):
        code, out, err = _run_resuming(argv, shim, ctld, "reading the state of")
    assert code == 0, err
    (outcome,) = json.loads(out)["nodes"]
    assert outcome["action"] == "returned" and "no answer" in outcome["why"], outcome
    actions = [r["action"] for r in _log_actions(log)]
    assert actions == ["will-undrain", "undrain"] and "undrain-failed" not in log.read_text()
    assert _log_actions(log)[1]["checked"] == "after-no-answer"
    assert "DRAIN" not in _state(node)


@pytest.mark.parametrize("sig", ["KILL", "TERM"])  # TERM: what `timeout` and cron send
def test_undrain_killed_after_the_update_is_settled_by_the_next_run(
    cluster: sandbox.SandboxSpec, tmp_path: Path, sig: str
) -> None:
    (node,) = _idle_nodes(1)
    log = tmp_path / "undrain.log"
    common = ("-w", node, "--yes", "--log", str(log), "--lock", str(tmp_path / "lock"))
    with _drained({node: KTF}):
        killed = slurmkit("undrain", *common, point="undrain.after-update", sig=sig)
        assert killed.returncode == -getattr(signal, f"SIG{sig}"), killed.stderr
        assert [r["action"] for r in _log_actions(log)] == ["will-undrain"]  # no outcome yet
        assert "DRAIN" not in _state(node)  # but the node was returned
        again = slurmkit("undrain", *common)
    assert again.returncode == 0, again.stderr
    notes = [ln for ln in _errors(again.stderr) if "settled" in ln]
    assert len(notes) == 1 and f"{node} undrain done: not drained" in notes[0], again.stderr
    last = _log_actions(log)[-1]
    assert (last["action"], last["node"], last["reconciled"]) == ("undrain", node, "yes")


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_undrain_with_a_full_or_read_only_log_changes_nothing(
    cluster: sandbox.SandboxSpec, tmp_path: Path, fault: str
) -> None:
    (node,) = _idle_nodes(1)
    with small_tmpfs(tmp_path / "mnt") as mnt, _drained({node: KTF}):
        log = mnt / "undrain.log"
        log.write_text("")
        filler = None
        if fault == "full":
            filler = _fill_bytes(mnt)
        else:
            _proc.run(["mount", "-o", "remount,ro", str(mnt)], timeout=30)
        try:
            result = slurmkit("undrain", "-w", node, "--yes", "--log", str(log),
                              "--lock", str(tmp_path / "lock"))  # fmt: skip
        finally:
            if fault == "read-only":
                _proc.run(["mount", "-o", "remount,rw", str(mnt)], timeout=30)
            if filler is not None:
                filler.unlink()
        assert result.returncode == 2, result.stderr
        (line,) = _errors(result.stderr)
        assert line.startswith("slurmkit: --log") and "nothing was done" in line
        assert "Traceback" not in result.stderr
        assert "DRAIN" in _state(node)  # nothing changed that was not recorded
        assert log.read_text() == ""


# ---------------------------------------------------------------- cron


@pytest.fixture
def cron_dir(cluster: sandbox.SandboxSpec, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A cron dir with its own job-name prefix; its chains are cancelled by name at the end."""
    prefix = f"skf{uuid.uuid4().hex[:6]}"
    where = tmp_path / "cron"
    yield where, prefix
    for period in ("hourly", "daily"):
        run_slurm(["scancel", f"--name={prefix}-{period}"], check=False)


def _init(where: Path, prefix: str) -> None:
    made = slurmkit("cron", "init", str(where), "--name-prefix", prefix, "--partition", "cpu")
    assert made.returncode == 0, made.stderr


def _chain(prefix: str) -> list[tuple[str, str]]:
    out = run_slurm(["squeue", "--noheader", f"--name={prefix}-hourly", "--format=%i|%T"]).stdout
    return [tuple(ln.split("|")) for ln in out.splitlines() if ln.strip()]  # type: ignore[misc]


def _one_chain(prefix: str) -> bool:
    """The first run ran (or waits) and exactly one run of the chain is pending next."""
    jobs = _chain(prefix)
    return len(jobs) == 1 or (len([s for _, s in jobs if s == "PENDING"]) == 1 and len(jobs) <= 2)


def _open_intents(where: Path) -> list[str]:
    entries = [json.loads(ln) for ln in (where / "journal").read_text().splitlines()]
    closed = {e["token"] for e in entries if e["kind"] == "outcome"}
    return [e["action"] for e in entries if e["kind"] == "intent" and e["token"] not in closed]


def test_cron_start_whose_sbatch_gets_no_answer_finds_the_chain(
    cluster: sandbox.SandboxSpec, cron_dir: tuple[Path, str], tmp_path: Path
) -> None:
    where, prefix = cron_dir
    _init(where, prefix)
    ctld = recorded_pid(cluster, "slurmctld")
    argv = [str(SLURMKIT), "cron", "start", "--dir", str(where), "hourly"]
    with stopping_shim(tmp_path / "shim", "sbatch", ctld, None) as shim:
        code, out, err = _run_resuming(argv, shim, ctld, "reading the queue for")
    assert "no answer" in err and _open_intents(where) == []
    # Whether slurmctld, resumed, still reads the request sbatch gave up on is up to the
    # kernel's backlog ("Socket timed out on send/recv" can mean it was never fully sent):
    # both answers are right as long as slurmkit says which, and nothing is doubled or lost.
    if code == 0:
        assert f"{prefix}-hourly: started, job" in out
    else:
        assert code == 2 and "the chain is not in the queue: nothing was started" in err, err
        assert _chain(prefix) == []
        first = slurmkit("cron", "start", "--dir", str(where), "hourly")
        assert first.returncode == 0 and f"{prefix}-hourly: started, job" in first.stdout
    poll(lambda: _one_chain(prefix), 60, "exactly one chain")
    again = slurmkit("cron", "start", "--dir", str(where), "hourly")
    assert "already running" in again.stdout, again.stderr
    assert _one_chain(prefix)


def test_cron_start_killed_after_sbatch_is_settled_and_never_doubled(
    cluster: sandbox.SandboxSpec, cron_dir: tuple[Path, str]
) -> None:
    where, prefix = cron_dir
    _init(where, prefix)
    killed = slurmkit("cron", "start", "--dir", str(where), "hourly", point="cron.after-submit")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert _open_intents(where) == ["cron-start"]
    again = slurmkit("cron", "start", "--dir", str(where), "hourly")
    assert again.returncode == 0, again.stderr
    assert f"{prefix}-hourly start went through" in again.stderr
    assert "already running" in again.stdout
    assert _open_intents(where) == []
    poll(lambda: _one_chain(prefix), 60, "exactly one chain")


def test_cron_stop_killed_after_cancel_is_settled_by_status(
    cluster: sandbox.SandboxSpec, cron_dir: tuple[Path, str]
) -> None:
    where, prefix = cron_dir
    _init(where, prefix)
    assert slurmkit("cron", "start", "--dir", str(where), "hourly").returncode == 0
    killed = slurmkit("cron", "stop", "--dir", str(where), "hourly", "--yes",
                      point="cron.after-cancel")  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert _open_intents(where) == ["cron-stop"]
    poll(lambda: not _chain(prefix), 60, "the cancelled chain to leave the queue")
    status = slurmkit("cron", "status", "--dir", str(where), "hourly")
    assert f"{prefix}-hourly stop went through" in status.stderr, status.stderr
    assert _open_intents(where) == []


@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_cron_start_with_a_full_or_read_only_dir_submits_nothing(
    cluster: sandbox.SandboxSpec, cron_dir: tuple[Path, str], tmp_path: Path, fault: str
) -> None:
    _, prefix = cron_dir
    with small_tmpfs(tmp_path / "mnt") as mnt:
        where = mnt / "cron"
        _init(where, prefix)
        filler = None
        if fault == "full":
            filler = _fill_bytes(mnt)
        else:
            _proc.run(["mount", "-o", "remount,ro", str(mnt)], timeout=30)
        try:
            result = slurmkit("cron", "start", "--dir", str(where), "hourly")
        finally:
            if fault == "read-only":
                _proc.run(["mount", "-o", "remount,rw", str(mnt)], timeout=30)
            if filler is not None:
                filler.unlink()
    assert result.returncode == 2, result.stderr
    (line,) = _errors(result.stderr)
    assert line.startswith("slurmkit: ") and "Traceback" not in result.stderr
    assert _chain(prefix) == []  # nothing submitted that was not recorded


# ---------------------------------------------------------------- slurmdbd


def test_a_hung_slurmdbd_is_one_line_and_exit_2_for_a_read_only_command(
    cluster: sandbox.SandboxSpec,
) -> None:
    dbd = recorded_pid(cluster, "slurmdbd")
    start = time.monotonic()
    with hung(dbd):
        result = slurmkit("faulty", "history", "--since", "1d")
    took = time.monotonic() - start
    assert result.returncode == 2, result.stderr
    (line,) = _errors(result.stderr)
    assert line.startswith("slurmkit: ") and "sacct" in line, line
    print(
        f"faulty history with slurmdbd stopped: exit 2 after {took:.0f} s"
    )  # measured, not asserted


# ---------------------------------------------------------------- more faultpoints


def test_undrain_killed_after_the_kill_is_settled_and_the_node_checked_again(
    cluster: sandbox.SandboxSpec,
    tmp_path: Path,
    test_user: int,  # noqa: F811  (the fixture of test_undrain: a non-system user)
) -> None:
    from tests.integration.conftest import submit
    from tests.integration.test_undrain import TEST_USER, _ended, _ssh

    (node,) = _idle_nodes(1)
    escape = "setsid sh -c 'trap \"\" TERM; exec sleep 603' </dev/null >/dev/null 2>&1 &"
    job = submit("--uid", TEST_USER, "-w", node, "--chdir", "/tmp", "--wrap", escape)
    log = tmp_path / "undrain.log"
    common = ("-w", node, "--yes", "--kill", "--grace", "1", "--log", str(log),
              "--lock", str(tmp_path / "lock"))  # fmt: skip
    try:
        poll(lambda: _ended(job), 60, "the job to end")
        poll(lambda: _ssh(node, "pgrep -x -f 'sleep 603'").stdout.split(), 30, "its leftover")
        with _drained({node: KTF}):
            killed = slurmkit("undrain", *common, point="undrain.after-kill")
            assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
            assert [r["action"] for r in _log_actions(log)] == ["will-kill"]
            again = slurmkit("undrain", *common)
        assert "settled" in again.stderr and f"{node} kill interrupted" in again.stderr
        actions = [r["action"] for r in _log_actions(log)]
        assert actions[:2] == ["will-kill", "kill-interrupted"], actions
        assert actions[-1] == "undrain"  # checked afresh (the leftover was gone), returned
        assert again.returncode == 0, again.stderr
    finally:
        run_slurm(["scancel", job], check=False)
        _ssh(node, "pkill -KILL -x -f 'sleep 603' || true")


def test_job_extend_killed_after_the_update_is_settled_by_the_next_extend(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    from tests.integration.conftest import submit

    job = submit("--time=5", "--partition=cpu", "--wrap", "sleep 300")
    state = tmp_path / "state"
    env_state = {"XDG_STATE_HOME": str(state)}
    try:
        poll(lambda: query.job(job).state in ("RUNNING", "PENDING"), 60, "the job to be queued")
        killed = subprocess.run(
            [str(SLURMKIT), "job", "extend", job, "+2m", "--yes"],
            env={**_env("job-extend.after-update"), **env_state},
            capture_output=True, text=True, timeout=LIMIT, check=False,
        )  # fmt: skip
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert query.job(job).time_limit == 7 * 60  # done, not recorded
        again = subprocess.run(
            [str(SLURMKIT), "job", "extend", job, "+1m", "--yes"],
            env={**_env(), **env_state},
            capture_output=True, text=True, timeout=LIMIT, check=False,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert f"job {job}: the earlier extend 00:05:00 -> 00:07:00 went through" in again.stderr
        assert "00:07:00 -> 00:08:00" in again.stdout
        journal = state / "slurmkit" / "job-extend.journal"
        entries = [json.loads(ln) for ln in journal.read_text().splitlines()]
        assert [(e["kind"], e.get("result")) for e in entries] == [
            ("intent", None), ("outcome", "done"), ("intent", None), ("outcome", "done"),
        ]  # fmt: skip
    finally:
        run_slurm(["scancel", job], check=False)


# ---------------------------------------------------------------- cpus check, faulty scan --drain


def _run_env(*args: str, point: str | None = None, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SLURMKIT), *args],
        env={**_env(point), **extra},
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )


def _jobs_named(name: str) -> list[str]:
    """Every job of that name Slurm still knows of (queued, running, or just ended)."""
    out = run_slurm(["squeue", "--noheader", f"--name={name}", "--states=all", "--format=%i|%T"])
    return [ln for ln in out.stdout.splitlines() if ln.strip()]


def _live_jobs_named(name: str) -> list[str]:
    return [
        j for j in _jobs_named(name) if j.split("|")[1] in ("PENDING", "RUNNING", "CONFIGURING")
    ]


def test_cpus_check_whose_sbatch_gets_no_answer_finds_its_own_job_or_removes_it(
    cluster: sandbox.SandboxSpec, tmp_path: Path, slurm_version: str
) -> None:
    """Issue 22: "cpus check reports failure on a hung controller, yet its job was queued".

    slurmctld is stopped at the very sbatch (the request sits in its backlog, sbatch times
    out) and continued when cpus check says it reads the queue again. Either answer is
    right if it is the true one: the job was found and the check completed with it (exit
    0/1 and its verdict), or it was not queued and nothing of it is left. Never a failure
    with the job running on, never two jobs.
    """
    ctld = recorded_pid(cluster, "slurmctld")
    argv = [str(SLURMKIT), "cpus", "check", "--dir", str(tmp_path / "work"), "-c", "2", "--json"]
    start = time.monotonic()
    with stopping_shim(tmp_path / "shim", "sbatch", ctld, None) as shim:
        code, out, err = _run_resuming(argv, shim, ctld, "reading the queue for job")
    took = time.monotonic() - start
    assert "Traceback" not in err and "no answer" in err, err
    (name,) = set(re.findall(r"slurmkit-cpus-[0-9a-f]{6}", err))
    if code == 2:
        assert "nothing was submitted" in err, err
    else:
        affected = slurm_version == "22.05"
        assert code == (1 if affected else 0), err
        data = json.loads(out)
        assert data["affected"] is affected and data["job_state"] == "COMPLETED"
        assert f"sbatch got no answer, but job {data['job_id']} ({name}) is queued" in err
        assert len(_jobs_named(name)) == 1  # that one job, not a second
    poll(lambda: not _live_jobs_named(name), 60, f"no job {name} left pending or running")
    print(f"cpus check with slurmctld stopped at sbatch: exit {code} after {took:.1f} s")


FAULTY_NODE = "node-3"
FAULTY_CMD = f'cmd:test "$SLURMD_NODENAME" != {FAULTY_NODE}'
FAULTY_REASON = f"slurmkit: {FAULTY_CMD} failed"


def _ours_drained() -> list[str]:
    return [n.name for n in query.nodes() if "DRAIN" in n.flags and n.reason == FAULTY_REASON]


def _can_run(name: str) -> bool:
    (node,) = query.nodes(name)
    return node.state in ("IDLE", "MIXED", "ALLOCATED") and not node.flags & {
        "DRAIN",
        "NOT_RESPONDING",
    }


def test_faulty_scan_drain_killed_after_the_update_is_settled_by_the_next_run(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    """kill -9 between "node drained" and "recorded" (faultpoint faulty-drain.after-update):
    the audit log keeps the open intent, and the next ``faulty scan --drain`` (which finds
    the node already drained, so it has nothing to drain itself) settles it in one line,
    recording the node state Slurm reports."""
    poll(lambda: _can_run(FAULTY_NODE), 300, f"{FAULTY_NODE} to accept jobs")
    state = tmp_path / "state"
    scan = ("faulty", "scan", "-w", "node-[1-4]", "--checks", f"python,{FAULTY_CMD}",
            "--dir", str(tmp_path / "scan"), "--timeout", "300", "--set", "cpus_per_task=1",
            "--drain", "--yes", "--json")  # fmt: skip
    log = state / "slurmkit" / "actions.log"  # the node-change core's one audit log
    try:
        killed = _run_env(*scan, point="faulty-drain.after-update", XDG_STATE_HOME=str(state))
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert _ours_drained() == [FAULTY_NODE]  # done, not recorded
        entries = [json.loads(ln) for ln in log.read_text().splitlines()]
        assert [(e["kind"], e["action"], e["node"]) for e in entries] == [
            ("intent", "will-drain", FAULTY_NODE)
        ]
        again = _run_env(*scan, XDG_STATE_HOME=str(state))
        assert again.returncode == 1, again.stderr  # findings: node-3 fails its check
        notes = [ln for ln in _errors(again.stderr) if "settled" in ln]
        assert len(notes) == 1 and f"{FAULTY_NODE} drain done" in notes[0], again.stderr
        entries = [json.loads(ln) for ln in log.read_text().splitlines()]
        assert [(e["kind"], e["action"]) for e in entries] == [
            ("intent", "will-drain"), ("outcome", "drain"),
        ]  # fmt: skip
        (node,) = query.nodes(FAULTY_NODE)
        assert entries[1]["reconciled"] == "yes"
        assert entries[1]["after"] == node.state_text and "DRAIN" in node.flags
        assert json.loads(again.stdout)["drain"]["groups"] == []  # not drained twice
    finally:
        ours = _ours_drained()
        if ours:
            run_slurm(["scontrol", "update", f"nodename={','.join(ours)}", "state=resume"])
    assert _ours_drained() == []


# ---------------------------------------------------------------- node drain|resume


@contextlib.contextmanager
def _resumed_at_end(node: str, reason: str) -> Iterator[None]:
    """Whatever happens, ``node`` is not left drained with the test's ``reason``."""
    try:
        yield
    finally:
        (now,) = query.nodes(node, exact_reasons=True)
        if "DRAIN" in now.flags and now.reason == reason:
            run_slurm(["scontrol", "update", f"nodename={node}", "state=resume"])


def test_node_drain_killed_after_the_change_is_settled_by_the_next_node_command(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    (node,) = _idle_nodes(1)
    reason = f"sk-fault-test {uuid.uuid4().hex[:6]}"
    log = tmp_path / "node.log"
    common = ("--yes", "--log", str(log), "--lock", str(tmp_path / "lock"))
    with _resumed_at_end(node, reason):
        killed = slurmkit("node", "drain", node, "--reason", reason, *common,
                          point="node-drain.after-change")  # fmt: skip
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert [r["action"] for r in _log_actions(log)] == ["will-drain"]  # no outcome yet
        assert "DRAIN" in _state(node)  # but the node was drained
        again = slurmkit("node", "resume", node, *common)
        assert again.returncode == 0, again.stderr
        notes = [ln for ln in _errors(again.stderr) if "settled" in ln]
        assert len(notes) == 1 and f"{node} drain done" in notes[0], again.stderr
        rows = _log_actions(log)
        assert [r["action"] for r in rows] == ["will-drain", "drain", "will-resume", "resume"]
        assert rows[1]["reconciled"] == "yes" and "DRAIN" in rows[1]["after"]
        assert "DRAIN" not in _state(node)


def test_node_drain_whose_update_gets_no_answer_reports_the_checked_answer(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    (node,) = _idle_nodes(1)
    reason = f"sk-fault-test {uuid.uuid4().hex[:6]}"
    ctld = recorded_pid(cluster, "slurmctld")
    log = tmp_path / "node.log"
    argv = [str(SLURMKIT), "node", "drain", node, "--reason", reason, "--yes", "--json",
            "--log", str(log), "--lock", str(tmp_path / "lock")]  # fmt: skip
    with (
        _resumed_at_end(node, reason),
        stopping_shim(tmp_path / "shim", "scontrol", ctld, "update") as shim,
    ):
        code, out, err = _run_resuming(argv, shim, ctld, "reading the state of")
        assert code == 0, err
        (row,) = json.loads(out)["nodes"]
        assert row["action"] == "done" and "no answer from Slurm; read back: done" in row["why"]
        rows = _log_actions(log)
        assert [r["action"] for r in rows] == ["will-drain", "drain"]
        assert rows[1]["checked"] == "after-no-answer" and "DRAIN" in _state(node)


# ---------------------------------------------------------------- a controller that stays hung


def test_undrain_on_a_controller_that_stays_hung_is_unknown_bounded_and_settled_later(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    """slurmctld stopped at the update and not continued while undrain runs: the update and
    every read-back time out. The answer is "unknown" (exit 2, never undrain-failed), after
    saying on stderr what it waits for; the intent stays open, and the next run, with
    slurmctld back, settles it with the state Slurm reports. The seconds are printed."""
    (node,) = _idle_nodes(1)
    ctld = recorded_pid(cluster, "slurmctld")
    log = tmp_path / "undrain.log"
    common = ("-w", node, "--yes", "--log", str(log), "--lock", str(tmp_path / "lock"))
    with _drained({node: KTF}):
        with stopping_shim(tmp_path / "shim", "scontrol", ctld, "update") as shim:
            start = time.monotonic()
            code, _, err = _run_resuming([str(SLURMKIT), "undrain", *common], shim, ctld, "\0never")
            took = time.monotonic() - start
        assert code == 2, err
        assert "no answer from Slurm: reading the state of" in err  # progress, before the end
        assert "Traceback" not in err and "undrain-failed" not in log.read_text()
        # undrain-unknown keeps the intent open (auditlog.still_open)
        assert [r["action"] for r in _log_actions(log)] == ["will-undrain", "undrain-unknown"]
        again = slurmkit("undrain", *common)
        assert again.returncode == 0, again.stderr
        notes = [ln for ln in _errors(again.stderr) if "settled" in ln]
        assert len(notes) == 1 and node in notes[0], again.stderr
        assert _log_actions(log)[2]["reconciled"] == "yes"
        assert "DRAIN" not in _state(node)
    print(f"undrain on a controller hung at its update: exit 2 after {took:.1f} s; {err!r}")


def test_undrain_with_a_log_in_a_missing_folder_changes_nothing(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    """The third unwritable log of issue 22 (full, read-only, missing folder)."""
    (node,) = _idle_nodes(1)
    log = tmp_path / "no-such-folder" / "undrain.log"
    with _drained({node: KTF}):
        result = slurmkit("undrain", "-w", node, "--yes", "--log", str(log),
                          "--lock", str(tmp_path / "lock"))  # fmt: skip
        assert result.returncode == 2, result.stderr
        (line,) = _errors(result.stderr)
        assert line.startswith("slurmkit: --log") and "nothing was done" in line, line
        assert "DRAIN" in _state(node) and not log.parent.exists()
