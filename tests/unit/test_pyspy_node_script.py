"""The node side of ``slurmkit pyspy`` on synthetic /proc trees, a fake and the real py-spy.

The script is imported here to test its parts; slurmkit itself only ever sends
its text to the nodes.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import fixtures_path
import pytest
from test_pyspy_samples import DUMP, STDERR_GONE, STDERR_NOT_PYTHON, STDERR_PTRACE_DENIED

from slurmkit.pyspy import node_script as ns
from slurmkit.pyspy.nodecmd import node_script_source

PY_SPY = Path(sys.executable).parent / "py-spy"
PYTHON = "/usr/bin/python3.11"


def make_proc(
    root: Path,
    pid: int,
    ppid: int,
    argv: list[str],
    env: dict[str, str] | None = None,
    exe: str | None = None,
    comm: str | None = None,
) -> None:
    """A /proc/PID directory with what the script reads: stat, cmdline, environ, exe."""
    d = root / str(pid)
    d.mkdir()
    name = comm or os.path.basename(argv[0])[:15]
    (d / "stat").write_text(f"{pid} ({name}) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0\n")
    (d / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))
    (d / "environ").write_bytes(
        b"".join(f"{k}={v}".encode() + b"\0" for k, v in (env or {}).items())
    )
    if exe is not None:
        os.symlink(exe, d / "exe")


def procs(root: Path, pids: list[int]) -> list[ns.Proc]:
    found = [ns.read_proc(pid, str(root)) for pid in pids]
    assert all(found)
    return [p for p in found if p is not None]


# ----------------------------------------------------------------- /proc and the job's pids


def test_read_proc_handles_parentheses_in_comm_and_deleted_exe(tmp_path: Path) -> None:
    make_proc(tmp_path, 42, 7, ["python3", "a b.py"], {"RANK": "3"}, PYTHON + " (deleted)", "x) (y")
    proc = ns.read_proc(42, str(tmp_path))
    assert proc is not None
    assert (proc.pid, proc.ppid, proc.exe, proc.argv) == (42, 7, PYTHON, ["python3", "a b.py"])
    assert proc.env == {"RANK": "3"}
    assert proc.uid == os.getuid()
    assert ns.read_proc(43, str(tmp_path)) is None  # gone


def test_environ_finds_exactly_the_jobs_processes_of_the_user(tmp_path: Path) -> None:
    make_proc(tmp_path, 10, 1, ["python3", "train.py"], {"SLURM_JOB_ID": "12"}, PYTHON)
    make_proc(tmp_path, 11, 1, ["python3", "train.py"], {"SLURM_JOB_ID": "123"}, PYTHON)
    make_proc(tmp_path, 12, 1, ["sleep", "9"], {"X": "SLURM_JOB_ID=12"}, "/usr/bin/sleep")
    (tmp_path / "self").mkdir()
    assert ns.job_pids_from_environ("12", os.getuid(), str(tmp_path)) == [(10, None)]
    assert ns.job_pids_from_environ("12", os.getuid() + 1, str(tmp_path)) == []
    assert ns.job_pids_from_environ("12", None, str(tmp_path)) == [(10, None)]


def test_listpids_rows_leave_out_the_monitor_step() -> None:
    text = fixtures_path.read("22.05", "03_jobs", "scontrol_listpids_running_node-1.txt")
    assert ns.parse_listpids(text) == [
        (5116, "0"),
        (5092, "batch"),
        (5096, "batch"),
        (5093, "batch"),
    ]
    text += "5200     3        4        0       0       \n"
    assert (5200, "4") not in ns.parse_listpids(text, own_step="4")
    assert len(ns.parse_listpids(text, own_step="4")) == 4


# ----------------------------------------------------------------- choosing processes


def test_srun_ranks_are_main_processes_and_forked_helpers_are_children(tmp_path: Path) -> None:
    make_proc(tmp_path, 100, 90, ["/bin/sh", "slurm_script"], exe="/usr/bin/dash")
    make_proc(tmp_path, 101, 100, ["srun", "python3", "train.py"], exe="/usr/bin/srun")
    make_proc(tmp_path, 200, 1, ["python3", "train.py"], {"SLURM_PROCID": "0"}, PYTHON)
    make_proc(tmp_path, 201, 200, ["python3", "train.py"], {"SLURM_PROCID": "0"}, PYTHON)
    found = procs(tmp_path, [100, 101, 200, 201])
    assert ns.assign_roles(found) == {200: "rank", 201: "child"}
    assert [(p.pid, r) for p, r in ns.select(found)] == [(200, "rank")]
    assert [(p.pid, r) for p, r in ns.select(found, all_processes=True)] == [
        (200, "rank"),
        (201, "child"),
    ]


def test_torchrun_workers_are_ranks_and_torchrun_their_launcher(tmp_path: Path) -> None:
    make_proc(tmp_path, 300, 1, ["/usr/bin/python3", "/venv/bin/torchrun", "train.py"], {}, PYTHON)
    for local in range(2):
        env = {"RANK": str(local), "LOCAL_RANK": str(local)}
        make_proc(tmp_path, 301 + local, 300, ["/usr/bin/python3", "-u", "train.py"], env, PYTHON)
    dataloader = {"RANK": "1", "LOCAL_RANK": "1"}
    make_proc(tmp_path, 310, 302, ["/usr/bin/python3", "-u", "train.py"], dataloader, PYTHON)
    found = procs(tmp_path, [300, 301, 302, 310])
    assert ns.assign_roles(found) == {300: "launcher", 301: "rank", 302: "rank", 310: "child"}
    assert [p.pid for p, _ in ns.select(found)] == [300, 301, 302]


def test_spawned_multiprocessing_workers_stay_children(tmp_path: Path) -> None:
    """A rank that set RANK in os.environ passes it to spawned workers; /proc shows the
    rank's own starting environment without it."""
    make_proc(tmp_path, 400, 1, ["python3", "train.py"], {"SLURM_PROCID": "0"}, PYTHON)
    spawned = ["python3", "-c", "from multiprocessing.spawn import spawn_main; spawn_main()"]
    make_proc(tmp_path, 401, 400, [*spawned, "--multiprocessing-fork"], {"RANK": "0"}, PYTHON)
    tracker = ["python3", "-c", "from multiprocessing.resource_tracker import main;main(5)"]
    make_proc(tmp_path, 402, 400, tracker, {"RANK": "0"}, PYTHON)
    assert ns.assign_roles(procs(tmp_path, [400, 401, 402])) == {
        400: "rank",
        401: "child",
        402: "child",
    }


def test_python_is_recognised_by_exe_else_argv0(tmp_path: Path) -> None:
    make_proc(tmp_path, 1, 0, ["/opt/conda/bin/python3.10", "x.py"])  # exe unreadable
    make_proc(tmp_path, 2, 0, ["my-launcher"], exe="/usr/bin/python3.12")  # renamed argv0
    make_proc(tmp_path, 3, 0, ["python-looking-name"], exe="/usr/bin/bash")
    one, two, three = procs(tmp_path, [1, 2, 3])
    assert ns.is_python(one) and ns.is_python(two) and not ns.is_python(three)


# ----------------------------------------------------------------- finding py-spy


def _executable(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_py_spy_on_path_never_next_to_slurmkits_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The admin host's venv is no place to look on a node (issue 14 #5): a user may own it."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(ns, "STANDARD_DIRS", ())
    _executable(tmp_path / "venv" / "bin" / "py-spy")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    found, looked, refused = ns.find_py_spy(None)
    assert (found, refused) == (None, [])
    assert looked == ["py-spy on PATH, then in "]
    on_path = _executable(tmp_path / "path" / "py-spy")
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert ns.find_py_spy(None)[0] == str(on_path)


def test_an_explicit_py_spy_replaces_the_search(tmp_path: Path) -> None:
    assert ns.find_py_spy("/nonexistent/py-spy") == (None, ["/nonexistent/py-spy"], [])
    not_executable = tmp_path / "py-spy"
    not_executable.write_text("")
    assert ns.find_py_spy(str(not_executable))[0] is None
    assert ns.find_py_spy(str(_executable(not_executable)))[0] == str(not_executable)


# ----------------------------------------------------------------- py-spy failures


def test_failures_are_classified_from_py_spys_own_messages() -> None:
    assert ns.classify_failure(STDERR_PTRACE_DENIED, True)[0] == "ptrace_denied"
    assert ns.classify_failure(STDERR_GONE, True) == ("gone", "exited before the dump")
    assert ns.classify_failure("Error: anything\n", False)[0] == "gone"
    status, message = ns.classify_failure(STDERR_NOT_PYTHON, True)
    assert (status, message) == (
        "not_python",
        "Error: Failed to find python version from target process",
    )
    assert ns.classify_failure("Error: Operation not permitted (os error 1)\n", True)[0] == (
        "ptrace_denied"
    )
    assert ns.classify_failure("", True) == ("error", "py-spy failed without a message")


# py-spy 0.4 run without CAP_SYS_PTRACE (setpriv --bounding-set=-sys_ptrace, as in a
# container without SYS_PTRACE) on a live root process, recorded on the sandbox.
STDERR_NO_CAP_PTRACE = (
    "Error: Failed to get process executable name. Check that the process is running.\n"
    "\n"
    "Caused by:\n"
    "    0: Permission denied (os error 13)\n"
    "    1: Permission denied (os error 13)\n"
)


def test_permission_denied_behind_check_that_the_process_is_running_is_ptrace() -> None:
    assert ns.classify_failure(STDERR_NO_CAP_PTRACE, True)[0] == "ptrace_denied"
    assert ns.classify_failure(STDERR_NO_CAP_PTRACE, False)[0] == "gone"


FAKE_PY_SPY = f"""#!/bin/sh
# dump --pid PID [--native]
case "$3" in
  101) cat <<'EOF'
{DUMP}EOF
  ;;
  102) printf '%s' "$DENIED" >&2; exit 1 ;;
  103) exec sleep 30 ;;
esac
"""


def test_run_prints_one_record_per_process_then_the_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "proc"
    root.mkdir()
    for pid in (101, 102, 103):
        make_proc(root, pid, 1, ["python3", "t.py"], {"SLURM_JOB_ID": "77"}, PYTHON)
    make_proc(root, 104, 1, ["sleep", "60"], {"SLURM_JOB_ID": "77"}, "/usr/bin/sleep")
    fake = _executable(tmp_path / "bin" / "py-spy", FAKE_PY_SPY)
    monkeypatch.setenv("DENIED", STDERR_PTRACE_DENIED)
    monkeypatch.setenv("SLURMD_NODENAME", "node-9")
    args = ["--jobid", "77", "--source", "environ", "--budget", "1.5", "--py-spy", str(fake)]
    assert ns.run([*args, "--proc-root", str(root)]) == 0  # the hung py-spy is stopped
    *records, node = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["pid"], r["status"]) for r in records] == [
        (101, "ok"),
        (102, "ptrace_denied"),
        (103, "timeout"),
    ]
    assert records[0]["dump"] == DUMP and records[0]["role"] == "rank"
    assert node == {
        "type": "node",
        "node": "node-9",
        "job_processes": 4,
        "python": 3,
        "selected": 3,
        "py_spy": str(fake),
        "looked_for": [str(fake)],
        "problem": None,
        "message": "",
    }


def test_run_without_py_spy_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_proc(tmp_path, 5, 1, ["python3", "t.py"], {"SLURM_JOB_ID": "8"}, PYTHON)
    missing = ["--py-spy", "/nonexistent/py-spy", "--proc-root", str(tmp_path)]
    ns.run(["--jobid", "8", "--source", "environ", *missing])
    (node,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (node["problem"], node["python"], node["looked_for"]) == (
        "py_spy_missing",
        1,
        ["/nonexistent/py-spy"],
    )


def test_listpids_failure_is_a_node_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _executable(
        tmp_path / "scontrol",
        "#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id' >&2\nexit 1\n",
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    ns.run(["--jobid", "8", "--source", "listpids"])
    (node,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert node["problem"] == "listpids_failed"
    assert "Invalid job id" in node["message"]


# ----------------------------------------------------------------- as shipped


def test_the_script_parses_as_python_3_6() -> None:
    """Nodes run it with their own python3, which may be an old distribution's."""
    ast.parse(node_script_source(), feature_version=(3, 6))


@pytest.mark.skipif(not PY_SPY.exists(), reason="needs py-spy (dev extra)")
def test_real_py_spy_dumps_a_real_process_found_by_its_job_id(tmp_path: Path) -> None:
    """End to end on this machine: the shipped text, a real Python target, the real py-spy."""
    jobid = str(900000000 + os.getpid())
    program = "import time\ndef stuck_here():\n    time.sleep(300)\nstuck_here()\n"
    target = subprocess.Popen(
        [sys.executable, "-c", program], env={**os.environ, "SLURM_JOB_ID": jobid}
    )
    try:
        args = ["--jobid", jobid, "--source", "environ", "--uid", str(os.getuid())]
        args += ["--budget", "20", "--py-spy", str(PY_SPY)]
        argv = [sys.executable, "-c", node_script_source(), *args]
        env = {**os.environ, "PATH": "/usr/bin:/bin"}  # py-spy only through --py-spy

        def dumped() -> list[dict]:
            out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
            records = [json.loads(line) for line in out.stdout.splitlines()]
            done = [r for r in records if r["type"] == "process" and "stuck_here" in r["dump"]]
            return done or []

        deadline = time.monotonic() + 30
        found = dumped()
        while not found and time.monotonic() < deadline:
            time.sleep(0.2)  # the target is still starting up
            found = dumped()
        (record,) = found
        assert record["pid"] == target.pid and record["status"] == "ok"
        assert record["role"] == "rank"
    finally:
        target.kill()
        target.wait()


def test_shutil_which_is_what_finds_py_spy_on_path() -> None:
    found = shutil.which("sh")
    assert found is not None and ns.find_py_spy("sh")[0] == os.path.realpath(found)
