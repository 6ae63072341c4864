"""``cpus check``, ``faulty scan`` (with --drain) and ``faulty history`` on the sandbox cluster.

``cpus check`` must say "affected" on 22.05 and "not affected" on 24.11/26.05. A node
is made faulty for the scan by a check command that fails on node-3 only. The drain
test resumes node-3 in a ``finally`` (only if it still carries our reason); every job
has a unique name and is cancelled at the end. Other engineers share the cluster, so
nodes they drained show up as unavailable and are tolerated.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from slurmkit.slurm.records import Node
from tests.integration.conftest import poll, sacct_state, submit

FAULTY = "node-3"
CMD = f'cmd:test "$SLURMD_NODENAME" != {FAULTY}'
CHECKS = f"python,gpu-count,{CMD}"
REASON = f"slurmkit: {CMD} failed"
SMALL = ("--set", "cpus_per_task=1")


def _node(name: str) -> Node:
    (node,) = query.nodes(name)
    return node


def _can_run(name: str) -> bool:
    node = _node(name)
    return node.state in ("IDLE", "MIXED", "ALLOCATED") and not node.flags & {
        "DRAIN",
        "NOT_RESPONDING",
    }


@pytest.fixture
def faulty_node_ready(cluster: sandbox.SandboxSpec) -> Iterator[str]:
    """node-3 able to run jobs (another test may have it drained for a moment)."""
    poll(lambda: _can_run(FAULTY), 300, f"{FAULTY} to accept jobs")
    yield FAULTY


def _scan(run_cli, tmp_path: Path, *extra: str, exit_code: int = 1) -> dict:
    result = run_cli(
        "faulty",
        "scan",
        "-w",
        "node-[1-4]",
        "--checks",
        CHECKS,
        "--dir",
        str(tmp_path),
        "--timeout",
        "300",
        *SMALL,
        "--json",
        *extra,
        exit_code=exit_code,
    )
    return json.loads(result.stdout)


def _ours_drained() -> list[str]:
    return [n.name for n in query.nodes() if "DRAIN" in n.flags and n.reason == REASON]


@pytest.mark.smoke
def test_cpus_check_reports_affected_on_22_05_only(
    cluster, run_cli, tmp_path, slurm_version
) -> None:
    """22.05: a plain srun gives each task 1 CPU ("affected"); 23.11+ inherit it (not)."""
    affected = slurm_version == "22.05"
    code = 1 if affected else 0
    result = run_cli("cpus", "check", "--dir", str(tmp_path), "-c", "2", "--json", exit_code=code)
    data = json.loads(result.stdout)
    assert data["slurm"].startswith(slurm_version) and data["requested"] == 2
    assert data["affected"] is affected and data["expected_affected"] is affected
    given = {m["mode"]: m["cpus_per_task_given"] for m in data["modes"]}
    assert given["srun-exact"] == (1 if affected else 2)  # plain srun: 1 CPU per task on 22.05
    assert given["srun-cpus-per-task"] == 2 and given["srun-env"] == 2
    text = run_cli("cpus", "check", "--dir", str(tmp_path), exit_code=code).stdout
    if affected:
        assert data["fixes"][0].startswith("srun --cpus-per-task=$SLURM_CPUS_PER_TASK")
        assert (
            f"Slurm {data['slurm']}: affected: a plain srun gives each task 1 CPU(s), not the 2"
            in text
        )
    else:
        assert data["fixes"] == []
        assert f"Slurm {data['slurm']}: not affected" in text


def test_faulty_scan_finds_the_faulty_node(run_cli, tmp_path, faulty_node_ready) -> None:
    data = _scan(run_cli, tmp_path)
    results = {n["node"]: n for n in data["nodes"]}
    assert results[FAULTY]["result"] == "FAIL"
    checks = {c["check"]: c for c in results[FAULTY]["checks"]}
    assert checks[CMD]["status"] == "fail" and checks[CMD]["detail"].startswith("exit 1")
    assert data["exclude"] == FAULTY and data["failing"] == FAULTY
    for name, node in results.items():
        if name == FAULTY or node["result"] == "unavailable":  # drained by another test
            continue
        statuses = {c["check"]: c["status"] for c in node["checks"]}
        assert statuses == {"python": "pass", "gpu-count": "skipped", CMD: "pass"}  # no GPU
        assert node["result"] == "skipped"  # a GPU check without a driver never passes
    assert data["job_state"] == "FAILED" and Path(data["log"]).is_file()


def test_faulty_scan_dry_run_drains_nothing(run_cli, tmp_path, faulty_node_ready) -> None:
    try:
        data = _scan(run_cli, tmp_path, "--drain", "--dry-run", "--yes")
        assert data["drain"]["dry_run"] is True and data["drain"]["done"] is False
        assert data["drain"]["groups"] == [{"reason": REASON, "nodes": FAULTY}]
        assert "DRAIN" not in _node(FAULTY).flags and _ours_drained() == []
        data = _scan(run_cli, tmp_path, "--drain")  # no terminal, no --yes: a dry run too
        assert data["drain"]["dry_run"] is True and _ours_drained() == []
    finally:
        _resume_ours()


def test_faulty_scan_ignores_a_result_line_for_a_node_outside_the_job(
    run_cli, tmp_path, faulty_node_ready
) -> None:
    """Issue 14 #4: the job prints a failing line for a node it never ran on; --drain plans
    nothing for it. The job is pinned to the faulty node, the forged line names another."""
    forged = "node-4" if FAULTY != "node-4" else "node-2"
    line = f"SLURMKIT_CHECK node={forged} check=python status=fail detail=forged"
    result = run_cli(
        "faulty", "scan", "-w", FAULTY, "--checks", "python", "--dir", str(tmp_path),
        "--timeout", "300", *SMALL, "--set", f"setup=echo {line}", "--drain", "--dry-run",
        "--json", exit_code=0,
    )  # fmt: skip
    data = json.loads(result.stdout)
    assert data["ignored"] == [forged] and data["allocation"] == FAULTY
    assert [n["node"] for n in data["nodes"]] == [FAULTY]
    assert data["drain"]["groups"] == []
    assert f"ignoring result lines for {forged}: not in job {data['job_id']}'s" in result.stderr


def test_faulty_scan_drain_drains_exactly_the_faulty_node(
    run_cli, tmp_path, faulty_node_ready
) -> None:
    try:
        data = _scan(run_cli, tmp_path, "--drain", "--yes")
        assert data["drain"]["done"] is True
        assert _ours_drained() == [FAULTY]
        node = _node(FAULTY)
        assert "DRAIN" in node.flags and node.reason == REASON
        assert data["drain"]["states"][FAULTY] == node.state_text
    finally:
        _resume_ours()
    assert _ours_drained() == []


def _resume_ours() -> None:
    ours = _ours_drained()
    if ours:
        run_slurm(["scontrol", "update", f"nodename={','.join(ours)}", "state=resume"])


def test_faulty_scan_that_never_starts_times_out_with_the_reason(
    cluster, run_cli, tmp_path
) -> None:
    result = run_cli(
        "faulty",
        "scan",
        "-w",
        "node-1",
        "--checks",
        "python",
        "--dir",
        str(tmp_path),
        "--timeout",
        "3",
        "--set",
        "sbatch_extra=--begin=now+1hour",
        *SMALL,
        exit_code=2,
    )
    assert "did not start within 3 s (pending: BeginTime); cancelled it" in result.stderr
    job_id = result.stderr.split("check job ")[1].split()[0]
    poll(lambda: sacct_state(job_id) == "CANCELLED", 60, f"job {job_id} cancelled")


@pytest.fixture
def failing_jobs(cluster: sandbox.SandboxSpec) -> Iterator[tuple[str, list[str]]]:
    name = f"sk-hist-{uuid.uuid4().hex[:8]}"
    ids: list[str] = []
    try:
        for _ in range(3):
            ids.append(submit(f"--job-name={name}", "-w", "node-2", "-t", "1", "--wrap", "exit 1"))
        yield name, ids
    finally:
        run_slurm(["scancel", f"--name={name}"], check=False)


def test_faulty_history_ranks_the_node_with_failing_jobs(run_cli, failing_jobs) -> None:
    _, ids = failing_jobs
    for job_id in ids:
        poll(lambda j=job_id: sacct_state(j) == "FAILED", 300, f"job {job_id} to fail")

    def history() -> dict:
        return json.loads(
            run_cli("faulty", "history", "--since", "1h", "--top", "0", "--json").stdout
        )

    # slurmdbd answers `sacct -j` about a finished job about a second before a --starttime
    # window query lists it (seen on a fresh cluster): wait for the history itself.
    def listed() -> dict | None:
        data = history()
        node2 = [n for n in data["nodes"] if n["node"] == "node-2"]
        return data if node2 and set(ids) <= set(node2[0]["failed_jobs"]) else None

    data = poll(listed, 30, f"faulty history to list jobs {ids} on node-2")
    nodes = {n["node"]: n for n in data["nodes"]}
    node2 = nodes["node-2"]
    assert set(ids) <= set(node2["failed_jobs"]) and node2["failed"] >= 3
    keys = [(-(n["failed"] + n["node_fail"]), -n["node_fail"]) for n in data["nodes"]]
    assert keys == sorted(keys)
    table = run_cli("faulty", "history", "--since", "1h", "--top", "0").stdout
    assert any(line.split()[0] == "node-2" for line in table.splitlines()[2:])
