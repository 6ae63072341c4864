"""``slurmkit pyspy`` on the sandbox: a 3-node job with one rank stuck elsewhere.

The job's ranks (``srun -N3 --ntasks-per-node=1 python3 prog.py``) each
write ``ready-<rank>`` holding their Slurm node name, then sleep forever:
rank 1 in ``wait_for_peer()``, the others in ``allreduce()``; rank 0 also
forks a helper (a child Python process). The job asks for one GPU per node,
so the monitor step must ask for none; the no-Python job asks for none, so
the step must not mention GPUs at all. py-spy is the venv's, given with
``--py-spy`` (the nodes share this filesystem, and /work/main is root's): the
default looks only on the node's PATH and in the standard bin dirs, never next
to slurmkit's Python (issue 14). A ``--python`` or ``--py-spy`` that another
user could change is refused on every node before it runs.

``--via ssh`` is also run with ``run``'s ssh options (``--ssh-config``,
``--fanout``) and against a node whose sshd is frozen (SIGSTOP: connections
are accepted by the kernel but never answered, like a wedged node), always
thawed again before the test ends.
"""

from __future__ import annotations

import json
import shlex
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.hostlist import expand, fold
from slurmkit.slurm import backend, query
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import frozen_sshd, poll, submit

PROGRAM = """\
import os
import sys
import time


def helper_loop():
    while True:
        time.sleep(0.5)


def wait_for_peer():
    while True:
        time.sleep(0.5)


def allreduce():
    while True:
        time.sleep(0.5)


def main():
    rank = int(os.environ["SLURM_PROCID"])
    if rank == 0 and os.fork() == 0:
        helper_loop()
    with open(os.path.join(sys.argv[1], "ready-%d" % rank), "w") as ready:
        ready.write(os.environ["SLURMD_NODENAME"])
    if rank == 1:
        wait_for_peer()
    else:
        allreduce()


main()
"""


@dataclass(frozen=True)
class StuckJob:
    job_id: str
    nodes: list[str]
    odd_node: str  # where rank 1 waits
    first_node: str  # where rank 0 and its helper run


def _running(job_id: str) -> bool:
    found = query.jobs(job_ids=[job_id])
    return bool(found) and found[0].state == "RUNNING"


def _submit(*args: str) -> str:
    return submit("-J", f"sk-pyspy-{uuid.uuid4().hex[:8]}", "-o", "/dev/null", *args)


@pytest.fixture(scope="module")
def stuck_job(
    cluster: sandbox.SandboxSpec, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StuckJob]:
    work = tmp_path_factory.mktemp("pyspy-job")
    (work / "prog.py").write_text(PROGRAM)
    ranks = f"srun -N3 --ntasks-per-node=1 python3 {shlex.quote(str(work / 'prog.py'))} {work}"
    job_id = _submit("-N3", "--ntasks-per-node=1", "-c1", "--gres=gpu:1", "--wrap", ranks)
    try:
        ready = [work / f"ready-{rank}" for rank in range(3)]
        poll(lambda: all(p.exists() and p.read_text() for p in ready), 180, "3 ranks ready")
        nodes = expand(query.job(job_id).nodelist)
        yield StuckJob(job_id, nodes, ready[1].read_text(), ready[0].read_text())
    finally:
        run_slurm(["scancel", job_id])


@pytest.fixture(scope="module")
def sleep_job(cluster: sandbox.SandboxSpec) -> Iterator[str]:
    """A running job with no Python in it (and no GPUs)."""
    job_id = _submit("-N1", "-c1", "--wrap", "srun sleep 600")
    try:
        poll(lambda: _running(job_id), 180, "the sleep job to run")
        yield job_id
    finally:
        run_slurm(["scancel", job_id])


PY_SPY = ("--py-spy", str(Path(sys.executable).with_name("py-spy")))


def _pyspy(run_cli, job: str, out: Path, *extra: str, exit_code: int = 0) -> dict:
    py_spy = () if "--py-spy" in extra else PY_SPY
    result = run_cli(
        "pyspy", "--jobid", job, "--json", "--output-dir", str(out), *py_spy, *extra,
        exit_code=exit_code,
    )  # fmt: skip
    return json.loads(result.stdout)


def _assert_odd_rank_found(data: dict, job: StuckJob) -> None:
    others = fold([n for n in job.nodes if n != job.odd_node])
    assert [(g["role"], g["count"], g["nodes"], g["outlier"]) for g in data["groups"]] == [
        ("rank", 2, others, False),
        ("rank", 1, job.odd_node, True),
    ]
    assert data["groups"][0]["frames"][0]["function"] == "allreduce"
    assert data["groups"][1]["frames"][0]["function"] == "wait_for_peer"
    assert sorted(p["node"] for p in data["processes"]) == sorted(job.nodes)
    assert all(p["status"] == "ok" and p["role"] == "rank" for p in data["processes"])
    assert data["problems"] == []


@pytest.mark.parametrize("via", ["srun", "ssh"])
@pytest.mark.smoke
def test_every_rank_is_dumped_and_the_odd_one_marked(
    stuck_job: StuckJob, run_cli, tmp_path: Path, via: str
) -> None:
    data = _pyspy(run_cli, stuck_job.job_id, tmp_path, "--via", via)
    expected = {"srun"} if via == "srun" else {"pdsh", "ssh"}  # pdsh, else paramiko
    assert data["transport"] in expected
    _assert_odd_rank_found(data, stuck_job)
    traces = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert set(traces) == {f"trace-{n}.txt" for n in stuck_job.nodes}
    assert "wait_for_peer (prog.py:" in traces[f"trace-{stuck_job.odd_node}.txt"]
    for name in stuck_job.nodes:
        assert traces[f"trace-{name}.txt"].count("Thread ") == 1  # one rank, helper left out


def test_the_human_report_names_the_outlier_node(
    stuck_job: StuckJob, run_cli, tmp_path: Path
) -> None:
    result = run_cli("pyspy", "--jobid", stuck_job.job_id, "--output-dir", str(tmp_path), *PY_SPY)
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"job {stuck_job.job_id}: 3 Python processes dumped on ")
    (outlier,) = [line for line in lines if line.startswith("OUTLIER: ")]
    assert outlier.startswith(f"OUTLIER: 1 process on {stuck_job.odd_node}: ")
    assert lines[lines.index(outlier) + 1].startswith("    wait_for_peer (prog.py:")


def test_all_processes_adds_the_forked_helper(stuck_job: StuckJob, run_cli, tmp_path: Path) -> None:
    data = _pyspy(run_cli, stuck_job.job_id, tmp_path, "--all-processes", "--native")
    (child,) = [p for p in data["processes"] if p["role"] == "child"]
    assert child["node"] == stuck_job.first_node
    assert any(f["function"] == "helper_loop" for f in child["threads"][0]["frames"])
    assert [g["outlier"] for g in data["groups"] if g["role"] == "child"] == [False]
    assert [g["count"] for g in data["groups"] if g["outlier"]] == [1]  # still rank 1 alone


def test_py_spy_missing_on_the_nodes_is_a_hint_per_node(
    stuck_job: StuckJob, run_cli, tmp_path: Path
) -> None:
    result = run_cli(
        "pyspy",
        "--jobid",
        stuck_job.job_id,
        "--py-spy",
        "/nonexistent/py-spy",
        "--output-dir",
        str(tmp_path),
        exit_code=1,
    )
    for name in stuck_job.nodes:
        line = (
            f"py-spy not installed on {name} (pip install py-spy; looked for /nonexistent/py-spy)"
        )
        assert line in result.stdout.splitlines()


def test_a_hung_py_spy_is_stopped_at_the_timeout(
    stuck_job: StuckJob, run_cli, tmp_path: Path
) -> None:
    hung = tmp_path / "bin" / "py-spy"
    hung.parent.mkdir()
    hung.write_text("#!/bin/sh\nexec sleep 120\n")
    hung.chmod(0o755)
    data = _pyspy(
        run_cli,
        stuck_job.job_id,
        tmp_path / "out",
        "--py-spy",
        str(hung),
        "--timeout",
        "6",
        exit_code=1,
    )
    assert sorted(p["node"] for p in data["problems"]) == sorted(stuck_job.nodes)
    assert {p["kind"] for p in data["problems"]} == {"dump_timeout"}
    assert data["groups"] == []


@pytest.mark.parametrize("via", ["srun", "ssh"])
def test_py_spy_without_cap_sys_ptrace_is_ptrace_denied_with_the_hint(
    stuck_job: StuckJob, run_cli, tmp_path: Path, via: str
) -> None:
    """The real py-spy with CAP_SYS_PTRACE dropped, as in a container without SYS_PTRACE:
    the kernel refuses it, and py-spy says "Check that the process is running"."""
    wrapper = tmp_path / "bin" / "py-spy"
    wrapper.parent.mkdir()
    real = Path(sys.executable).with_name("py-spy")
    wrapper.write_text(
        f'#!/bin/sh\nexec setpriv --bounding-set=-sys_ptrace {shlex.quote(str(real))} "$@"\n'
    )
    wrapper.chmod(0o755)
    data = _pyspy(
        run_cli,
        stuck_job.job_id,
        tmp_path / "out",
        "--via",
        via,
        "--py-spy",
        str(wrapper),
        exit_code=1,
    )
    assert data["groups"] == []
    assert sorted(p["node"] for p in data["problems"]) == sorted(stuck_job.nodes)
    assert {p["kind"] for p in data["problems"]} == {"ptrace_denied"}
    assert all("ptrace denied for" in p["message"] for p in data["problems"])
    assert all("SYS_PTRACE" in p["message"] for p in data["problems"])


def test_a_job_without_python_is_exit_1(sleep_job: str, run_cli, tmp_path: Path) -> None:
    result = run_cli("pyspy", "--jobid", sleep_job, "--output-dir", str(tmp_path), exit_code=1)
    assert result.stdout.splitlines()[-1] == f"job {sleep_job} has no Python processes"
    result = run_cli(
        "pyspy", "--jobid", sleep_job, "--via", "ssh", "--output-dir", str(tmp_path), exit_code=1
    )
    assert result.stdout.splitlines()[-1] == f"job {sleep_job} has no Python processes"


def test_a_job_that_does_not_exist_is_exit_2(cluster, run_cli, tmp_path: Path) -> None:
    result = run_cli(
        "pyspy", "--jobid", "987654321", "--output-dir", str(tmp_path / "x"), exit_code=2
    )
    assert result.stderr.startswith("slurmkit: job 987654321 not found (")
    assert len(result.stderr.splitlines()) == 1
    # Slurm's own words: scontrol's, or the pyslurm backend's (it loads all jobs, finds none)
    said = "unknown job 987654321" if backend.selected().name == "pyslurm" else "Invalid job id"
    assert said in result.stderr
    assert not (tmp_path / "x").exists()


def test_a_pending_job_is_exit_2(cluster, run_cli) -> None:
    job_id = _submit("-N1", "--hold", "--wrap", "true")
    try:
        result = run_cli("pyspy", "--jobid", job_id, exit_code=2)
        assert f"job {job_id} is PENDING" in result.stderr
    finally:
        run_slurm(["scancel", job_id])


def test_via_ssh_takes_the_ssh_config_and_fanout_of_run(
    stuck_job: StuckJob, cluster: sandbox.SandboxSpec, run_cli, tmp_path: Path
) -> None:
    """--ssh-config replaces ~/.ssh/config (like ssh -F): the sandbox's works, an empty one not."""
    ssh = ("--via", "ssh", "--fanout", "1", "--ssh-config")
    data = _pyspy(run_cli, stuck_job.job_id, tmp_path / "a", *ssh, str(cluster.ssh_config))
    assert data["transport"] in {"pdsh", "ssh"}
    _assert_odd_rank_found(data, stuck_job)
    empty = tmp_path / "empty_ssh_config"
    empty.write_text("")
    data = _pyspy(run_cli, stuck_job.job_id, tmp_path / "b", *ssh, str(empty), exit_code=1)
    assert data["processes"] == []
    assert [(p["node"], p["kind"]) for p in data["problems"]] == [
        (n, "unreachable") for n in stuck_job.nodes
    ]  # node-N means nothing without the sandbox's config


def test_a_node_whose_sshd_hangs_times_out_and_the_others_answer(
    stuck_job: StuckJob, cluster: sandbox.SandboxSpec, run_cli, tmp_path: Path
) -> None:
    frozen = stuck_job.odd_node
    others = [n for n in stuck_job.nodes if n != frozen]
    args = ("--via", "ssh", "--timeout", "4", "--output-dir", str(tmp_path), *PY_SPY)
    with frozen_sshd(cluster, frozen):
        result = run_cli("pyspy", "--jobid", stuck_job.job_id, *args, exit_code=1)
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"job {stuck_job.job_id}: 2 Python processes dumped on ")
    assert " via pdsh, " in lines[0]  # the sandbox has pdsh; paramiko would say "unreachable"
    assert f"2 processes on {fold(others)}: " in " ".join(lines)
    assert lines[-2:] == [
        "problems (1):",
        f"{frozen}: no answer within 4 s: nothing came back over ssh; `ssh {frozen} true` "
        "tells a hung node or sshd from a slow one (give that a longer --timeout)",
    ]
    assert "allreduce (prog.py:" in (tmp_path / f"trace-{others[0]}.txt").read_text()


@pytest.mark.parametrize("via", ["srun", "ssh"])
def test_an_interpreter_or_py_spy_others_can_change_is_refused_on_every_node(
    stuck_job: StuckJob, run_cli, tmp_path: Path, via: str
) -> None:
    """Issue 14 #5: root never runs a Python or py-spy that a user could have put there."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # like a venv under /tmp that anyone can write
    marker = tmp_path / "ran"
    for name in ("python3", "py-spy"):
        (shared / name).write_text(f"#!/bin/sh\ntouch {marker}\n")
        (shared / name).chmod(0o755)
    data = _pyspy(run_cli, stuck_job.job_id, tmp_path / "a", "--via", via,
                  "--python", str(shared / "python3"), exit_code=1)  # fmt: skip
    assert [(p["node"], p["kind"]) for p in data["problems"]] == [
        (n, "untrusted_python") for n in stuck_job.nodes
    ]
    assert all("writable by group or others" in p["message"] for p in data["problems"])
    data = _pyspy(run_cli, stuck_job.job_id, tmp_path / "b", "--via", via,
                  "--py-spy", str(shared / "py-spy"), exit_code=1)  # fmt: skip
    assert [(p["node"], p["kind"]) for p in data["problems"]] == [
        (n, "py_spy_untrusted") for n in stuck_job.nodes
    ]
    assert data["processes"] == []
    assert not marker.exists()
