"""Issue 29, items 4, 5 and 8 of "Why", and the hung ``cron stop``, on the sandbox.

- A reboot interrupted by Ctrl-C after its intent, before ``scontrol reboot`` left (a
  ``scontrol`` shim sends SIGINT to slurmkit when asked to reboot, and never runs the
  real one): the next node command settles it "not done" (BootTime unchanged), where it
  said "reboot done (now IDLE)".
- undrain killed (``kill -9`` at ``undrain.after-update``) after returning a node, the node
  drained again before the next run: settled "returned, drained again since", where it
  logged ``undrain-failed``.
- ``train hold`` and ``job extend`` to a set limit with slurmctld stopped at the call: 22.05
  (24.11, 26.05 too) answers "Unexpected message received", which was taken for a refusal
  (exit 2, no read-back, and Slurm held the runs once it continued); now read back.
- every refusal and every stopped-controller answer this version gives to the calls of
  ``tests/integration/refusal_cases.py`` is classified by what happened.
- ``cron stop`` with slurmctld stopped at its scancel: one scancel, one read, "asked to
  cancel", where it tried every chain and then said "cancelled".
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from slurmkit import _proc, sandbox
from slurmkit.slurm import _exec, query, recheck, refusals
from slurmkit.slurm._exec import run_slurm
from tests.integration import refusal_cases
from tests.integration.conftest import poll, recorded_pid
from tests.integration.test_faults_admin import (
    LIMIT,
    _env,
    _errors,
    _init,
    _log_actions,
    _run_resuming,
    _state,
    cron_dir,  # noqa: F401  (a fixture)
    slurmkit,
    stopping_shim,
)
from tests.integration.test_train_faults import SLURMKIT, make_train, started  # noqa: F401
from tests.integration.test_undrain import KTF, _drained, _idle_nodes

# ---------------------------------------------------------------- settling by evidence


def test_a_reboot_interrupted_before_its_request_is_settled_not_done(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    (node,) = _idle_nodes(1)
    (before,) = query.nodes(node)
    real = shutil.which("scontrol")
    assert real
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "scontrol").write_text(
        "#!/bin/bash\n"
        '[[ "${1:-}" == reboot ]] && { kill -INT "$PPID"; sleep 30; exit 130; }\n'
        f'exec {shlex.quote(real)} "$@"\n'
    )
    (shim / "scontrol").chmod(0o755)
    log = tmp_path / "node.log"
    common = ("--yes", "--log", str(log), "--lock", str(tmp_path / "lock"))
    interrupted = subprocess.run(
        [str(SLURMKIT), "node", "reboot", node, "--no-wait", *common],
        env=_env(path_first=shim), capture_output=True, text=True, timeout=LIMIT, check=False,
    )  # fmt: skip
    assert interrupted.returncode in (130, -signal.SIGINT), interrupted.stderr
    assert [r["action"] for r in _log_actions(log)] == ["will-reboot"]
    (now,) = query.nodes(node)
    assert now.boot_time == before.boot_time and not now.flags  # never rebooted
    again = slurmkit("node", "resume", node, "--no-check", *common)  # nothing to resume
    assert again.returncode == 0, again.stderr
    (note,) = [ln for ln in _errors(again.stderr) if "settled" in ln]
    assert f"{node} reboot not done: no reboot flag, booted" in note, note
    rows = _log_actions(log)
    assert [r["action"] for r in rows] == ["will-reboot", "reboot-failed"], rows
    assert rows[1]["reconciled"] == "yes" and "before the intent" in rows[1]["evidence"]


def test_an_undrain_killed_after_returning_a_node_drained_again_is_settled_returned(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    (node,) = _idle_nodes(1)
    log = tmp_path / "undrain.log"
    common = ("-w", node, "--yes", "--log", str(log), "--lock", str(tmp_path / "lock"))
    with _drained({node: KTF}):
        (first,) = query.nodes(node, exact_reasons=True)
        killed = slurmkit("undrain", *common, point="undrain.after-update")
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert [r["action"] for r in _log_actions(log)] == ["will-undrain"]
        assert "DRAIN" not in _state(node)  # the killed run had returned it
        # drained again, with Slurm's own reason, in a later second than the first drain
        assert first.reason_time is not None
        first_second = int(first.reason_time.timestamp())
        poll(lambda: int(time.time()) > first_second, 5, "a second after the first drain")
        # back in service (a returned node is idle* until slurmctld's next ping) before
        # Slurm's own drain comes again; the next run then finds it clean and returns it
        poll(lambda: not query.nodes(node)[0].is_not_responding, 60, f"{node} responding")
        run_slurm(["scontrol", "update", f"nodename={node}", "state=drain", f"reason={KTF}"])
        (again_drained,) = query.nodes(node, exact_reasons=True)
        again = slurmkit("undrain", *common)
    assert again.returncode == 0, again.stderr
    (note,) = [ln for ln in _errors(again.stderr) if "settled" in ln]
    stamp = again_drained.reason_time.isoformat(timespec="seconds")  # type: ignore[union-attr]
    assert f"{node} undrain done: returned, drained again since {stamp} ({KTF})" in note, note
    rows = _log_actions(log)
    assert (rows[1]["action"], rows[1]["reconciled"]) == ("undrain", "yes"), rows
    assert "undrain-failed" not in log.read_text()


# ---------------------------------------------------------------- refusals are a known list


def test_train_hold_on_a_stopped_slurmctld_is_read_back(
    cluster: sandbox.SandboxSpec,
    make_train,  # noqa: F811  (the fixture of test_train_faults)
    tmp_path: Path,
) -> None:
    train = make_train("hold29")
    ctld = recorded_pid(cluster, "slurmctld")
    try:
        started(train)
        poll(lambda: [s for _, s, _ in train.in_queue() if s == "PENDING"], 30, "pending runs")
        argv = [str(SLURMKIT), "train", "hold", train.name, "--yes", "--dir", str(train.trains)]
        with stopping_shim(tmp_path / "shim", "scontrol", ctld, "hold") as shim:
            code, _, err = _run_resuming(argv, shim, ctld, "no answer from Slurm: reading")
        assert code == 0, err
        assert "Unexpected message received" in err or "Socket timed out" in err, err
        assert "the queue shows the hold done" in err, err
        held = [r for _, s, r in train.in_queue() if s == "PENDING"]
        assert held and all(r.startswith("JobHeld") for r in held), held
        assert train.journal_open() == []
    finally:
        train.stop_everything()


def test_job_extend_to_a_set_limit_on_a_stopped_slurmctld_is_read_back(
    cluster: sandbox.SandboxSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.conftest import submit

    job = submit("--time=5", "--partition=cpu", "--wrap", "sleep 300")
    ctld = recorded_pid(cluster, "slurmctld")
    argv = [str(SLURMKIT), "job", "extend", job, "9", "--yes"]
    try:
        poll(lambda: query.job(job).state in ("RUNNING", "PENDING"), 60, "the job to be queued")
        env_state = tmp_path / "state"
        monkeypatch.setenv("XDG_STATE_HOME", str(env_state))  # its journal, not root's
        with stopping_shim(tmp_path / "shim", "scontrol", ctld, "update") as shim:
            code, out, err = _run_resuming(argv, shim, ctld, "no answer from Slurm: reading")
        assert code == 0, err
        assert "refused" not in err and "00:05:00 -> 00:09:00" in out, (out, err)
        assert query.job(job).time_limit == 9 * 60
        journal = env_state / "slurmkit" / "job-extend.journal"
        results = [json.loads(ln).get("result") for ln in journal.read_text().splitlines()]
        assert results == [None, "done"]
    finally:
        run_slurm(["scancel", job], check=False)


def test_this_versions_refusals_and_silences_are_classified_by_what_happened(
    cluster: sandbox.SandboxSpec,
) -> None:
    """The recorded cases (tests/fixtures/refusals/), asked again of this version's Slurm;
    the node changes are left out (their backlog would drain and reboot shared nodes)."""
    jobs = refusal_cases.make_jobs()
    run_slurm(["scancel", jobs.finished], check=False)
    poll(lambda: query.job(jobs.finished).is_finished, 30, "the job to end")
    ctld = recorded_pid(cluster, "slurmctld")
    wanted = [
        c
        for c in refusal_cases.cases(jobs)
        if c.situation in ("refused", "stopped") and not c.destructive
    ]
    try:
        found = refusal_cases.run_cases(
            wanted, ctld, Path(os.environ["SLURM_CONF"]), say=lambda _: None
        )
    finally:
        os.kill(ctld, signal.SIGCONT)
        run_slurm(["scancel", jobs.held, jobs.running, jobs.others, jobs.others_running],
                  check=False)  # fmt: skip
    wrong = []
    for case in found:
        argv = tuple(str(a) for a in case["argv"])  # type: ignore[union-attr]
        text = f"{case['stderr']}{case['stdout']}"
        result = _proc.Completed(
            argv, int(str(case["returncode"])), str(case["stdout"]), str(case["stderr"]), 0.0
        )
        done = _exec.classify(result)
        silent = recheck.no_answer(done)
        if case["situation"] == "refused" and (silent or case["returncode"] == 0):
            wrong.append((case["case"], text))
        if case["situation"] == "stopped" and not silent:
            wrong.append((case["case"], text))
        if case["situation"] == "stopped":
            assert refusals.meaning(text, argv[0]) == refusals.NO_ANSWER, case
    assert wrong == []


# ---------------------------------------------------------------- cron stop on a hung controller


def test_cron_stop_on_a_hung_controller_asks_once_and_says_asked_to_cancel(
    cluster: sandbox.SandboxSpec,
    cron_dir: tuple[Path, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    where, prefix = cron_dir
    _init(where, prefix)
    for period in ("hourly", "daily"):
        assert slurmkit("cron", "start", "--dir", str(where), period).returncode == 0
    ctld = recorded_pid(cluster, "slurmctld")
    argv = [str(SLURMKIT), "cron", "stop", "--dir", str(where), "hourly", "daily", "--yes"]
    start = time.monotonic()
    with stopping_shim(tmp_path / "shim", "scancel", ctld, None) as shim:
        code, _, err = _run_resuming(argv, shim, ctld, "\0never")  # hung for the whole stop
    took = time.monotonic() - start
    assert code == 2, err
    (line,) = _errors(err)
    assert f"asked to cancel {prefix}-daily; not asked: {prefix}-hourly" in line or (
        f"asked to cancel {prefix}-hourly; not asked: {prefix}-daily" in line
    ), line
    assert "whether they stopped is unknown" in line and "cancelled" not in line
    # slurmctld continued: the stop asked of one chain is settled by status, then stopped
    status = slurmkit("cron", "status", "--dir", str(where))
    assert "settled what an earlier cron command left open" in status.stderr, status.stderr
    again = slurmkit("cron", "stop", "--dir", str(where), "hourly", "daily", "--yes")
    assert again.returncode == 0, again.stderr
    print(f"cron stop of 2 chains on a controller hung at scancel: exit 2 after {took:.1f} s")
