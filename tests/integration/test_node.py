"""``slurmkit node drain|resume|reboot|show`` on the real sandbox.

drain/resume/show use the shared cluster's idle nodes and resume whatever they left
drained in a ``finally``. A real leftover is made the way undrain's tests make one: a
job's child that escapes it (setsid) and outlives it with ``SLURM_JOB_ID`` in its
environment. Reboot runs on a private 2-node sandbox of the same version on other
ports (its own RebootProgram restarts that node's slurmd), so no other test's node
ever reboots under it; the refusal without RebootProgram is proven by unit tests on
the config recorded from the live cluster and, here, by the live config's parse.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.hostlist import fold
from slurmkit.nodechange import auditlog
from slurmkit.slurm import nodeops, query
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import SPARE_SLOT, poll, session_slot, slot_spec, submit
from tests.integration.test_undrain import _alive, _ended, _idle_nodes, _ssh


@pytest.fixture
def nodes_back() -> Iterator[list[str]]:
    """Nodes a test drains; afterwards each one still drained with a test reason is resumed."""
    touched: list[str] = []
    yield touched
    if touched:
        left = [
            n.name
            for n in query.nodes(fold(touched), exact_reasons=True)
            if "DRAIN" in n.flags and (n.reason or "").startswith("sk-node-test")
        ]
        if left:
            run_slurm(["scontrol", "update", f"nodename={fold(left)}", "state=resume"])


def _json(run_cli, *args: str, exit_code: int = 0) -> dict:
    return json.loads(run_cli("node", *args, "--json", exit_code=exit_code).stdout)


@pytest.mark.smoke
def test_drain_then_resume_with_a_log(
    cluster: sandbox.SandboxSpec, run_cli, nodes_back: list[str], tmp_path: Path
) -> None:
    a, b = _idle_nodes(2)
    nodes_back.extend([a, b])
    reason = f"sk-node-test {uuid.uuid4().hex[:6]}"
    log = tmp_path / "node.log"
    lock = ["--lock", str(tmp_path / "node.lock"), "--log", str(log)]
    report = _json(run_cli, "drain", fold([a, b]), "--reason", reason, "--yes", *lock)
    assert [r["action"] for r in report["nodes"]] == ["done", "done"]
    for node in query.nodes(fold([a, b]), exact_reasons=True):
        assert node.is_drained and node.reason == reason and node.reason_user == "root"
    shown = _json(run_cli, "show", a)
    assert shown["state"] == "IDLE+DRAIN" and shown["reason"] == reason
    report = _json(run_cli, "resume", fold([a, b]), "--yes", *lock)
    assert all(r["found"].startswith("no leftovers") for r in report["nodes"]), report
    assert all("DRAIN" not in n.flags for n in query.nodes(fold([a, b])))
    actions = [r.action for r in auditlog.read(log)]
    assert actions == ["will-drain"] * 2 + ["drain"] * 2 + ["will-resume"] * 2 + ["resume"] * 2


def test_resume_skips_a_node_with_a_real_leftover_and_lists_it(
    cluster: sandbox.SandboxSpec, run_cli, nodes_back: list[str], tmp_path: Path
) -> None:
    a, b = _idle_nodes(2)
    escape = "setsid sh -c 'trap \"\" TERM; exec sleep 611' </dev/null >/dev/null 2>&1 &"
    job = submit("-w", a, "--chdir", "/tmp", "-J", "sk-node-leftover", "--wrap", escape)
    leftover = 0
    try:
        poll(lambda: _ended(job), 60, "the job to end")
        found = poll(lambda: _ssh(a, "pgrep -x -f 'sleep 611'").stdout.split(), 30, "leftover")
        (leftover,) = (int(p) for p in found)  # type: ignore[union-attr]
        nodes_back.extend([a, b])
        reason = f"sk-node-test {uuid.uuid4().hex[:6]}"
        lock = ["--lock", str(tmp_path / "node.lock")]
        run_cli("node", "drain", fold([a, b]), "--reason", reason, "--yes", *lock)
        report = _json(run_cli, "resume", fold([a, b]), "--yes", *lock, exit_code=1)
        rows = {r["node"]: r for r in report["nodes"]}
        assert rows[a]["action"] == "skipped" and "leftovers found" in rows[a]["why"]
        assert any(p.startswith(f"{leftover} ") for p in rows[a]["processes"]), rows[a]
        assert rows[b]["action"] == "done"
        (node_a,) = query.nodes(a, exact_reasons=True)
        assert node_a.is_drained and node_a.reason == reason  # left as it was
        assert _alive(a, leftover)  # resume never kills
        # --no-check returns it anyway (the admin's call)
        report = _json(run_cli, "resume", a, "--no-check", "--yes", *lock)
        assert report["nodes"][0]["action"] == "done"
    finally:
        run_slurm(["scancel", job])
        if leftover:
            _ssh(a, f"kill -KILL {leftover} 2>/dev/null || true")


def test_show_lists_jobs_on_the_node_and_its_history(cluster: sandbox.SandboxSpec, run_cli) -> None:
    (a,) = _idle_nodes(1)
    done = submit("-w", a, "-J", "sk-node-show-done", "--wrap", "true")
    poll(lambda: _ended(done), 60, "the short job to end")
    job = submit("-w", a, "-J", "sk-node-show", "--wrap", "sleep 120")
    try:
        poll(lambda: any(j.is_running for j in query.jobs(job_ids=[job])), 60, "job running")

        def history() -> dict | None:
            shown = _json(run_cli, "show", a)
            return shown if any(h["job"] == done for h in shown["history"]) else None

        shown = poll(history, 30, "the finished job in the node's sacct history")
        assert shown["node"] == a  # type: ignore[index]
        assert [j["job"] for j in shown["jobs"]] == [job]  # type: ignore[index]
        text = run_cli("node", "show", a).stdout
        assert "sk-node-show" in text and "history since" in text
    finally:
        run_slurm(["scancel", job])


def test_the_live_config_names_the_sandbox_reboot_program(cluster: sandbox.SandboxSpec) -> None:
    """What the refusal reads: RebootProgram as the live slurmctld reports it.

    A sandbox started before RebootProgram existed reports none: then a reboot is
    refused there, which is checked with a dry run (nothing is issued either way).
    """
    program = nodeops.reboot_program(nodeops.show_config())
    if program is None:
        from click.testing import CliRunner

        from slurmkit.cli import cli

        result = CliRunner().invoke(cli, ["node", "reboot", "node-1", "--dry-run"])
        assert result.exit_code == 2 and "RebootProgram is not set" in result.stderr
    else:
        assert program == str(cluster.bin_dir / "slurmkit-reboot")


@pytest.fixture(scope="module")
def private() -> Iterator[sandbox.SandboxSpec]:
    """A 2-node sandbox of the session's version on other ports: only these nodes reboot."""
    # its slot's own dir: a pid would repeat in the PID namespaces of parallel sessions
    spec = slot_spec(
        session_slot() + 2 * SPARE_SLOT,
        nodes=2,
        slurm=os.environ.get("SLURMKIT_TEST_SLURM", ""),
    )
    report = sandbox.up(spec, install=False)
    try:
        yield report.spec
    finally:
        sandbox.down(spec.dir)
        shutil.rmtree(spec.dir, ignore_errors=True)


def _daemon_logs(spec: sandbox.SandboxSpec, lines: int = 25) -> str:
    """The last lines of slurmctld's and each slurmd's log, for a failure message."""
    out = []
    for log in sorted(spec.path("log").glob("slurm*.log")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        out.append(f"--- {log.name}\n" + "\n".join(tail))
    return "\n" + "\n".join(out)


def test_reboot_follows_the_nodes_back_to_idle(
    private: sandbox.SandboxSpec,
    run_cli,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("SLURM_CONF", str(private.slurm_conf))
    if private.root:
        monkeypatch.setenv("PATH", f"{private.bin_dir}:{os.environ['PATH']}")
    before = {n.name: n.boot_time for n in query.nodes("node-[1-2]")}
    log = tmp_path / "reboot.log"
    result = run_cli(
        "node", "reboot", "node-[1-2]", "--reason", "sk-node-test image", "--yes",
        "--timeout", "120", "--poll", "0.5", "--log", str(log),
        "--lock", str(tmp_path / "node.lock"), "--json",
    )  # fmt: skip
    report = json.loads(result.stdout)
    assert [r["action"] for r in report["nodes"]] == ["done", "done"], report
    assert "REBOOT_ISSUED" in result.stderr or "REBOOT_REQUESTED" in result.stderr
    after = {n.name: n for n in query.nodes("node-[1-2]")}
    for name, node in after.items():
        assert node.state == "IDLE" and not node.flags, node.state_text
        assert node.boot_time and before[name] and node.boot_time >= before[name]
        if private.slurm == "22.05":
            # 22.05's slurmctld ends a reboot only on a boot time after the request (the
            # sandbox's slurmd -b reports one); 26.05 ends it when slurmd re-registers, and
            # the sandbox node keeps the host's boot time there
            assert node.boot_time > before[name]
    actions = sorted(r.action for r in auditlog.read(log))
    assert actions == ["reboot"] * 2 + ["will-reboot"] * 2
    # the node runs jobs again after its reboot
    out = run_slurm(["srun", "-w", "node-1", "-N1", "hostname"], timeout=60).stdout
    assert out.strip() == "node-1"


# Rebooted again right after the test above, often in the very second they booted: the
# regression test for the sandbox's reported boot time (configs.NODE_SUPERVISOR, issue 17)
# and, at 22.05, for node reboot's wait for a fresh boot (reboot.FRESH_BOOT: without it,
# two CI rehearsals under load saw both nodes stay IDLE+REBOOT_ISSUED here).
def test_reboot_validate_drains_the_node_that_fails_its_check(
    private: sandbox.SandboxSpec, run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """--validate runs faulty scan on the nodes once back; node-2 fails its cmd check (a
    marker file names it) and is drained by the scan's drain, node-1 passes."""
    monkeypatch.setenv("SLURM_CONF", str(private.slurm_conf))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    if private.root:
        monkeypatch.setenv("PATH", f"{private.bin_dir}:{os.environ['PATH']}")
    (tmp_path / "broken-node-2").touch()
    check = f"cmd:test ! -e {tmp_path}/broken-$(hostname)"
    try:
        result = run_cli(
            "node", "reboot", "node-[1-2]", "--yes", "--timeout", "120", "--poll", "0.5",
            "--validate", check, "--check-dir", str(tmp_path / "checks"),
            "--lock", str(tmp_path / "node.lock"), "--json", exit_code=1,
        )  # fmt: skip
        report = json.loads(result.stdout)
        rows = {r["node"]: r for r in report["nodes"]}
        # the why of each row, and what slurmctld and the slurmds said (a rehearsal under
        # load saw both nodes stay REBOOT_ISSUED for 120 s, with no log left to read)
        whole = json.dumps(report, indent=1) + "\n" + result.stderr + _daemon_logs(private)
        assert rows["node-1"]["action"] == "done", whole
        assert (
            rows["node-2"]["action"] == "failed"
            and "drained by faulty scan" in rows["node-2"]["why"]
        ), whole
        assert report["validation"]["failing"] == ["node-2"]
        (node2,) = query.nodes("node-2", exact_reasons=True)
        assert "DRAIN" in node2.flags and (node2.reason or "").startswith("slurmkit: cmd:")
        (node1,) = query.nodes("node-1")
        assert node1.state == "IDLE" and not node1.flags
    finally:
        run_slurm(["scontrol", "update", "nodename=node-2", "state=resume"], check=False)


def test_a_node_that_never_comes_back_is_reported_after_the_timeout(
    private: sandbox.SandboxSpec, run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """node-2's slurmd is frozen (SIGSTOP): the reboot is accepted by slurmctld, but the node
    never runs its RebootProgram: reported after --timeout, exit 1."""
    import signal

    from tests.integration.conftest import slurmd_pid

    monkeypatch.setenv("SLURM_CONF", str(private.slurm_conf))
    if private.root:
        monkeypatch.setenv("PATH", f"{private.bin_dir}:{os.environ['PATH']}")
    slurmd = slurmd_pid(private, "node-2")
    os.kill(slurmd, signal.SIGSTOP)
    try:
        result = run_cli(
            "node", "reboot", "node-2", "--yes", "--timeout", "6", "--poll", "0.5",
            "--lock", str(tmp_path / "node.lock"), exit_code=1,
        )  # fmt: skip
        assert "not back within --timeout 6 s" in result.stdout
        assert "node-2 not back within 6 s" in result.stderr
    finally:
        os.kill(slurmd, signal.SIGCONT)
