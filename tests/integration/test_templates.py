"""Every shipped template, submitted by ``slurmkit template submit`` to the sandbox, run to its end.

The sandbox has no GPU, torch or dcgmi: launchers run a stand-in launcher (it prints
what it was given and runs the script with python3), and GPU checks must end
"skipped", never "pass". Job names are unique per test; every test cancels what it
left queued.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from slurmkit import hostlist, sandbox
from slurmkit.slurm import query
from slurmkit.slurm._exec import run_slurm
from slurmkit.templating import discover
from slurmkit.templating.results import parse_check_lines, parse_cpus_lines, parse_cpus_verdict
from tests.integration.conftest import poll

FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}
GPU_CHECKS = {"cuda", "gpu-count", "gpu-mem", "nccl", "dcgmi"}
# Templates this module submits; test_every_template_is_exercised keeps it complete.
EXERCISED = {
    "torchrun",
    "accelerate",
    "deepspeed",
    "train-wrapper",
    "self-perpetuating",
    "cron-scheduler",
    "faulty-node-check",
    "gpu-memory-test",
    "nccl-barrier-test",
    "dcgmi-diag",
    "cpus-per-task-test",
    # issue 17: run in test_launch_templates.py (mpirun with the host's Open MPI on 22.05)
    "srun-launcher",
    "preprocess-array",
    "mpirun",
    # issue 16: run by `faulty scan --checks net` in test_faulty_net.py
    "net-check",
}
# The sandbox's nodes: gpu:4 and 8 CPUs each; small requests so other tests fit beside.
SMALL_GPU = ("gpus_per_node=4", "cpus_per_task=1")

FAKE_LAUNCHER = """#!/bin/bash
# Stand-in for torchrun/accelerate/deepspeed: print what it was given, run the script.
echo "launcher args: $*"
for a in "$@"; do
  if [[ $a == --hostfile=* ]]; then echo "hostfile: $(tr '\\n' ',' < "${a#--hostfile=}")"; fi
done
while [[ $# -gt 0 && $1 == --* ]]; do shift; done
exec python3 "$@"
"""

TRAIN_PY = """import os, signal, sys, time
node = os.environ.get("SLURMD_NODENAME")
def handler(signum, frame):
    print(f"worker on {node} got {signal.Signals(signum).name}: checkpoint, exit 0", flush=True)
    sys.exit(0)
signal.signal(signal.SIGUSR2, handler)
print(f"worker on {node} rank {os.environ['SLURM_PROCID']} args={sys.argv[1:]}", flush=True)
if sys.argv[1:2] == ["fail"] and os.environ["SLURM_PROCID"] == "1":
    sys.exit(3)
if sys.argv[1:2] and sys.argv[1].isdigit():
    time.sleep(int(sys.argv[1]))
    print("worker was never signalled", flush=True)
"""


@dataclass
class Templates:
    """Submits templates through the CLI into a private folder and cleans up after the test."""

    run_cli: Callable[..., object]
    root: Path
    names: list[str] = field(default_factory=list)

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def submit(
        self, template: str, *sets: str, name_param: str = "job_name", extra: tuple = ()
    ) -> tuple[str, str]:
        name = f"sk-tpl-{uuid.uuid4().hex[:8]}"
        self.names.append(name)
        args = ["template", "submit", template, "--script-dir", str(self.root / "scripts")]
        for value in (f"log_dir={self.logs}", f"{name_param}={name}", *sets):
            args += ["--set", value]
        result = self.run_cli(*args, "--", f"--chdir={self.root}", *extra)
        job_id = result.stdout.strip()  # type: ignore[attr-defined]
        assert job_id.isdigit(), result
        return job_id, name

    def log(self, name: str, job_id: str) -> str:
        return (self.logs / f"{name}-{job_id}.out").read_text()

    def cancel_all(self) -> None:
        for name in self.names:
            run_slurm(["scancel", f"--name={name}"], check=False)


@pytest.fixture
def templates(cluster: sandbox.SandboxSpec, run_cli, tmp_path: Path) -> Iterator[Templates]:
    (tmp_path / "fake-launcher").write_text(FAKE_LAUNCHER)
    (tmp_path / "fake-launcher").chmod(0o755)
    (tmp_path / "train.py").write_text(TRAIN_PY)
    helper = Templates(run_cli=run_cli, root=tmp_path)
    try:
        yield helper
    finally:
        helper.cancel_all()


def sacct_rows(job_id: str, name: str, fields: str) -> list[list[str]]:
    """sacct rows of this job only: the sandbox reuses job ids after a restart, names are unique."""
    argv = ["sacct", "-X", "-n", "-P", "-j", job_id, f"--name={name}", "-o", fields]
    return [line.split("|") for line in run_slurm(argv).stdout.splitlines() if line]


def state(job_id: str, name: str) -> str:
    rows = sacct_rows(job_id, name, "State")
    return rows[0][0].split(" ")[0] if rows else ""


def wait_final(job_id: str, name: str, timeout: float = 120) -> str:
    return str(
        poll(
            lambda: (now := state(job_id, name)) in FINAL and now,
            timeout,
            f"job {job_id} ({name}) to end",
        )
    )


def pending(name: str) -> list[str]:
    out = run_slurm(["squeue", "--noheader", f"--name={name}", "--states=PENDING", "-o", "%i"])
    return out.stdout.split()


def job_nodes(job_id: str, name: str) -> list[str]:
    ((nodelist,),) = sacct_rows(job_id, name, "NodeList")
    return hostlist.expand(nodelist)


def test_every_template_is_exercised() -> None:
    assert {t.name for t in discover()} == EXERCISED


# ---------------------------------------------------------------- launchers


@pytest.mark.parametrize("template", ["torchrun", "accelerate", "deepspeed"])
def test_launcher_runs_one_launcher_per_node_with_the_first_node_as_master(
    templates: Templates, template: str
) -> None:
    job_id, name = templates.submit(
        template,
        *SMALL_GPU,
        "nodes=2",
        "time=10",  # > signal_time (300 s): no graceful-exit signal at the first check
        f"launcher={templates.root / 'fake-launcher'}",
        "script_args=a 'b c'",
    )
    assert wait_final(job_id, name) == "COMPLETED", templates.log(name, job_id)
    log = templates.log(name, job_id)
    nodes = job_nodes(job_id, name)
    assert len(nodes) == 2
    for rank, node in enumerate(nodes):
        prefix = f"[{node}:{rank}] "
        (args_line,) = [ln for ln in log.splitlines() if ln.startswith(prefix + "launcher args:")]
        assert f"{nodes[0]} " in args_line.replace("=", " ") + " "
        assert f"--node_rank={rank}" in args_line or f"--machine_rank={rank}" in args_line, (
            args_line
        )
        assert f"{prefix}worker on {node} rank {rank} args=['a', 'b c']" in log
    if template == "deepspeed":
        assert f"hostfile: {nodes[0]} slots=4,{nodes[1]} slots=4," in log
    if template == "accelerate":
        assert "--num_processes=8" in log and "--num_machines=2" in log


def test_failing_worker_fails_the_job(templates: Templates) -> None:
    job_id, name = templates.submit(
        "torchrun",
        *SMALL_GPU,
        "time=10",  # > signal_time (300 s): no graceful-exit signal at the first check
        f"launcher={templates.root / 'fake-launcher'}",
        "script_args=fail",
    )
    assert wait_final(job_id, name) == "FAILED"
    assert "Exited with exit code 3" in templates.log(name, job_id)


def test_launcher_output_reaches_the_log_while_the_job_runs(templates: Templates) -> None:
    """Each line is in the log as soon as it is printed, not when the step ends.

    The prefixer was `awk '{ print p $0; fflush() }'`: Debian's and Ubuntu's default awk
    (mawk, as in the 24.11 and 26.05 roots) reads a pipe in 4 KB blocks, so a training's
    lines waited there, and a job killed at its time limit lost them all.
    """
    job_id, name = templates.submit(
        "torchrun",
        *SMALL_GPU,
        "time=10",  # > signal_time (300 s): no graceful-exit signal at the first check
        "signal=none",
        f"launcher={templates.root / 'fake-launcher'}",
        "script_args=170",
    )
    log = templates.logs / f"{name}-{job_id}.out"

    def both_workers_logged() -> bool:
        text = log.read_text() if log.exists() else ""
        return text.count("] worker on node-") == 2

    poll(both_workers_logged, 90, "both workers' first line in the log")
    assert [job.state for job in query.jobs(job_ids=[job_id])] == ["RUNNING"]  # squeue: sacct lags


def test_graceful_exit_signal_reaches_the_workers_on_every_node(templates: Templates) -> None:
    """--signal=USR2@90 with --time=3: the signal comes 60-90 s after the start.

    slurmctld sends it once, at its first 30 s check (PERIODIC_TIMEOUT) at most 30 s before
    the asked time (send_job_warn_signal). With --time=2 and 100 s it came at the first
    check after the start: under load, before srun had started the workers or their
    handler was installed, and it was lost (seen on 26.05 in CI).
    """
    job_id, name = templates.submit(
        "torchrun",
        *SMALL_GPU,
        "time=3",
        "signal_time=90",
        f"launcher={templates.root / 'fake-launcher'}",
        "script_args=240",
    )
    assert wait_final(job_id, name, timeout=300) == "COMPLETED", templates.log(name, job_id)
    log = templates.log(name, job_id)
    for node in job_nodes(job_id, name):
        assert f"worker on {node} got SIGUSR2: checkpoint, exit 0" in log
    assert "worker was never signalled" not in log


# ---------------------------------------------------------------- train wrapper


def test_train_wrapper_sources_the_current_target_then_obeys_the_kill_switch(
    templates: Templates,
) -> None:
    root = templates.root
    (root / "a.slurm").write_text(
        'echo "A ran as array job $SLURM_ARRAY_TASK_ID"\nln -sfn b.slurm current.slurm\n'
    )
    (root / "b.slurm").write_text(
        'echo "B ran as array job $SLURM_ARRAY_TASK_ID"\n'
        "srun --cpus-per-task=$SLURM_CPUS_PER_TASK hostname\n"
    )
    (root / "current.slurm").symlink_to("a.slurm")
    # time > signal_time (300 s): no graceful-exit signal at slurmctld's first check
    common = ("gpus_per_node=0", "cpus_per_task=1", "time=10", f"kill_switch={root / 'stop'}")
    job_id, name = templates.submit(
        "train-wrapper", *common, "array_size=2", f"target={root / 'current.slurm'}"
    )
    states = poll(lambda: _array_states(job_id, name, 2), 120, "both array jobs to end")
    assert states == ["COMPLETED", "COMPLETED"]
    first = (templates.logs / f"{name}-{job_id}_1.out").read_text()
    second = (templates.logs / f"{name}-{job_id}_2.out").read_text()
    assert "A ran as array job 1" in first and "B ran" not in first
    assert "B ran as array job 2" in second and "-> " + str(root / "b.slurm") in second

    (root / "stop").touch()
    job_id, name = templates.submit(
        "train-wrapper", *common, "array_size=3", f"target={root / 'current.slurm'}"
    )
    states = poll(lambda: _array_states(job_id, name, 3), 120, "the array to burn through")
    assert states == ["COMPLETED"] * 3
    for index in (1, 2, 3):
        log = (templates.logs / f"{name}-{job_id}_{index}.out").read_text()
        assert "kill switch" in log and " ran as array job" not in log


def _array_states(job_id: str, name: str, size: int) -> list[str] | None:
    rows = dict(row[:2] for row in sacct_rows(job_id, name, "JobID,State") if "_" in row[0])
    states = [rows.get(f"{job_id}_{i}", "").split(" ")[0] for i in range(1, size + 1)]
    return states if all(s in FINAL for s in states) else None


# ---------------------------------------------------------------- self-resubmitting jobs


def test_self_perpetuating_submitted_twice_keeps_one_chain(templates: Templates) -> None:
    sets = (
        "period=1h",
        "time=2",
        f"command=echo work done on $SLURMD_NODENAME > {templates.root}/w",
    )
    first, name = templates.submit("self-perpetuating", *sets)
    second = templates.run_cli(  # same job name: a second submission of the same chain
        "template", "submit", "self-perpetuating", "--script-dir", str(templates.root / "s"),
        "--set", f"job_name={name}", "--set", f"log_dir={templates.logs}", *_sets(sets),
    ).stdout.strip()  # type: ignore[attr-defined]  # fmt: skip
    assert wait_final(first, name) == "COMPLETED" and wait_final(second, name) == "COMPLETED"
    logs = templates.log(name, first) + templates.log(name, second)
    assert logs.count("queued=now") == 1 and logs.count("queued=already") == 1
    (queued,) = pending(name)
    assert f"SLURMKIT_CHAIN next={queued} " in logs
    detail = query.job(queued)
    assert detail.state == "PENDING"
    assert (templates.root / "w").read_text().startswith("work done on node-")


def _sets(values: tuple[str, ...]) -> list[str]:
    return [arg for value in values for arg in ("--set", value)]


def test_self_perpetuating_chain_runs_again_after_its_period(templates: Templates) -> None:
    first, name = templates.submit("self-perpetuating", "period=5s", "time=2", "command=true")
    assert wait_final(first, name) == "COMPLETED"
    (second,) = [ln.split("next=")[1].split()[0] for ln in _chain_lines(templates, name, first)]
    assert wait_final(second, name, timeout=120) == "COMPLETED"
    assert "queued=now" in templates.log(name, second)
    assert len(pending(name)) == 1


def _chain_lines(templates: Templates, name: str, job_id: str) -> list[str]:
    return [ln for ln in templates.log(name, job_id).splitlines() if "SLURMKIT_CHAIN" in ln]


def test_cron_scheduler_submits_each_job_of_its_folder(templates: Templates) -> None:
    folder = templates.root / "cron.1h"
    folder.mkdir()
    child = (
        "#!/bin/bash\n#SBATCH --job-name={n} --time=1 --output=%x-%j.out\necho {n} ran in $PWD\n"
    )
    child_names = [f"sk-tpl-child-{uuid.uuid4().hex[:6]}" for _ in range(2)]
    templates.names.extend(child_names)
    (folder / "a.slurm").write_text(child.format(n=child_names[0]))
    (folder / "b c.slurm").write_text(child.format(n=child_names[1]))
    (folder / "notes.txt").write_text("not a job")
    templates.run_cli("template", "render", "cron-scheduler", "-o", str(folder / "sched.slurm"))

    job_id, name = templates.submit(
        "cron-scheduler", "period=1h", f"folder={folder}", name_param="chain_name"
    )
    assert wait_final(job_id, name) == "COMPLETED", templates.log(name, job_id)
    log = templates.log(name, job_id)
    submitted = {
        ln.split(" file=")[1]: ln.split("job=")[1].split()[0]
        for ln in log.splitlines()
        if ln.startswith("SLURMKIT_CRON submitted")
    }
    assert set(submitted) == {"a.slurm", "b c.slurm"}
    assert "SLURMKIT_CRON skipped reason=scheduler file=sched.slurm" in log
    for file, child_id in submitted.items():
        child_name = child_names[0] if file == "a.slurm" else child_names[1]
        assert wait_final(child_id, child_name) == "COMPLETED"
        child_log = (folder / f"{child_name}-{child_id}.out").read_text()
        assert f"{child_name} ran in {folder}" in child_log
    state = dict(
        line.split("=", 1) for line in (folder / ".slurmkit-last-run").read_text().splitlines()
    )
    assert (state["job"], state["submitted"], state["failed"]) == (job_id, "2", "0")
    assert len(pending(name)) == 1  # the next run, an hour from now


def test_cron_scheduler_with_a_missing_folder_submits_nothing_and_fails(
    templates: Templates,
) -> None:
    job_id, name = templates.submit(
        "cron-scheduler",
        "period=1h",
        f"folder={templates.root / 'missing'}",
        name_param="chain_name",
    )
    assert wait_final(job_id, name) == "FAILED"
    log = templates.log(name, job_id)
    assert "does not exist" in log and "SLURMKIT_CRON" not in log
    assert len(pending(name)) == 1  # the chain goes on: creating the folder repairs it


# ---------------------------------------------------------------- checks


def test_faulty_node_check_skips_gpu_checks_and_completes(templates: Templates) -> None:
    # disk_min_gb=1, not 10: the nodes' /tmp is this machine's, whose free space varies
    job_id, name = templates.submit(
        "faulty-node-check", *SMALL_GPU, "nodes=2", "time=5", "disk_min_gb=1"
    )
    assert wait_final(job_id, name) == "COMPLETED", templates.log(name, job_id)
    results = parse_check_lines(templates.log(name, job_id))
    nodes = job_nodes(job_id, name)
    assert {r.node for r in results} == set(nodes)
    for node in nodes:
        mine = {r.check: r.status for r in results if r.node == node}
        assert mine == {
            "python": "pass",
            "cuda": "skipped",
            "gpu-count": "skipped",
            "gpu-mem": "skipped",
            "nccl": "skipped",
            "disk": "pass",
        }


def test_faulty_node_check_names_exactly_the_failing_node(templates: Templates) -> None:
    job_id, name = templates.submit(
        "faulty-node-check",
        *SMALL_GPU,
        "nodes=2",
        "time=10",  # > signal_time (300 s): no graceful-exit signal at the first check
        'checks=python,gpu-count,cmd:test "$SLURM_PROCID" != 1',
    )
    assert wait_final(job_id, name) == "FAILED"
    results = parse_check_lines(templates.log(name, job_id))
    cmd = [r for r in results if r.check.startswith("cmd:")]
    assert sorted(r.status for r in cmd) == ["fail", "pass"]
    (bad,) = [r.node for r in cmd if r.status == "fail"]
    assert bad == job_nodes(job_id, name)[1]
    assert not [r for r in results if r.check in GPU_CHECKS and r.status == "pass"]


@pytest.mark.parametrize(
    ("template", "check", "sets"),
    [
        ("gpu-memory-test", "gpu-mem", ("nodes=2", "gb=1")),
        ("nccl-barrier-test", "nccl", ("nodes=2", "nccl_debug=INFO")),
        ("dcgmi-diag", "dcgmi", ("nodes=2", "level=1", "exclusive=false")),
    ],
)
def test_gpu_tests_complete_and_say_skipped(
    templates: Templates, template: str, check: str, sets: tuple[str, ...]
) -> None:
    job_id, name = templates.submit(template, *SMALL_GPU, "time=10", *sets)
    assert wait_final(job_id, name) == "COMPLETED", templates.log(name, job_id)
    results = parse_check_lines(templates.log(name, job_id))
    assert sorted(r.node for r in results) == sorted(job_nodes(job_id, name))
    assert {(r.check, r.status) for r in results} == {(check, "skipped")}


def test_cpus_per_task_test_shows_what_srun_gives(templates: Templates) -> None:
    job_id, name = templates.submit(
        "cpus-per-task-test", "nodes=1", "ntasks_per_node=2", "cpus_per_task=3", "time=5"
    )
    assert wait_final(job_id, name) == "COMPLETED", templates.log(name, job_id)
    log = templates.log(name, job_id)
    modes = {line["mode"] for line in parse_cpus_lines(log)}
    assert modes == {"batch", "srun", "srun-exact", "srun-cpus-per-task", "srun-env"}
    verdict = parse_cpus_verdict(log)
    assert verdict is not None
    version = query.version()
    assert verdict["slurm"].startswith(f"{version.major}.{version.minor:02d}")
    assert verdict["requested"] == "3" and verdict["srun_cpus_per_task"] == "3"
    if (22, 5) <= (version.major, version.minor) < (23, 11):  # the sandbox: Debian's 22.05.8
        assert (verdict["srun"], verdict["srun_env"]) == ("1", "3")
        assert (verdict["inherits"], verdict["affected"]) == ("no", "yes")
        assert "Fix: srun --cpus-per-task=$SLURM_CPUS_PER_TASK" in log
    else:
        assert (verdict["inherits"], verdict["affected"]) == ("yes", "no")
