"""The Slurm layer against the real sandbox: every query, the records it returns, its call count."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.errors import NotFound, SlurmkitError
from slurmkit.slurm import _exec, query
from slurmkit.slurm._exec import run_slurm
from slurmkit.slurm.records import ProcessInfo
from tests.integration.conftest import poll, sacct_state, submit


@pytest.fixture
def running_job(cluster: sandbox.SandboxSpec) -> Iterator[str]:
    """A 2-node job holding 2 GPUs per node, running until the test ends (7-minute limit)."""
    job_id = submit("-N2", "--gres=gpu:2", "-t", "7", "-J", "sk-query", "--wrap", "srun sleep 300")
    poll(lambda: query.jobs(job_ids=[job_id])[0].state == "RUNNING", 60, "job to run")
    yield job_id
    run_slurm(["scancel", job_id])


def test_version_is_the_installed_one(cluster: sandbox.SandboxSpec) -> None:
    assert (query.version().major, query.version().minor) >= (22, 5)


@pytest.mark.smoke
def test_nodes_is_one_call_for_all_nodes(cluster: sandbox.SandboxSpec) -> None:
    before = len(_exec.call_log)
    nodes = query.nodes()
    assert len(_exec.call_log) - before == 1
    assert [n.name for n in nodes] == cluster.node_names
    node = nodes[1]
    assert node.cpus == cluster.cpus
    assert node.gres == f"gpu:{cluster.gpus}"
    assert node.address == cluster.node_addr(2)
    assert set(node.partitions) == {"gpu", "cpu"}


def test_unknown_node_is_not_found(cluster: sandbox.SandboxSpec) -> None:
    with pytest.raises(NotFound):
        query.nodes(["node-99"])


def test_running_job_records(running_job: str) -> None:
    (listed,) = query.jobs(job_ids=[running_job])
    assert listed.name == "sk-query"
    assert listed.num_nodes == 2
    detail = query.job(running_job)
    assert detail.state == "RUNNING"
    assert detail.gres_per_node == "gpu:2"
    assert len(detail.gres_detail) >= 1
    assert detail.time_limit == 7 * 60
    assert query.job_nodelist(running_job) == detail.nodelist
    assert detail.nodelist.startswith("node-")


def test_listpids_finds_the_job_processes(running_job: str) -> None:
    node = query.job(running_job).batch_host
    assert node

    def listed() -> list[ProcessInfo]:
        # RUNNING is the controller's word; the node's slurmd knows the job only once its
        # batch step has started, a moment later (CI, 22.05: "JobId=108 does not exist on
        # node node-1" right after RUNNING).
        try:
            return query.listpids(running_job, node)
        except NotFound:
            return []

    pids = poll(listed, 60, "the batch step's processes on its node")
    assert isinstance(pids, list) and all(p.job_id == running_job for p in pids)


def test_pending_job_has_no_nodes(cluster: sandbox.SandboxSpec) -> None:
    job_id = submit("-H", "--wrap", "true")  # held: stays pending
    try:
        with pytest.raises(SlurmkitError, match="no nodes allocated"):
            query.job_nodelist(job_id)
        detail = query.job(job_id)
        assert detail.held
        # No --time in a MaxTime=INFINITE partition: no limit. Only a job that has not
        # started reads so for sure: when the backfill scheduler starts such a job, Slurm
        # gives it its planning horizon, TimeLimit=365-00:00:00 (backfill.c,
        # _set_backfill_timelimits: YEAR_MINUTES), and that limit is the job's from then on.
        assert detail.time_limit is None
    finally:
        run_slurm(["scancel", job_id])


def test_unknown_job(cluster: sandbox.SandboxSpec) -> None:
    with pytest.raises(NotFound):
        query.job("999999")
    with pytest.raises(NotFound):
        query.job_nodelist("999999")


def test_partitions(cluster: sandbox.SandboxSpec) -> None:
    parts = {p.name: p for p in query.partitions()}
    assert set(parts) == {"gpu", "cpu"}
    assert parts["gpu"].default and not parts["cpu"].default
    assert query.partition_nodelist("cpu") == cluster.nodelist
    with pytest.raises(NotFound):
        query.partition_nodelist("nope")


def test_drained_node_shows_reason_and_state(cluster: sandbox.SandboxSpec) -> None:
    run_slurm(["scontrol", "update", "nodename=node-3", "state=drain", "reason=sk test drain"])
    try:
        reasons = [r for r in query.drain_reasons() if r.reason == "sk test drain"]
        assert [r.nodelist for r in reasons] == ["node-3"]
        assert reasons[0].user == "root"
        assert "node-3" in query.nodes_in_state("drain")
        (node,) = query.nodes(["node-3"])
        assert node.is_drained and node.reason == "sk test drain"
    finally:
        run_slurm(["scontrol", "update", "nodename=node-3", "state=resume"])
    assert "node-3" not in query.nodes_in_state("drain")


def test_sacct_history_of_a_finished_job(cluster: sandbox.SandboxSpec, tmp_path: Path) -> None:
    job_id = submit("-o", str(tmp_path / "out"), "--wrap", "exit 3")
    poll(lambda: sacct_state(job_id) == "FAILED", 60, "job to fail")
    (record,) = [j for j in query.sacct_jobs(job_ids=[job_id]) if j.job_id == job_id]
    assert record.state == "FAILED"
    assert record.exit_code == 3


def test_a_hostile_job_name_and_workdir_do_not_blind_all_users_queries(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    """Issue 14: a job name with \\x1f and a newline, in a WorkDir with a newline, broke
    the parse of every all-users squeue and sacct; each record is now read whole.

    Held while squeue looks, then released and read again from accounting once done.
    """
    evil_dir = tmp_path / "x\x1fy\nz"
    evil_dir.mkdir()
    evil_name = "evil\x1fname\nline2"
    hostile = submit(
        "-H", "-J", evil_name, "-D", str(evil_dir), "-o", "/dev/null", "--wrap", "true"
    )
    plain = submit("-H", "-J", "sk-plain", "-o", "/dev/null", "--wrap", "true")
    try:
        jobs = {j.job_id: j for j in query.jobs()}
        assert jobs[hostile].name == evil_name and jobs[hostile].work_dir == str(evil_dir)
        assert jobs[plain].name == "sk-plain"
        run_slurm(["scontrol", "release", f"{hostile},{plain}"])
        for job_id in (hostile, plain):
            poll(lambda j=job_id: sacct_state(j) == "COMPLETED", 60, "the jobs to complete")
    finally:
        run_slurm(["scancel", hostile, plain])

    # Job ids restart with each sandbox while accounting keeps older jobs of the same id;
    # and a held job's record has no name ('allocation') until slurmdbd writes its start.
    def history() -> list[tuple[str, str, str | None]]:
        return [(j.job_id, j.name, j.work_dir) for j in query.sacct_jobs(job_ids=[hostile, plain])]

    poll(
        lambda: any(j == plain and n == "sk-plain" for j, n, _ in history()),
        60,
        "accounting to catch up",
    )
    poll(lambda: (hostile, evil_name, str(evil_dir)) in history(), 60, "the hostile record")
