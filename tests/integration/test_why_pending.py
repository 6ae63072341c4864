"""``why`` on real pending jobs and a real hang, one queue set up once for the module.

The sandbox's four nodes are laid out so that every pending reason happens at once
(pending jobs cost no CPU, so they share one fixture and the module adds seconds, not
minutes): node-4 is drained, node-[1-2] run the *hang* job (four Python ranks of
test_pyspy's program, rank 1 stuck elsewhere), node-3 runs a one-CPU job. Then, in partition cpu:

- two jobs of two whole nodes: the first waits for ``Resources``, the second for
  ``Priority``;
- a job depending on the hang job (``Dependency``), one held by its user (``-H``),
  one starting an hour from now (``BeginTime``), one asking for node-4 by name
  (``ReqNodeNotAvail``);
- with a QOS of ``MaxJobsPerUser=1`` (made with sacctmgr here, removed after): the
  one-CPU job runs under it and a second one waits (``QOSMaxJobsPerUserLimit``).
  Slurm enforces QOS limits only with ``AccountingStorageEnforce=limits``, which the
  sandbox sets as production clusters do (slurmkit.sandbox.configs.ENFORCE).

Everything is cancelled, node-4 resumed and the QOS removed at the end.

Run as a script, this records the Slurm outputs the unit tests replay
(tests/fixtures/why/pending/slurm-<version>/): every call ``why`` makes for each
scenario, byte-exact, with its exit code and stderr::

    eval "$(slurmkit sandbox env --dir /tmp/sk-why-22)"
    .venv/bin/python -m tests.integration.test_why_pending \\
        --record tests/fixtures/why/pending/slurm-22.05
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from slurmkit import _proc, pyspy
from slurmkit.slurm import query
from slurmkit.slurm.commands import calls_made, run_slurm
from slurmkit.slurm.parse_text import DELIMITER
from slurmkit.slurm.records import Job
from slurmkit.why import hung, pending
from slurmkit.why.model import Verdict
from tests.integration.test_pyspy import PROGRAM  # rank 1 waits elsewhere; rank 0 forks

DRAIN_REASON = "slurmkit why test: bad fan"
SEP = "<SEP>"  # the recordings' stand-in for this process's random field separator
QOS = "skwhyq"


@dataclass
class Queue:
    """The module's jobs by role, and what the layout could not make happen."""

    ids: dict[str, str] = field(default_factory=dict)
    hang_dir: Path | None = None
    odd_node: str = ""
    qos_enforced: bool = False


def _sbatch(*args: str) -> str:
    name = f"sk-why-{uuid.uuid4().hex[:6]}"
    argv = ["sbatch", "--parsable", "-J", name, "-o", "/dev/null", "-p", "cpu", *args]
    return run_slurm(argv).stdout.strip().split(";")[0]


def _wait(check: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.3)


def _reasons(ids: dict[str, str]) -> dict[str, str]:
    jobs = query.jobs(job_ids=list(ids.values()))
    by_id = {j.job_id: (j.reason or j.state) for j in jobs}
    return {role: by_id.get(job_id, "") for role, job_id in ids.items()}


def _enforced() -> bool:
    out = run_slurm(["scontrol", "show", "config"]).stdout
    line = next((ln for ln in out.splitlines() if ln.startswith("AccountingStorageEnforce")), "")
    return "limits" in line


def _add_qos() -> None:
    run_slurm(["sacctmgr", "-i", "add", "qos", QOS, "MaxJobsPerUser=1"], check=False)
    run_slurm(["sacctmgr", "-i", "modify", "user", "root", "set", f"qos+={QOS}"], check=False)


def _remove_qos() -> None:
    run_slurm(["sacctmgr", "-i", "modify", "user", "root", "set", f"qos-={QOS}"], check=False)
    run_slurm(["sacctmgr", "-i", "delete", "qos", QOS], check=False)


def build(queue: Queue, work: Path) -> None:
    """Lay the queue out (see the module docstring); the caller must call :func:`teardown`,
    also when this fails half-way (``queue`` holds what was made)."""
    queue.hang_dir, queue.qos_enforced = work, _enforced()
    run_slurm(["scontrol", "update", "nodename=node-4", "state=drain", f"reason={DRAIN_REASON}"])
    (work / "prog.py").write_text(PROGRAM)
    ranks = f"srun python3 {shlex.quote(str(work / 'prog.py'))} {work}"
    ids = queue.ids
    ids["hang"] = _sbatch(
        "-N2", "--ntasks-per-node=2", "--exclusive", "--time=30", "-w", "node-[1-2]",
        "-o", str(work / "hang.out"), "--wrap", ranks,
    )  # fmt: skip
    qos = [f"--qos={QOS}"] if queue.qos_enforced else []
    if queue.qos_enforced:
        _add_qos()
    ids["small"] = _sbatch("-c1", "--time=30", "-w", "node-3", *qos, "--wrap", "sleep 900")
    ready = [work / f"ready-{rank}" for rank in range(4)]
    _wait(lambda: all(p.exists() and p.read_text() for p in ready), 120, "4 ranks ready")
    _wait(lambda: _reasons({"s": ids["small"]})["s"] == "RUNNING", 60, "the small job to run")
    queue.odd_node = ready[1].read_text()
    ids["resources"] = _sbatch("-N2", "--exclusive", "--time=10", "--wrap", "true")
    ids["priority"] = _sbatch("-N2", "--exclusive", "--time=20", "--wrap", "true")
    ids["dependency"] = _sbatch(
        "-c1", "--time=5", f"--dependency=afterok:{ids['hang']}", "--wrap", "true"
    )
    ids["held"] = _sbatch("-c1", "--time=5", "-H", "--wrap", "true")
    ids["admin"] = _sbatch("-c1", "--time=5", "--wrap", "true")
    run_slurm(["scontrol", "hold", ids["admin"]])  # root's hold is an administrator's
    ids["begin"] = _sbatch("-c1", "--time=5", "--begin=now+1hour", "--wrap", "true")
    ids["nodes"] = _sbatch("-c1", "--time=5", "-w", "node-4", "--wrap", "true")
    if queue.qos_enforced:
        ids["qos"] = _sbatch("-c1", "--time=5", "-w", "node-3", f"--qos={QOS}", "--wrap", "true")
    _wait(lambda: _settled(ids), 60, "the pending reasons")


EXPECTED = {
    "resources": "Resources",
    "priority": "Priority",
    "dependency": "Dependency",
    "held": "JobHeldUser",
    "admin": "JobHeldAdmin",
    "begin": "BeginTime",
    "nodes": "ReqNodeNotAvail",
    "qos": "QOSMaxJobsPerUserLimit",
}


def _settled(ids: dict[str, str]) -> bool:
    """Every reason as planned, and the backfill's start estimate for the first in line."""
    now = _reasons(ids)
    if not all(now[role].startswith(EXPECTED[role]) for role in ids if role in EXPECTED):
        return False
    return any(j.start_time for j in query.pending_starts([ids["resources"]]))


def teardown(queue: Queue) -> None:
    if queue.ids:
        run_slurm(["scancel", *queue.ids.values()], check=False)
    run_slurm(["scontrol", "update", "nodename=node-4", "state=resume"], check=False)
    if queue.qos_enforced:
        _wait(lambda: not query.jobs(job_ids=list(queue.ids.values())), 60, "the jobs to end")
        _remove_qos()


# ---------------------------------------------------------------- live tests


@pytest.fixture(scope="module")
def queue(cluster: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Queue]:
    work = tmp_path_factory.mktemp("why-pending")
    made = Queue()
    try:
        build(made, work)
        yield made
    finally:
        teardown(made)


def _why(queue: Queue, role: str) -> tuple[Verdict, int]:
    job = query.job(queue.ids[role])
    before = calls_made()
    verdict = pending.explain(job)
    return verdict, calls_made() - before


def test_resources_names_the_rank_factors_estimate_and_what_if(queue: Queue) -> None:
    verdict, calls = _why(queue, "resources")
    job = queue.ids["resources"]
    assert (
        verdict.headline
        == f"job {job} waits for free nodes: it is 1st of 2 in line in partition cpu"
    )
    labels = [e.label for e in verdict.evidence]
    assert labels[:3] == ["rank", "priority", "start"]
    assert verdict.evidence[1].text.startswith("priority ")
    assert "expected_start" in verdict.data
    changes = [a["change"] for a in verdict.data["what_if"]]  # type: ignore[union-attr]
    assert changes == [["--time=00:05:00"], ["--nodes=1"]]
    assert all(a["start"] for a in verdict.data["what_if"])  # type: ignore[union-attr]
    assert calls == 4  # squeue, sprio, two sbatch --test-only


def test_priority_is_second_in_line_behind_the_first(queue: Queue) -> None:
    verdict, calls = _why(queue, "priority")
    first, job = queue.ids["resources"], queue.ids["priority"]
    assert verdict.headline == (
        f"job {job} waits for jobs of higher priority: it is 2nd of 2 in line in partition cpu"
    )
    assert f"ahead of it (priority): {first} (" in verdict.evidence[0].text
    assert calls == 4


def test_dependency_names_the_job_and_its_state(queue: Queue) -> None:
    verdict, calls = _why(queue, "dependency")
    hang = queue.ids["hang"]
    assert verdict.headline == (
        f"job {queue.ids['dependency']} waits for job {hang} (afterok): RUNNING on node-[1-2]"
    )
    assert calls == 2


def test_held_by_the_user_says_how_to_release(queue: Queue) -> None:
    verdict, calls = _why(queue, "held")
    job = queue.ids["held"]
    assert verdict.headline == f"job {job} is held by its user: scontrol release {job}"
    assert calls == 1


def test_begin_time_gives_the_time(queue: Queue) -> None:
    verdict, _ = _why(queue, "begin")
    assert verdict.headline.startswith(f"job {queue.ids['begin']} may not start before ")
    assert verdict.headline.endswith(("(in 60 min) (--begin)", "(in 59 min) (--begin)"))


def test_unavailable_node_gives_its_drain_reason_and_author(queue: Queue) -> None:
    verdict, calls = _why(queue, "nodes")
    assert verdict.headline.startswith(
        f"job {queue.ids['nodes']} waits for node-4, out of service: "
    )
    assert f"reason {DRAIN_REASON!r} (root, " in verdict.headline
    assert calls == 2


def test_qos_limit_names_the_limit_and_the_usage(queue: Queue) -> None:
    assert queue.qos_enforced, "the sandbox must enforce limits (AccountingStorageEnforce)"
    verdict, calls = _why(queue, "qos")
    assert verdict.headline == (
        f"job {queue.ids['qos']} is held back by its QOS {QOS}'s limit on jobs per user: "
        "max 1 (1 of root's jobs run under it now)"
    )
    assert calls == 3


PY_SPY = str(Path(sys.executable).with_name("py-spy"))


def test_a_hang_on_one_rank_names_its_node(queue: Queue) -> None:
    job = query.job(queue.ids["hang"])
    verdict = hung.explain(job, hung.Options(stale=1.0, settings=_settings()))
    odd = queue.odd_node
    assert verdict.kind == "hung" and verdict.severity == "bad"
    assert re.fullmatch(
        rf"job {job.job_id} looks hung: 1 rank on {odd} in wait_for_peer \(prog\.py:\d+\) "
        rf"while 3 wait in allreduce \(prog\.py:\d+\): suspect {odd}",
        verdict.headline,
    )
    assert [e.label for e in verdict.evidence] == ["ranks", "odd ranks", odd]
    assert verdict.data["suspect_nodes"] == [odd]


def test_hang_without_py_spy_is_a_note(queue: Queue) -> None:
    job = query.job(queue.ids["hang"])
    settings = _settings("/nonexistent/py-spy")
    verdict = hung.explain(job, hung.Options(stacks=True, settings=settings))
    assert verdict.kind == "running"
    assert any("py-spy not installed on node-1" in n for n in verdict.notes)


# ---------------------------------------------------------------- recording for unit tests


class _Recorder:
    """Wraps the process runner: every Slurm call ``why`` makes, saved byte-exact."""

    def __init__(self, out: Path, real: _proc.Runner) -> None:
        self.out, self.real, self.index = out, real, {}  # type: dict[str, object]
        self.scenario = ""

    def __call__(self, argv, **kwargs):  # type: ignore[no-untyped-def]
        result = self.real(argv, **kwargs)
        n = len([k for k in self.index if k.startswith(self.scenario + "-")]) + 1
        name = f"{self.scenario}-{n}-{Path(argv[0]).name}"
        (self.out / f"{name}.out").write_text(result.stdout.replace(DELIMITER, SEP))
        (self.out / f"{name}.err").write_text(result.stderr)
        command = [a.replace(DELIMITER, SEP) for a in argv]
        self.index[name] = {"command": command, "exit_code": result.returncode}
        return result


def _settings(py_spy: str | None = None) -> pyspy.Settings:
    return pyspy.Settings(dump=pyspy.DumpOptions(py_spy=py_spy or PY_SPY))


def _saving(out: Path) -> hung.Collector:
    """pyspy.collect, keeping each dumped process's py-spy text for the unit tests."""

    def collect(jobid: str, job: Job, settings: pyspy.Settings) -> pyspy.Collection:
        found = pyspy.collect(jobid, job, settings)
        kept = [
            {"node": p.node, "pid": p.pid, "role": p.role, "status": p.status, "text": p.text}
            for p in found.processes
        ]
        (out / "hang-stacks.json").write_text(json.dumps(kept, indent=1) + "\n")
        return found

    return collect


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp") / f"why-record-{uuid.uuid4().hex[:6]}"
    work.mkdir()
    queue = Queue()
    try:
        build(queue, work)
        recorder = _Recorder(out, _proc.runner)
        jobs = {role: query.job(job_id) for role, job_id in queue.ids.items()}
        for role, job in jobs.items():
            (out / f"{role}-job.out").write_text(
                run_slurm(["scontrol", "--details", "show", "job", job.job_id]).stdout
            )
        _proc.runner = recorder
        for role, job in jobs.items():
            if role in EXPECTED:
                recorder.scenario = role
                pending.explain(job)
        recorder.scenario = "hang"
        hung.explain(
            jobs["hang"], hung.Options(stacks=True, settings=_settings()), collect=_saving(out)
        )
        _proc.runner = recorder.real
        meta = {
            "ids": queue.ids,
            "odd_node": queue.odd_node,
            "recorded": time.time(),
            "calls": recorder.index,
        }
        (out / "index.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    finally:
        teardown(queue)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path, required=True)
    record(parser.parse_args().record)
