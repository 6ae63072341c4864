"""``slurmkit pyspy`` at the argv seam: a fake scontrol, srun and pdsh answer like the sandbox.

Job records are the recorded 22.05 ones (job 3 running on node-[1-2] with
GPUs, job 10 pending, job 1 completed), owned by whoever runs the tests.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import fixtures_path
import pytest
from test_pyspy_samples import DUMP

from slurmkit.errors import PermissionDenied
from slurmkit.pyspy.target import check_owner
from slurmkit.slurm.records import Job
from tests.fakes import Call, FakeSlurm

TOKEN = re.compile(r"__slurmkit_end_[0-9a-f]{16}__")
ME = f"{pwd.getpwuid(os.geteuid()).pw_name}({os.geteuid()})"


def _job(name: str) -> str:
    return fixtures_path.read("22.05", "03_jobs", name).replace("UserId=root(0)", f"UserId={ME}")


JOBS = {
    "3": _job("scontrol_show_job_d_running_gpu_2node.txt"),
    "10": _job("scontrol_show_job_d_pending_resources.txt"),
    "1": _job("scontrol_show_job_d_completed.txt"),
}


def process(pid: int, function: str = "allreduce", status: str = "ok") -> str:
    text = DUMP.replace("14340", str(pid)).replace("allreduce", function)
    error = (
        "Permission Denied: Try running again with elevated permissions" if status != "ok" else ""
    )
    record = {"type": "process", "pid": pid, "ppid": 1, "role": "rank", "status": status}
    record.update(command="python3 prog.py", dump=text if status == "ok" else "", error=error)
    return json.dumps(record)


def node(python: int, problem: str | None = None, **extra: object) -> str:
    return json.dumps({"type": "node", "python": python, "problem": problem, **extra})


class JobNodes:
    """A job's nodes and their Python processes, played for the shared fake Slurm (its one
    route): scontrol show job from the recordings; srun and pdsh print each node's JSON lines."""

    def __init__(self, slurm: FakeSlurm) -> None:
        self.slurm = slurm
        self.lines = {
            "node-1": [process(101), process(102), node(2)],
            "node-2": [
                process(201, "wait_for_peer"),
                process(202, status="ptrace_denied"),
                node(2),
            ],
        }
        slurm.on(["**"], answer=self._answer)

    @property
    def calls(self) -> list[list[str]]:
        return [list(argv) for argv in self.slurm.calls]

    @property
    def ssh_args(self) -> list[str]:
        """PDSH_SSH_ARGS_APPEND of each pdsh call."""
        return [
            (c.env or {}).get("PDSH_SSH_ARGS_APPEND", "")
            for c in self.slurm.log
            if c.program == "pdsh"
        ]

    def _answer(self, call: Call) -> tuple[int, str, str]:
        argv = list(call.argv)
        if argv[:4] == ["scontrol", "--details", "show", "job"]:
            if argv[4] not in JOBS:
                return 1, "", "slurm_load_jobs error: Invalid job id specified\n"
            return 0, JOBS[argv[4]], ""
        if argv[0] in ("srun", "pdsh"):
            token = TOKEN.findall(argv[-1])[-1]
            out = ""
            for task, name in enumerate(self.lines):
                prefix = f"{task}: " if argv[0] == "srun" else f"{name}: "
                out += "".join(f"{prefix}{line}\n" for line in self.lines[name])
                out += f"{prefix}{token} rc=0 t0=1 t1=2 node={name}\n"
            return 0, out, ""
        raise AssertionError(f"unexpected command: {shlex.join(argv)}")

    def step(self, program: str) -> list[str]:
        (argv,) = [c for c in self.calls if c[0] == program]
        return argv


@pytest.fixture
def cluster(
    fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[JobNodes]:
    fake = JobNodes(fake_slurm)
    monkeypatch.chdir(tmp_path)
    yield fake


def test_the_odd_rank_is_an_outlier_and_problems_are_one_line(
    cluster: JobNodes, run_cli, tmp_path: Path
) -> None:
    result = run_cli("pyspy", "--jobid", "3", "--output-dir", "out", exit_code=1)
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "job 3: 3 Python processes dumped on node-[1-2] via srun, 2 distinct stacks; traces in out/"
    )
    assert "2 processes on node-1: node-1:101 node-1:102" in lines
    outlier = lines.index("OUTLIER: 1 process on node-2: node-2:201")
    assert lines[outlier + 1] == "    wait_for_peer (prog.py:13)"
    assert "    (+2 other threads: heartbeat, spinner; see the trace files)" in lines
    assert lines[-1].startswith("node-2: ptrace denied for pid 202: run as root")
    trace = (tmp_path / "out" / "trace-node-2.txt").read_text()
    assert "## pid 201 (rank, ppid 1): python3 prog.py" in trace and "wait_for_peer" in trace
    assert "# ptrace_denied: Permission Denied" in trace
    assert "allreduce (prog.py:13)" in (tmp_path / "out" / "trace-node-1.txt").read_text()


def test_one_srun_step_on_all_the_jobs_nodes(cluster: JobNodes, run_cli) -> None:
    run_cli("pyspy", "--jobid", "3", "--native", "--all-processes", exit_code=1)
    argv = cluster.step("srun")
    assert argv[:8] == [
        "srun",
        "--jobid=3",
        "--overlap",
        "--gres=gpu:0",  # job 3 holds GPUs
        "--nodes=2",
        "--ntasks-per-node=1",
        "--nodelist=node-[1-2]",
        "--label",
    ]
    script = argv[-1]
    for word in ("--source listpids", "--native", "--all-processes", "/usr/bin/python3"):
        assert word in script
    assert not any(c[0] == "pdsh" for c in cluster.calls)


def test_everything_dumped_is_exit_0_and_json_has_every_stack(cluster: JobNodes, run_cli) -> None:
    cluster.lines["node-2"] = [process(201, "wait_for_peer"), node(1)]
    result = run_cli("pyspy", "--jobid", "3", "--json", "--output-dir", "out", exit_code=0)
    data = json.loads(result.stdout)
    assert (data["transport"], data["nodes"], data["exit_code"]) == ("srun", "node-[1-2]", 0)
    assert [(g["count"], g["nodes"], g["outlier"]) for g in data["groups"]] == [
        (2, "node-1", False),
        (1, "node-2", True),
    ]
    assert data["groups"][1]["frames"][0] == {
        "function": "wait_for_peer",
        "file": "prog.py",
        "line": 13,
    }
    proc = data["processes"][0]
    assert (proc["node"], proc["pid"], proc["status"]) == ("node-1", 101, "ok")
    assert [t["name"] for t in proc["threads"]] == ["MainThread", "heartbeat", "spinner"]
    assert data["problems"] == []


def test_via_ssh_finds_processes_by_job_id_and_owner(cluster: JobNodes, run_cli) -> None:
    cluster.lines["node-2"] = [process(201), node(1)]
    result = run_cli("pyspy", "--jobid", "3", "--via", "ssh", "--json", "-o", exit_code=None)
    assert result.exit_code == 2  # -o is not an option: click's usage error
    result = run_cli("pyspy", "--jobid", "3", "--via", "ssh", "--json", exit_code=0)
    assert json.loads(result.stdout)["transport"] == "pdsh"
    command = cluster.step("pdsh")[-1]
    assert "--source environ" in command and re.search(rf"--uid {os.geteuid()}\b", command)
    assert not any(c[0] == "srun" for c in cluster.calls)


def test_missing_py_spy_is_one_hint_per_node(cluster: JobNodes, run_cli) -> None:
    for name in cluster.lines:
        cluster.lines[name] = [node(2, "py_spy_missing", looked_for=[f"{os.getcwd()}/bin/py-spy"])]
    result = run_cli("pyspy", "--jobid", "3", "--py-spy", "bin/py-spy", exit_code=1)
    assert f"--py-spy {os.getcwd()}/bin/py-spy" in cluster.step("srun")[-1]  # made absolute
    hint = f"(pip install py-spy; looked for {os.getcwd()}/bin/py-spy)"
    assert result.stdout.splitlines()[-2:] == [
        f"py-spy not installed on node-{n} {hint}" for n in (1, 2)
    ]


def test_a_job_without_python_says_so(cluster: JobNodes, run_cli, tmp_path: Path) -> None:
    cluster.lines = {"node-1": [node(0)], "node-2": [node(0)]}
    result = run_cli("pyspy", "--jobid", "3", exit_code=1)
    assert result.stdout.splitlines()[-1] == "job 3 has no Python processes"
    (directory,) = tmp_path.iterdir()  # the default directory, one file per node
    assert re.fullmatch(r"pyspy-3-\d{8}-\d{6}", directory.name)
    assert sorted(p.name for p in directory.iterdir()) == ["trace-node-1.txt", "trace-node-2.txt"]
    result = run_cli("pyspy", "--jobid", "3", "--json", exit_code=1)
    assert "job 3 has no Python processes" in result.stderr


@pytest.mark.parametrize(
    ("jobid", "message"),
    [
        ("99", "job 99 not found (slurm_load_jobs error: Invalid job id specified)"),
        ("10", "job 10 is PENDING, reason Resources: it has no processes yet"),
        ("1", "job 1 is COMPLETED: only a RUNNING job has processes to dump"),
        ("3;reboot", "--jobid must be a job id like 1234 or 1234_5"),
    ],
)
def test_bad_jobs_are_exit_2_before_any_node_is_asked(
    cluster: JobNodes, run_cli, tmp_path: Path, jobid: str, message: str
) -> None:
    result = run_cli("pyspy", "--jobid", jobid, exit_code=2)
    assert message in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not any(c[0] in ("srun", "pdsh") for c in cluster.calls)
    assert list(tmp_path.iterdir()) == []  # no trace directory for a job we never looked at


def test_ssh_transport_options_reach_pdsh_and_ssh(cluster: JobNodes, run_cli) -> None:
    args = ("pyspy", "--jobid", "3", "--via", "ssh", "--output-dir", "out")
    result = run_cli(*args, exit_code=1)
    assert "--insecure" not in result.stderr
    (argv,) = [c for c in cluster.calls if c[0] == "pdsh"]
    assert argv[4:8] == ["-f", "32", "-t", "10"]  # run's defaults
    assert cluster.ssh_args == ["-o BatchMode=yes -o ConnectTimeout=10"]  # host keys checked
    cluster.slurm.log.clear()
    ssh = "--ssh-config cluster.conf --insecure --fanout 3 --connect-timeout 4"
    result = run_cli(*args, *ssh.split(), exit_code=1)
    (argv,) = [c for c in cluster.calls if c[0] == "pdsh"]
    assert argv[4:8] == ["-f", "3", "-t", "4"]
    assert cluster.ssh_args[-1] == (
        "-o BatchMode=yes -o ConnectTimeout=4 -F cluster.conf "
        "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
    )
    assert "slurmkit: --insecure: ssh host keys are not checked (pdsh)" in result.stderr


def test_the_cli_hands_the_options_to_the_library(
    cluster: JobNodes, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the remote layer is given, whichever transport (pdsh or paramiko) then runs."""
    from slurmkit import remote

    seen: list[tuple[str, remote.RemoteOptions]] = []

    def fake_run(nodes, command, *, via, options) -> remote.RunOutcome:
        seen.append((via, options))
        return remote.RunOutcome("ssh", [remote.NodeResult(n, "ok") for n in nodes])

    monkeypatch.setattr(remote, "run", fake_run)
    ssh = "--via ssh --timeout 7 --ssh-config c.conf --insecure --fanout 2 --connect-timeout 3"
    run_cli("pyspy", "--jobid", "3", *ssh.split(), exit_code=1)
    ((via, options),) = seen
    assert via == "pdsh"  # pdsh, or paramiko when pdsh is missing
    assert (options.timeout, options.connect_timeout, options.fanout) == (7, 3, 2)
    assert (options.insecure, options.ssh_config, options.jobid) == (True, Path("c.conf"), None)


def test_ssh_options_with_via_srun_are_ignored_as_run_ignores_them(
    cluster: JobNodes, run_cli
) -> None:
    """`run --via srun --insecure` is accepted and the step does not change; pyspy does the same."""
    run_cli("pyspy", "--jobid", "3", exit_code=1)
    plain = cluster.step("srun")
    cluster.slurm.log.clear()
    run_cli("pyspy", "--jobid", "3", "--insecure", "--ssh-config", "c.conf", exit_code=1)
    assert cluster.step("srun")[:-1] == plain[:-1]  # the last word holds a fresh end token
    assert cluster.ssh_args == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeout", "0"], "is not a positive, finite number of seconds"),
        (["--via", "carrier-pigeon"], "Invalid value for '--via'"),
        (["--output-dir", "a-file"], "'a-file' is a file"),
        (["--via", "ssh", "--fanout", "0"], "--fanout must be at least 1, got 0"),
        (["--via", "ssh", "--connect-timeout", "-1"], "--connect-timeout must be positive"),
        (["--via", "ssh", "--fanout", "many"], "'many' is not a valid integer"),
        (["--via", "ssh", "--ssh-config", "."], "'.' is a directory"),
    ],
)
def test_bad_options_are_exit_2(
    cluster: JobNodes, run_cli, tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "a-file").write_text("")
    result = run_cli("pyspy", "--jobid", "3", *args, exit_code=2)
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not any(c[0] in ("scontrol", "srun", "pdsh") for c in cluster.calls)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # no trace directory


def test_only_the_owner_or_root_may_dump_a_job() -> None:
    job = Job(job_id="5", user="alice", raw={"UserId": "alice(1000)"})
    check_owner(job, 0)
    check_owner(job, 1000)
    with pytest.raises(PermissionDenied, match="job 5 belongs to alice") as caught:
        check_owner(job, 1001)
    assert caught.value.exit_code == 2
