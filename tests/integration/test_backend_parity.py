"""The pyslurm backend answers every read-only query with the command backend's records
(issue 18), on the Slurm 25.11 sandbox, in each scenario the suite builds: idle, drained
with reasons, running, pending, held, array and multi-node jobs. And its faults: a
controller that does not answer, pyslurm where the cluster is another version.

Both implementations of the one protocol (``backend.QueryBackend``), chosen by name as
``--backend`` chooses them, answer the same calls in this process, one after the other on
the same cluster state. A
job's run time ticks between the two reads, so each comparison is polled until both
agree (or fails with the fields that differ): never a timed assertion.

Runs only where pyslurm can run: the 25.11 sandbox (SLURMKIT_TEST_SLURM=25.11) with
pyslurm installed (scripts/test installs it); the version-mismatch test is the
opposite: pyslurm installed and a cluster of another version.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from slurmkit.hostlist import HostSet
from slurmkit.slurm import backend, query
from slurmkit.slurm._exec import run_slurm
from slurmkit.slurm.backend import QueryBackend
from tests.integration.conftest import poll, requested_slurm, submit

_PYSLURM = backend.pyslurm_version()
_ON_25_11 = requested_slurm() == "25.11"
live_pyslurm = pytest.mark.skipif(
    not (_ON_25_11 and _PYSLURM),
    reason="needs the Slurm 25.11 sandbox (SLURMKIT_TEST_SLURM=25.11) and pyslurm 25.11 "
    "installed against it (scripts/test does both)",
)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _back_to_the_environment() -> Iterator[None]:
    yield
    backend.choose(None)


def _implementation(name: str) -> QueryBackend:
    """The protocol's implementation of that name, selected as ``--backend NAME`` does."""
    backend.choose(name)
    try:
        chosen = backend.selected()
        assert chosen.name == name, chosen.detail
        return chosen.implementation
    finally:
        backend.choose(None)


def _with(name: str, read: Callable[[QueryBackend], Any]) -> Any:
    return read(_implementation(name))


def _differences(left: Any, right: Any, where: str = "") -> list[str]:
    if left == right:
        return []
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        return [
            d
            for i, (a, b) in enumerate(zip(left, right, strict=True))
            for d in _differences(a, b, f"{where}[{i}]")
        ]
    if dataclasses.is_dataclass(left) and type(left) is type(right):
        return [
            f"{where}.{f.name}: commands={getattr(left, f.name)!r} "
            f"pyslurm={getattr(right, f.name)!r}"
            for f in dataclasses.fields(left)
            if f.compare and getattr(left, f.name) != getattr(right, f.name)
        ]
    return [f"{where}: commands={left!r} pyslurm={right!r}"]


def _by_id(jobs: list[Any]) -> list[Any]:
    """Job lists compared as sets of records (by job id). The pyslurm backend follows
    squeue's sort (partition, state, priority) but two jobs equal in all three came out
    in different orders live (squeue: newest first, slurmctld's list: oldest first) in
    some runs: a known gap, reported; no caller depends on that order."""
    return sorted(jobs, key=lambda j: int(j.job_id))


def _snapshot(api: QueryBackend, job_ids: list[str]) -> dict[str, Any]:
    """Every query of the protocol: the whole cluster and the scenario's jobs."""
    shot: dict[str, Any] = {
        "nodes": api.nodes(),
        "nodes exact": api.nodes(HostSet("node-[1-4]"), exact_reasons=True),
        "partitions": api.partitions(),
        "partition nodelist": api.partition_nodelist("cpu"),
        "drain reasons": api.drain_reasons(),
        "jobs": _by_id(api.jobs()),
        "jobs all": _by_id(api.jobs(states="all")),
        "jobs of the scenario": _by_id(api.jobs(job_ids=job_ids)) if job_ids else [],
    }
    for job in shot["jobs of the scenario"]:
        shot[f"job {job.display_id}"] = (
            api.job(job.display_id) if "[" not in job.display_id else None
        )
        shot[f"job {job.job_id}"] = api.job(job.job_id)
        if job.nodelist:
            shot[f"nodelist {job.job_id}"] = api.job_nodelist(job.job_id)
            shot[f"jobs on {job.nodelist}"] = _by_id(api.jobs(nodelist=HostSet(job.nodelist)))
    return shot


def assert_parity(job_ids: Sequence[str] = (), timeout: float = 30.0) -> dict[str, Any]:
    """Both backends' snapshots equal, polled (run times tick between the two reads);
    after ``timeout`` the test fails naming every field that still differs."""
    deadline = time.monotonic() + timeout
    while True:
        commands = _with("commands", lambda api: _snapshot(api, list(job_ids)))
        pyslurm = _with("pyslurm", lambda api: _snapshot(api, list(job_ids)))
        problems = [d for k in commands for d in _differences(commands[k], pyslurm.get(k), k)]
        problems += [f"{k}: only pyslurm answered" for k in pyslurm if k not in commands]
        if not problems:
            return commands
        if time.monotonic() > deadline:
            pytest.fail("the backends differ:\n" + "\n".join(problems[:40]))
        time.sleep(0.5)


@pytest.fixture
def jobs_cancelled(cluster) -> Iterator[list[str]]:
    """Job ids a scenario submits; all cancelled (and waited for) at the end."""
    ids: list[str] = []
    yield ids
    if ids:
        run_slurm(["scancel", *ids])
        poll(lambda: not query.jobs(job_ids=ids), 60, "the scenario's jobs to leave the queue")


@pytest.fixture
def drained(cluster) -> Iterator[Callable[[str, str], None]]:
    """Drain a node with a reason; every node drained here is resumed at the end."""
    done: list[str] = []

    def drain(node: str, reason: str) -> None:
        run_slurm(["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}"])
        done.append(node)

    yield drain
    for node in done:
        run_slurm(["scontrol", "update", f"nodename={node}", "state=resume"])
    poll(lambda: all(n.is_idle for n in query.nodes(done)) if done else True, 60, "nodes to resume")


@live_pyslurm
def test_the_backend_in_use_is_pyslurm_and_says_so(cluster) -> None:
    backend.choose("pyslurm")
    assert backend.selected().name == "pyslurm"
    out = subprocess.run(
        [sys.executable, "-m", "slurmkit", "--backend", "pyslurm", "--version"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    assert "query backend: pyslurm (pyslurm 25.11" in out and "for Slurm 25.11" in out


@live_pyslurm
def test_idle_cluster(cluster) -> None:
    shot = assert_parity()
    assert [n.name for n in shot["nodes"]] == ["node-1", "node-2", "node-3", "node-4"]
    assert {p.name for p in shot["partitions"]} >= {"gpu", "cpu"}


@live_pyslurm
def test_drained_with_reasons(cluster, drained) -> None:
    drained("node-3", "gpu xid 79")
    drained("node-4", "disk full: /scratch at 100%")
    drained("node-2", "gpu xid 79")
    shot = assert_parity()
    reasons = {r.reason: r.nodelist for r in shot["drain reasons"]}
    assert reasons == {"gpu xid 79": "node-[2-3]", "disk full: /scratch at 100%": "node-4"}


@live_pyslurm
def test_a_reason_scontrol_prints_in_pieces_is_read_whole_by_both(cluster, drained) -> None:
    """`` Comment=`` in a reason: the exact (multi-line) text form and the C API agree."""
    drained("node-4", "bad disk Comment=see ticket 12")
    exact = _with("commands", lambda api: api.nodes(["node-4"], exact_reasons=True))
    via_api = _with("pyslurm", lambda api: api.nodes(["node-4"], exact_reasons=True))
    assert exact == via_api and via_api[0].reason == "bad disk Comment=see ticket 12"
    # the one-line text form (exact_reasons=False) cuts such a reason at " Comment=" (its
    # documented limit); the C API has no such form and always gives it whole
    assert _with("pyslurm", lambda api: api.nodes(["node-4"]))[0].reason == via_api[0].reason


@live_pyslurm
def test_running_pending_held_and_multi_node_jobs(cluster, jobs_cancelled) -> None:
    running = submit("-N1", "--gres=gpu:2", "-c2", "-t", "10", "--wrap", "sleep 300")
    multi = submit("-N2", "-t", "10", "--wrap", "srun sleep 300")
    jobs_cancelled += [running, multi]
    poll(
        lambda: (
            all(j.is_running for j in query.jobs(job_ids=[running, multi]))
            and len(query.jobs(job_ids=[running, multi])) == 2
        ),
        60,
        "both jobs to run",
    )
    pending = submit(
        "-N4", "--exclusive", "-t", "5", f"--dependency=afterok:{running}", "--wrap", "true"
    )
    held = submit("--hold", "--wrap", "sleep 1")
    jobs_cancelled += [pending, held]
    shot = assert_parity([running, multi, pending, held])
    by_id = {j.job_id: j for j in shot["jobs of the scenario"]}
    assert by_id[held].held and by_id[pending].dependency
    assert shot[f"job {multi}"].num_nodes == 2 and shot[f"job {running}"].gres_detail


@live_pyslurm
def test_array_tasks_running_and_pending(cluster, jobs_cancelled) -> None:
    array = submit("--array=1-6%2", "-t", "5", "--wrap", "sleep 300")
    jobs_cancelled.append(array)
    poll(lambda: sum(j.is_running for j in query.jobs(job_ids=array)) == 2, 60, "two tasks to run")
    shot = assert_parity([array])
    shown = {j.display_id for j in shot["jobs of the scenario"]}
    assert {f"{array}_1", f"{array}_2", f"{array}_[3-6%2]"} <= shown


@live_pyslurm
def test_unknown_job_node_and_partition_are_the_same_not_found(cluster) -> None:
    reads: list[Callable[[QueryBackend], Any]] = [
        lambda api: api.job("999999"),
        lambda api: api.nodes(["node-99"]),
        lambda api: api.partition_nodelist("nope"),
    ]
    for read in reads:
        kinds = [type(_error(name, read)).__name__ for name in ("commands", "pyslurm")]
        assert kinds == ["NotFound", "NotFound"]
    assert _with("pyslurm", lambda api: api.jobs(job_ids="999999")) == []


def _error(name: str, read: Callable[[QueryBackend], Any]) -> Exception:
    try:
        _with(name, read)
    except Exception as exc:  # the class is what is compared
        return exc
    raise AssertionError(f"{name}: no error")


@live_pyslurm
def test_controller_down_is_the_same_error_and_exit_code(cluster, tmp_path) -> None:
    """slurmctld unreachable (the sandbox's config with a port nothing listens on):
    both backends say ControllerUnreachable in one line, exit 2, no traceback."""
    conf = tmp_path / "slurm.conf"
    text = Path(os.environ["SLURM_CONF"]).read_text()
    conf.write_text(text.replace(f"SlurmctldPort={cluster.ctld_port}", "SlurmctldPort=1"))
    results = []
    for name in ("commands", "pyslurm"):
        env = {**os.environ, "SLURM_CONF": str(conf), "SLURMKIT_BACKEND": name}
        results.append(
            subprocess.run(
                [sys.executable, "-m", "slurmkit", "nodes", "drained"],
                capture_output=True,
                text=True,
                env=env,
                cwd=REPO,
                timeout=120,
            )
        )
    for result in results:
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert "cannot reach slurmctld" in result.stderr.splitlines()[-1]


@pytest.mark.skipif(
    _ON_25_11 or not _PYSLURM,
    reason="pyslurm installed and a cluster of another version than 25.11 (the default sandbox)",
)
def test_pyslurm_for_another_version_falls_back_to_the_commands(cluster) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "slurmkit", "-v", "nodes", "drained", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={**os.environ, "SLURMKIT_BACKEND": "auto"},
    )
    assert result.returncode == 0, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if "query backend" in ln]
    assert len(lines) == 1 and "version mismatch" in lines[0] and "commands" in lines[0]
    assert "+ sinfo --all --list-reasons" in result.stderr  # answered by the commands
