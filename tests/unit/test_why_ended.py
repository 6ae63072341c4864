"""``why`` on real recorded accounting (tests/fixtures/why/, SOURCES.md): the ended
verdicts, and the efficiency cases the peers get wrong (issue 31), each on the job that
shows it: a 4-task srun step over 2 nodes, a TIMEOUT job, an array, a job over its --mem."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from slurmkit.slurm import accounting
from slurmkit.slurm.parse_text import DELIMITER
from slurmkit.why import arrays, efficiency, ended
from tests.fakes import FakeSlurm

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "why"
# The jobs of the 22.05 recording (SOURCES.md says what each one ran).
BURN, MPI, OVERMEM, TIMEOUT, SEGV, EXIT3, CANCELLED, REQUEUED, PREEMPTED, ARRAY, NODEFAIL = (
    "13", "14", "15", "16", "17", "18", "19", "20", "21", "22", "23"
)  # fmt: skip


def recorded(version: str, name: str) -> tuple[str, dict]:
    folder = FIXTURES / f"slurm-{version}"
    index = json.loads((folder / "index.json").read_text())
    return (folder / name).read_text(), index


def steps_2205() -> list[accounting.Step]:
    text, index = recorded("22.05", "sacct.txt")
    return accounting.parse_steps(text, index["_delimiter"])


def history(job: str) -> list[ended.Attempt]:
    return ended.attempts([s for s in steps_2205() if s.task_key == job])[job]


def verdict_of(job: str, **context: object) -> ended.Verdict:  # type: ignore[name-defined]
    return ended.verdict(job, history(job), ended.Context(**context))  # type: ignore[arg-type]


# ---------------------------------------------------------------- the peers' known mistakes


def test_a_multi_task_srun_step_counts_every_task_memory_not_one() -> None:
    """reportseff #41 and seff's one task per node: MaxRSS is one task's peak (63 MB);
    the 4-task step held 4 of them (252 MB) against 400 MB asked (100 MB per CPU)."""
    eff = efficiency.of_attempt(history(MPI)[-1].allocation, history(MPI)[-1].steps)
    (step,) = [s for s in eff.steps if s.step == f"{MPI}.0"]
    assert step.tasks == 4 and step.peak_task is not None
    assert step.memory is not None and step.memory > 3.9 * step.peak_task
    assert eff.memory_request == 400 * 2**20
    assert eff.memory_used == step.memory
    assert eff.memory_share is not None and 0.6 < eff.memory_share < 0.66


def test_cpu_of_an_srun_step_is_counted_with_the_batch_step() -> None:
    """reportseff #37: MPI CPU time lives in the srun step, not the batch shell (0.0 s)."""
    eff = efficiency.of_attempt(history(MPI)[-1].allocation, history(MPI)[-1].steps)
    batch = next(s for s in eff.steps if s.step.endswith(".batch"))
    assert batch.cpu_seconds is not None and batch.cpu_seconds < 0.1
    assert eff.cpu_seconds is not None and eff.cpu_seconds > 3.0
    assert eff.cpu_share == pytest.approx(eff.cpu_seconds / (8 * 4))


def test_a_timeout_job_keeps_the_memory_of_its_cancelled_steps() -> None:
    """reportseff #58: 0% memory for TIMEOUT jobs (its steps end CANCELLED)."""
    (attempt,) = history(TIMEOUT)
    assert attempt.allocation.state == "TIMEOUT"
    assert {s.state for s in attempt.steps} == {"CANCELLED"}
    eff = efficiency.of_attempt(attempt.allocation, attempt.steps)
    assert eff.memory_used is not None and eff.memory_used > 4 * 2**20


def test_steps_are_compared_not_summed() -> None:
    """reportseff #16 (182.8% where seff said 24%): the batch step and the srun step are
    not added up; the largest one is the job's peak."""
    attempt = history(MPI)[-1]
    eff = efficiency.of_attempt(attempt.allocation, attempt.steps)
    uses = [s.memory for s in eff.steps if s.memory]
    assert len(uses) == 2 and eff.memory_used == max(uses) < sum(uses)


def test_array_tasks_keep_their_units() -> None:
    """seff-array #24 (1228% of 409.6 MB): each task's 35 MB against its own 50M."""
    tasks = ended.attempts([s for s in steps_2205() if s.task_key.startswith(f"{ARRAY}_")])
    assert len(tasks) == 5
    for key, attempts_ in tasks.items():
        eff = efficiency.of_attempt(attempts_[-1].allocation, attempts_[-1].steps)
        assert eff.memory_request == 50 * 2**20, key
        assert eff.memory_share is not None and 0.6 < eff.memory_share < 0.75, key


def test_a_job_over_its_memory_request_is_flagged() -> None:
    """Without cgroups the sandbox does not enforce --mem: 315 MB against 100M asked."""
    v = verdict_of(OVERMEM)
    assert v.severity == "warning"
    assert "3.1x the 100.0M asked" in v.headline


def test_an_idle_multi_cpu_job_is_waste_in_one_line() -> None:
    v = verdict_of(PREEMPTED)
    assert "asked 8 CPUs, used 0.0" in v.headline


# ---------------------------------------------------------------- verdicts per state


def test_timeout_names_the_limit_and_the_signal_asked() -> None:
    v = verdict_of(TIMEOUT)
    assert v.headline.startswith(f"job {TIMEOUT} hit its time limit (1:00)")
    (limit,) = [e for e in v.evidence if e.label == "limit"]
    assert "--signal warning was asked" in limit.text
    assert v.severity == "bad" and v.advice


def test_a_segfaulted_batch_shell_is_signal_11() -> None:
    v = verdict_of(SEGV)
    assert "killed by signal 11 (SIGSEGV" in v.headline


def test_a_nonzero_exit_names_the_step_and_the_code() -> None:
    v = verdict_of(EXIT3)
    assert v.headline == f"job {EXIT3} failed: step batch exit code 3"


def test_cancelled_by_another_user_names_both() -> None:
    v = verdict_of(CANCELLED, user_name=lambda uid: f"root (uid {uid})")
    assert (
        v.headline == f"job {CANCELLED} was cancelled by root (uid 0) (the job is slurmkit-test's)"
    )


def test_preempted() -> None:
    assert verdict_of(PREEMPTED).headline.startswith(
        f"job {PREEMPTED} was preempted (partition gpu"
    )


def test_a_requeued_job_counts_its_attempts() -> None:
    hist = history(REQUEUED)
    assert [a.allocation.state for a in hist] == ["REQUEUED", "RUNNING"]
    v = verdict_of(REQUEUED)
    assert v.kind == "running"
    assert any(e.label == "requeued" and "started 2 times" in e.text for e in v.evidence)


def test_node_fail_names_the_node_and_its_event() -> None:
    text, _ = recorded("22.05", "events.txt")
    events = accounting.parse_events(text)
    hist = [a for a in history(NODEFAIL) if a.allocation.state == "NODE_FAIL"]
    v = ended.verdict(NODEFAIL, hist, ended.Context(events=events))
    assert v.headline == f"job {NODEFAIL} ended NODE_FAIL: node node-3 stopped answering"
    assert any("node-3 DOWN*" in e.text and "Not responding" in e.text for e in v.evidence)


def test_array_summary_counts_states_and_folds_ids() -> None:
    tasks = ended.attempts([s for s in steps_2205() if s.task_key.startswith(f"{ARRAY}_")])
    v = arrays.summary(ARRAY, tasks)
    assert v.headline == f"array {ARRAY}: 5 tasks: 4 COMPLETED, 1 FAILED"
    assert dict(v.data["groups"]) == {"COMPLETED": "1-2,4-5", "FAILED (exit code 1)": "3"}


@pytest.mark.parametrize(
    ("code", "signal", "words"),
    [
        (0, 9, "killed by signal 9 (SIGKILL"),
        (137, 0, "exit code 137 = 128+9: a process died of SIGKILL"),
        (139, 0, "exit code 139 = 128+11: a process died of SIGSEGV"),
        (1, 0, "exit code 1"),
    ],
)
def test_exit_codes_and_signals_in_words(code: int, signal: int, words: str) -> None:
    assert ended.exit_text(code, signal).startswith(words)


# ---------------------------------------------------------------- O(1) Slurm calls


def array_sacct(tasks: int) -> str:
    """The recorded array's task 1 (its allocation and batch lines) repeated as ``tasks``
    tasks with their own ids, the separator swapped for this process's."""
    text, index = recorded("22.05", "sacct.txt")
    lines = [line.replace(index["_delimiter"], DELIMITER) for line in text.splitlines()]
    wanted = (f"{ARRAY}_1", f"{ARRAY}_1.batch")
    task1 = [ln for ln in lines if DELIMITER in ln and ln.split(DELIMITER)[1] in wanted]
    assert len(task1) == 2
    out = []
    for task in range(1, tasks + 1):
        for line in task1:
            _raw, display, rest = line.split(DELIMITER, 2)
            step = ".batch" if display.endswith(".batch") else ""
            out.append(DELIMITER.join([f"{100000 + task}{step}", f"{ARRAY}_{task}{step}", rest]))
    return "\n".join(out) + "\n"


def allocation_lines(text: str) -> str:
    """sacct ``text`` (why's full columns, steps included) as ``--allocations`` prints it."""
    names = [name for name, _ in accounting.WHY_SACCT_COLUMNS]
    keep = [names.index(name) for name, _ in accounting.ALLOCATION_COLUMNS]
    rows = [line.split(DELIMITER) for line in text.splitlines() if DELIMITER in line]
    return "".join(DELIMITER.join(r[i] for i in keep) + "\n" for r in rows if "." not in r[1])


def test_an_array_of_10000_tasks_is_two_saccts_and_one_summary(fake_slurm: FakeSlurm) -> None:
    """The tasks' allocations in one sacct, the steps of 200 of them in another: slurmdbd
    reads steps with one database query per job (2.6-3.1 s for 10,000 tasks live, 0.3-0.4 s so)."""
    from slurmkit.why.explain import USAGE_SAMPLE, explain

    text = array_sacct(10_000)
    fake_slurm.on(["sacct", "**"], text)
    fake_slurm.on(["sacct", "**", "--allocations", "**"], allocation_lines(text))
    v = explain(ARRAY)
    assert v.headline == f"array {ARRAY}: 10000 tasks: 10000 COMPLETED"
    first, second = fake_slurm.calls
    assert first[0] == second[0] == "sacct"
    assert "--allocations" in first and first[-1] == f"--jobs={ARRAY}"
    assert "--allocations" not in second
    sampled = second[-1].removeprefix("--jobs=").split(",")
    assert len(sampled) == USAGE_SAMPLE and sampled[:2] == [f"{ARRAY}_1", f"{ARRAY}_51"]
    assert any("over 200 of the 10000 tasks that ran" in e.text for e in v.evidence)
    assert "--starttime=2000-01-01T00:00:00" in first and "--duplicates" in first


def test_a_pending_remainder_counts_every_task_of_its_range() -> None:
    """sacct prints an array's tasks not yet started as one line, ``22_[6-9999%64]``."""
    steps = [s for s in steps_2205() if s.task_key.startswith(f"{ARRAY}_")]
    rest = replace(steps[0], display_id=f"{ARRAY}_[6-9999%64]", state="PENDING", start_text="")
    v = arrays.summary(ARRAY, ended.attempts([*steps, rest]))
    assert v.headline == f"array {ARRAY}: 9999 tasks: 9994 PENDING, 4 COMPLETED, 1 FAILED"
    assert v.data["counts"] == {"PENDING": 9994, "COMPLETED": 4, "FAILED (exit code 1)": 1}


def test_gpu_use_is_shown_where_accounting_records_it() -> None:
    """gres/gpumem and gres/gpuutil (AccountingStorageTRES with NVML); the sandbox has none,
    so this one step's figures are written here: the rest of its line is the recording's."""
    step = next(s for s in steps_2205() if s.display_id == f"{MPI}.0")
    gpu = replace(step, usage_max_text=step.usage_max_text + ",gres/gpumem=2G,gres/gpuutil=87")
    use = efficiency.step_use(gpu)
    assert use.gpu_memory == 2 << 30 and use.gpu_util == 87.0
    assert (
        "GPU util 87%, GPU memory 2.0G"
        in efficiency.summary_lines(efficiency.of_attempt(history(MPI)[-1].allocation, [gpu]))[-1]
    )
