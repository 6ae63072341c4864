"""``slurmkit why`` on real jobs: every ended verdict produced by a job that really ended so.

One module fixture submits every scenario at once and waits for them together (the
TIMEOUT job's minute is the longest; the NODE_FAIL, the preemption, the cancel by another
user and the slurmdbd-down question all happen inside it), then each test asks ``why``.

Out of memory: the sandbox schedules ``CR_CPU`` without cgroups, so no memory limit reaches
a step and ``OverMemoryKill`` has nothing to enforce: a job over its ``--mem`` runs on and
ends COMPLETED with MaxRSS above ReqMem. That is what Slurm records here, and what ``why``
must flag (the OUT_OF_MEMORY verdict itself is unit-tested on its logic only).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll, recorded_pid, slurmd_pid, submit

QOS = "slurmkit-why-high"
OTHER_USER = "slurmkit-test"
FAIL_NODE = "node-3"
PREEMPT_NODE = "node-4"
AWAY = f"--exclude={FAIL_NODE},{PREEMPT_NODE}"  # the other scenarios keep off both
BURN_SECONDS = 8
# python: touch MB megabytes, then stay busy (or asleep) for S seconds; print own CPU time
PY = (
    "import sys,time; mb,s,busy=int(sys.argv[1]),float(sys.argv[2]),sys.argv[3]=='busy'\n"
    "a=b'x'*(mb<<20); t=time.time()\n"
    "while time.time()-t<s:\n"
    "    0 if busy else time.sleep(0.2)\n"
    "print('cpu=%.3f' % time.process_time(), flush=True)\n"
)


@dataclass
class Scenarios:
    ids: dict[str, str]
    folder: Path
    no_dbd: dict = field(default_factory=dict)
    seconds: float = 0.0


def why(*args: str, check_rc: int | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "slurmkit", "why", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check_rc is not None:
        assert result.returncode == check_rc, result.stdout + result.stderr
    return result


def why_json(job: str) -> dict:
    result = why(job, "--json")
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def state_of(job: str) -> str:
    argv = ["sacct", "-X", "-n", "-P", "-D", "-j", job, "-o", "State"]
    out = run_slurm(argv, check=False).stdout.split("\n")
    return out[-2].split(" ")[0] if len(out) > 1 else ""


def squeue_state(job: str) -> str:
    return run_slurm(["squeue", "-h", "-j", job, "-o", "%T"], check=False).stdout.strip()


def _python_job(name: str, mb: int, seconds: float, busy: bool, *sbatch: str, folder: Path) -> str:
    script = folder / f"{name}.py"
    script.write_text(PY)
    return submit(
        f"--job-name=why-{name}",
        f"--output={folder}/{name}.out",
        *sbatch,
        f"--wrap=python3 {script} {mb} {seconds} {'busy' if busy else 'idle'}",
    )


def _ensure_qos() -> None:
    run_slurm(["sacctmgr", "-i", "add", "qos", QOS], check=False)
    run_slurm(["sacctmgr", "-i", "modify", "qos", QOS, "set", "Preempt=normal"], check=False)


@contextlib.contextmanager
def _stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.fixture(scope="module")
def scenarios(
    cluster: sandbox.SandboxSpec, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scenarios]:
    began = time.monotonic()
    # A module fixture runs before the per-test settled_nodes: a freshly started 24.11
    # sandbox still shows its nodes idle* (not responding) here.
    poll(lambda: not _not_ready(), 90, f"every node to answer: {_not_ready()}")
    folder = tmp_path_factory.mktemp("why")
    folder.chmod(0o755)
    _ensure_qos()
    ids: dict[str, str] = {}
    try:  # a setup that fails half way must not leave its jobs to the next module
        yield _play(cluster, folder, ids, began)
    finally:
        run_slurm(["scancel", *ids.values()], check=False)
        poll(lambda: _node_back(FAIL_NODE), 120, f"{FAIL_NODE} to answer again")


def _play(
    cluster: sandbox.SandboxSpec, folder: Path, ids: dict[str, str], began: float
) -> Scenarios:
    """Submit every scenario (recording each id in ``ids`` as it goes) and wait for its end."""
    py = lambda *a, **k: _python_job(*a, folder=folder, **k)  # noqa: E731
    ids["burn"] = py("burn", 10, BURN_SECONDS, True, "--cpus-per-task=4", AWAY)
    (folder / "mpi.py").write_text(PY)
    ids["mpi"] = submit(
        "--job-name=why-mpi", f"--output={folder}/mpi.out", "-N2", "-n4",
        "--mem-per-cpu=100M", AWAY, f"--wrap=srun python3 {folder}/mpi.py 50 4 busy",
    )  # fmt: skip
    ids["overmem"] = py("overmem", 300, 4, False, "--mem=100M", AWAY)
    ids["timeout"] = submit(
        "--job-name=why-timeout", "--time=1", "--signal=B:USR1@20", AWAY,
        f"--output={folder}/timeout.out",
        "--wrap=trap 'echo got USR1' USR1; sleep 300 & wait; sleep 300",
    )  # fmt: skip
    ids["segv"] = submit("--job-name=why-segv", AWAY, "--wrap=kill -SEGV $$")
    ids["exit3"] = submit(
        "--job-name=why-exit3", AWAY, f"--output={folder}/exit3.out",
        "--wrap=printf 'Traceback (most recent call last):\\n  File \"t.py\"\\n"
        "ValueError: bad shape\\n' >&2; exit 3",
    )  # fmt: skip
    ids["cancelled"] = submit(
        "--job-name=why-canc", f"--uid={OTHER_USER}", AWAY, "--wrap=sleep 300"
    )
    ids["requeue"] = submit("--job-name=why-requeue", "--requeue", AWAY, "--wrap=sleep 300")
    ids["victim"] = submit(
        "--job-name=why-victim", f"--nodelist={PREEMPT_NODE}", "--exclusive", "--wrap=sleep 300"
    )
    ids["nodefail"] = submit(
        "--job-name=why-nodefail", f"--nodelist={FAIL_NODE}", "--no-requeue", "--wrap=sleep 300"
    )
    ids["array"] = py("array", 20, 1, False, "--array=1-3", "--mem=50M", AWAY)
    for name in ("cancelled", "requeue", "victim", "nodefail"):
        poll(lambda n=name: squeue_state(ids[n]) == "RUNNING", 90, f"{name} to run")
    run_slurm(["scancel", ids["cancelled"]])
    run_slurm(["scontrol", "requeue", ids["requeue"]])
    # Slurm holds a requeued batch job back for the credential lifetime (job_mgr.c:
    # begin_time = now + _requeue_delay() + 1: 120 s by default)
    eligible = time.monotonic() + 121
    ids["preemptor"] = submit(
        "--job-name=why-preemptor", f"--nodelist={PREEMPT_NODE}", "--exclusive", f"--qos={QOS}",
        "--wrap=sleep 1",
    )  # fmt: skip
    slurmd = slurmd_pid(cluster, FAIL_NODE)
    result = Scenarios(ids, folder)
    os.kill(slurmd, signal.SIGSTOP)
    try:
        poll(lambda: state_of(ids["exit3"]) == "FAILED", 60, "exit3 to be accounted")
        # slurmdbd silent: exit3 is still in slurmctld (MinJobAge), the answer comes from it
        with _stopped(recorded_pid(cluster, "slurmdbd")):
            done = why(ids["exit3"], "--json")
        result.no_dbd = {"rc": done.returncode, "stderr": done.stderr, "stdout": done.stdout}
        poll(lambda: state_of(ids["nodefail"]) == "NODE_FAIL", 120, "NODE_FAIL")
    finally:
        os.kill(slurmd, signal.SIGCONT)
    ends = {"burn", "mpi", "overmem", "timeout", "segv", "array", "victim"}
    poll(lambda: all(_ended(ids[n]) for n in ends), 150, "every scenario to end")
    wait = max(60.0, eligible + 60 - time.monotonic())
    poll(lambda: squeue_state(ids["requeue"]) == "RUNNING", wait, "the requeued job to run again")
    result.seconds = time.monotonic() - began
    return result


def _ended(job: str) -> bool:
    states = run_slurm(["sacct", "-X", "-n", "-P", "-j", job, "-o", "State"], check=False).stdout
    words = [line.split(" ")[0] for line in states.split("\n") if line.strip()]
    return bool(words) and all(w not in ("PENDING", "RUNNING", "REQUEUED") for w in words)


def _not_ready() -> list[str]:
    """Nodes not responding (``idle*``) or out of service, as ``name:state``."""
    out = run_slurm(["sinfo", "-h", "-N", "-o", "%N %t"], check=False).stdout.split("\n")
    bad = ("*", "drain", "drng", "down", "fail", "boot", "maint")
    return sorted({ln.replace(" ", ":") for ln in out if ln.strip() and any(b in ln for b in bad)})


def _node_back(node: str) -> bool:
    out = run_slurm(["sinfo", "-h", "-n", node, "-o", "%T"], check=False).stdout.strip()
    return out in ("idle", "mixed", "allocated")


# ---------------------------------------------------------------- verdicts


def test_timeout_names_the_limit_and_the_signal_asked(scenarios: Scenarios) -> None:
    v = why_json(scenarios.ids["timeout"])
    assert v["data"]["state"] == "TIMEOUT"
    assert v["headline"].endswith("hit its time limit (1:00) and was killed"), v
    assert any("--signal warning was asked" in e["text"] for e in v["evidence"]), v
    assert v["severity"] == "bad"


def test_over_memory_is_recorded_and_flagged(scenarios: Scenarios) -> None:
    """What Slurm records here for a job over its --mem: COMPLETED, MaxRSS above ReqMem."""
    v = why_json(scenarios.ids["overmem"])
    eff = v["data"]["efficiency"]
    assert eff["memory_request"] == 100 << 20
    assert eff["memory_used"] > 250 << 20, eff
    assert "x the 100.0M asked" in v["headline"] and v["severity"] == "warning", v


def test_node_fail_names_the_node_and_its_event(scenarios: Scenarios) -> None:
    v = why_json(scenarios.ids["nodefail"])
    assert v["headline"].endswith(f"NODE_FAIL: node {FAIL_NODE} stopped answering"), v
    assert any(e["source"] == "sacctmgr show event" for e in v["evidence"]), v


def test_preempted(scenarios: Scenarios) -> None:
    v = why_json(scenarios.ids["victim"])
    assert "was preempted" in v["headline"], v


def test_cancelled_by_another_user(scenarios: Scenarios) -> None:
    v = why_json(scenarios.ids["cancelled"])
    assert "was cancelled by root (uid 0)" in v["headline"], v
    assert f"the job is {OTHER_USER}'s" in v["headline"], v


def test_segfault_is_signal_11(scenarios: Scenarios) -> None:
    result = why(scenarios.ids["segv"], check_rc=1)
    assert "killed by signal 11 (SIGSEGV" in result.stdout.splitlines()[0]


def test_nonzero_exit_and_the_last_exception(scenarios: Scenarios) -> None:
    v = why_json(scenarios.ids["exit3"])
    assert v["headline"].endswith("failed: step batch exit code 3"), v
    found = [e for e in v["evidence"] if e["label"] == "log: Python exception"]
    assert found and found[0]["text"] == "ValueError: bad shape", v


def test_requeue_counts_the_attempts(scenarios: Scenarios) -> None:
    v = why_json(scenarios.ids["requeue"])
    assert v["kind"] == "running" and v["data"]["attempts"] == 2, v
    assert any(e["label"] == "requeued" for e in v["evidence"]), v


def test_array_is_one_summary(scenarios: Scenarios) -> None:
    v = why_json(scenarios.ids["array"])
    assert v["headline"].endswith(": 3 tasks: 3 COMPLETED"), v


def test_slurmdbd_down_answers_from_slurmctld_with_a_note(scenarios: Scenarios) -> None:
    done = scenarios.no_dbd
    assert done["rc"] == 1, done
    v = json.loads(done["stdout"])
    assert v["headline"].endswith("failed: exit code 3"), v
    assert any("slurmdbd" in note and "slurmctld alone" in note for note in v["notes"]), v


def test_unknown_job_is_one_line_exit_2(scenarios: Scenarios) -> None:
    result = why("999999", check_rc=2)
    assert result.stderr.count("\n") == 1 and "unknown job 999999" in result.stderr


# ---------------------------------------------------------------- efficiency against the truth


def _job_cpu(folder: Path, name: str) -> float:
    text = (folder / f"{name}.out").read_text()
    return sum(float(line[4:]) for line in text.splitlines() if line.startswith("cpu="))


def test_cpu_efficiency_is_what_the_job_burned(scenarios: Scenarios) -> None:
    """1 busy CPU of 4: slurmkit's CPU seconds are the process's own (time.process_time)."""
    v = why_json(scenarios.ids["burn"])
    eff = v["data"]["efficiency"]
    burned = _job_cpu(scenarios.folder, "burn")
    assert eff["cpus"] == 4
    assert eff["cpu_seconds"] == pytest.approx(burned, abs=1.0), (eff, burned)
    assert eff["cpu_share"] == pytest.approx(burned / (eff["elapsed"] * 4), abs=0.05)
    assert "asked 4 CPUs, used" in v["headline"], v


def test_memory_of_a_multi_task_step_is_all_its_tasks(scenarios: Scenarios) -> None:
    """4 tasks of 50 MB each over 2 nodes: the step held about 4 x 50 MB, not one task's."""
    v = why_json(scenarios.ids["mpi"])
    eff = v["data"]["efficiency"]
    (step,) = [s for s in eff["steps"] if s["step"].endswith(".0")]
    assert step["tasks"] == 4 and step["nodes"] == 2
    assert step["memory"] >= 4 * (50 << 20), step
    assert step["memory"] > 3.5 * step["peak_task"], step
    assert eff["memory_request"] == 400 << 20
    burned = _job_cpu(scenarios.folder, "mpi")
    assert eff["cpu_seconds"] == pytest.approx(burned, abs=1.5), (eff, burned)


def test_the_scenarios_cost(scenarios: Scenarios) -> None:
    """The module's one wait, reported (the TIMEOUT job's minute is the floor)."""
    print(f"why scenarios: {scenarios.seconds:.0f} s")
    assert scenarios.seconds < 240
