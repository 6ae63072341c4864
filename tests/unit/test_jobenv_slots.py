"""Allocation and slots: the documented order, the source named, Slurm asked only when needed.

Environments are the ones the sandbox's Slurm 22.05.8 exported (recorded by
running ``env`` in real jobs) plus the variables it did not set here but
documents (``SLURM_JOB_GPUS``, ``SLURM_STEP_GPUS``). ``scontrol show job -d``
answers come from the recorded fixtures, faked at the argv seam.
"""

from __future__ import annotations

import pytest
from fixtures_path import read

from slurmkit.errors import NotFound, SlurmkitError, UsageError
from slurmkit.jobenv import allocation, slots
from slurmkit.jobenv.allocation import Allocation
from tests.fakes import FakeSlurm

RUNNING_GPU = read("22.05", "03_jobs", "scontrol_show_job_d_running_gpu_2node.txt")  # job 3
COMPLETED = read("22.05", "03_jobs", "scontrol_show_job_d_completed.txt")  # job 1
PENDING = read("22.05", "03_jobs", "scontrol_show_job_d_pending_resources.txt")  # job 10
RUNNING_GPU_2411 = read("24.11", "03_jobs", "scontrol_show_job_d_running_gpu_2node.txt")

# The batch step of `sbatch -N2 --gres=gpu:2` on the sandbox (no SLURM_JOB_GPUS there).
GRES2 = {
    "SLURM_JOB_ID": "87",
    "SLURM_JOBID": "87",
    "SLURM_JOB_NODELIST": "node-[1-2]",
    "SLURM_NNODES": "2",
    "SLURM_JOB_NUM_NODES": "2",
    "SLURM_GPUS_ON_NODE": "2",
    "SLURM_JOB_CPUS_PER_NODE": "1(x2)",
    "SLURM_TASKS_PER_NODE": "1(x2)",
    "SLURMD_NODENAME": "node-1",
    "SLURM_NODEID": "0",
}
# `sbatch -N2 -n3` (no GPUs): heterogeneous tasks and CPUs.
N2N3 = {
    "SLURM_JOB_ID": "89",
    "SLURM_JOB_NODELIST": "node-[1-2]",
    "SLURM_NNODES": "2",
    "SLURM_JOB_CPUS_PER_NODE": "1,2",
    "SLURM_TASKS_PER_NODE": "1,2",
    "SLURM_NTASKS": "3",
}
# `sbatch -N2 --gpus=5`: the batch node saw 4 GPUs, the other 1.
GPUS5 = {
    "SLURM_JOB_ID": "3",
    "SLURM_JOB_NODELIST": "node-[1-2]",
    "SLURM_GPUS": "5",
    "SLURM_GPUS_ON_NODE": "4",
    "SLURM_TASKS_PER_NODE": "1(x2)",
}


@pytest.fixture
def slurm(fake_slurm: FakeSlurm) -> FakeSlurm:
    return fake_slurm


def job(slurm: FakeSlurm, job_id: str, text: str = "", rc: int = 0, stderr: str = "") -> None:
    """``scontrol --details show job JOB_ID`` answers ``text`` (or fails with ``stderr``)."""
    slurm.on(["scontrol", "--details", "show", "job", job_id], text, rc=rc, stderr=stderr)


def _env_alloc(env: dict[str, str]) -> Allocation:
    return allocation.resolve(env)


def _outside(slurm: FakeSlurm, text: str, job_id: str = "3") -> Allocation:
    job(slurm, job_id, text)
    return allocation.resolve({}, jobid=job_id)


# ---------------------------------------------------------------- allocation


def test_no_job_and_no_option_explains_usage() -> None:
    with pytest.raises(UsageError, match=r"run inside a job .* or give --jobid ID or --nodelist"):
        allocation.resolve({})
    with pytest.raises(UsageError, match="--jobid"):
        allocation.resolve({"SLURM_JOB_ID": "5"})  # no node list: not a usable job environment


def test_jobid_and_nodelist_exclude_each_other() -> None:
    with pytest.raises(UsageError, match="not both"):
        allocation.resolve({}, jobid="3", nodelist=["n1"])


def test_environment_keeps_slurm_order(slurm: FakeSlurm) -> None:
    env = {"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "node-[42,49-51],gpu1,rack[1-2]-n[1-2]"}
    alloc = allocation.resolve(env)
    assert alloc.hosts == (
        "node-42",
        "node-49",
        "node-50",
        "node-51",
        "gpu1",
        "rack1-n1",
        "rack1-n2",
        "rack2-n1",
        "rack2-n2",
    )
    assert alloc.first == "node-42"
    assert alloc.origin == "SLURM_JOB_NODELIST"
    assert slurm.calls == []


def test_own_jobid_reads_the_environment(slurm: FakeSlurm) -> None:
    env = {**GRES2, "SLURM_ARRAY_JOB_ID": "80", "SLURM_ARRAY_TASK_ID": "3"}
    assert allocation.resolve(env, jobid="87").env is env
    assert allocation.resolve(env, jobid="80_3").env is env
    assert slurm.calls == []


def test_other_jobid_asks_slurm_even_inside_a_job(slurm: FakeSlurm) -> None:
    job(slurm, "3", RUNNING_GPU)
    alloc = allocation.resolve(GRES2, jobid="3")
    assert alloc.env is None and alloc.job is not None
    assert alloc.hosts == ("node-1", "node-2")
    assert alloc.origin == "scontrol show job"
    assert slurm.calls == [("scontrol", "--details", "show", "job", "3")]


def test_pending_and_ended_jobs_have_no_allocation(slurm: FakeSlurm) -> None:
    job(slurm, "10", PENDING)
    with pytest.raises(SlurmkitError, match=r"job 10 has no nodes allocated yet \(state PENDING"):
        allocation.resolve({}, jobid="10")
    job(slurm, "1", COMPLETED)
    with pytest.raises(SlurmkitError, match=r"job 1 has ended \(COMPLETED\)"):
        allocation.resolve({}, jobid="1")


def test_unknown_job(slurm: FakeSlurm) -> None:
    job(slurm, "999", rc=1, stderr="slurm_load_jobs error: Invalid job id specified\n")
    with pytest.raises(NotFound, match="unknown job 999"):
        allocation.resolve({}, jobid="999")


def test_step_uses_the_step_nodes() -> None:
    env = {**GRES2, "SLURM_STEP_ID": "0", "SLURM_STEP_NODELIST": "node-2"}
    assert allocation.resolve(env).hosts == ("node-1", "node-2")
    stepped = allocation.resolve(env, step=True)
    assert stepped.hosts == ("node-2",) and stepped.origin == "SLURM_STEP_NODELIST"
    assert stepped.in_step


# ---------------------------------------------------------------- slots: options


@pytest.mark.parametrize(("text", "wanted"), [("auto", "auto"), ("AUTO", "auto"), ("4", 4)])
def test_parse_wanted(text: str, wanted: object) -> None:
    assert slots.parse_wanted(text) == wanted


@pytest.mark.parametrize("text", ["0", "-1", "x", "1.5", ""])
def test_parse_wanted_refuses(text: str) -> None:
    with pytest.raises(UsageError, match="--slots"):
        slots.parse_wanted(text)


def test_explicit_slots_win_without_asking(slurm: FakeSlurm) -> None:
    found = slots.resolve_slots(_env_alloc(GPUS5), 3)
    assert found.per_host == (3, 3)
    assert found.source == "--slots 3"
    assert slurm.calls == []


def test_documented_order() -> None:
    assert list(slots.sources_in_order()) == [
        "SLURM_GPUS_ON_NODE",
        "SLURM_STEP_GPUS / SLURM_JOB_GPUS",
        "SLURM_GPUS_PER_NODE",
        "the job's GPU GRES",
        "SLURM_NTASKS_PER_NODE",
        "SLURM_TASKS_PER_NODE",
        "the job's task layout",
    ]


# ---------------------------------------------------------------- slots: inside the job


def test_gpus_on_node(slurm: FakeSlurm) -> None:
    found = slots.resolve_slots(_env_alloc(GRES2))
    assert found.per_host == (2, 2)
    assert found.kind == "gpus"
    assert found.source.startswith("SLURM_GPUS_ON_NODE=2")
    assert slurm.calls == []


def test_gpu_ids_count_not_max(slurm: FakeSlurm) -> None:
    env = {"SLURM_JOB_ID": "5", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_GPUS": "2,3"}
    found = slots.resolve_slots(_env_alloc(env))
    assert found.per_host == (2, 2)
    assert "SLURM_JOB_GPUS=2,3" in found.source
    step = {**env, "SLURM_STEP_GPUS": "4-7"}
    assert slots.resolve_slots(_env_alloc(step)).source.startswith("SLURM_STEP_GPUS=4-7")
    assert slots.resolve_slots(_env_alloc(step)).per_host == (4, 4)


def test_typed_gpus_per_node(slurm: FakeSlurm) -> None:
    env = {"SLURM_JOB_ID": "5", "SLURM_JOB_NODELIST": "n[1-3]", "SLURM_GPUS_PER_NODE": "a100:4"}
    found = slots.resolve_slots(_env_alloc(env))
    assert found.per_host == (4, 4, 4)
    assert found.source == "SLURM_GPUS_PER_NODE=a100:4"


def test_gpus_per_job_are_asked_per_node(slurm: FakeSlurm) -> None:
    """--gpus=5 on two nodes: SLURM_GPUS_ON_NODE=4 is the batch node's; Slurm says 4 and 1."""
    detail = "     Nodes=node-1 CPU_IDs=0-1 Mem=0 GRES=gpu:4(IDX:0-3)\n"
    detail += "     Nodes=node-2 CPU_IDs=0-1 Mem=0 GRES=gpu:1(IDX:0)\n"
    job(
        slurm,
        "3",
        RUNNING_GPU.replace(
            "     Nodes=node-[1-2] CPU_IDs=0-3 Mem=0 GRES=gpu:4(IDX:0-3)\n", detail
        ),
    )
    found = slots.resolve_slots(_env_alloc(GPUS5))
    assert found.per_host == (4, 1)
    assert found.uniform is None and found.total == 5
    assert found.source.startswith("scontrol show job -d: GPUs per node")
    assert any("SLURM_GPUS=5" in note for note in found.skipped)
    assert len(slurm.calls) == 1


@pytest.mark.parametrize("marker", ["SLURM_GPUS_PER_TASK", "SLURM_GPUS_PER_SOCKET"])
def test_other_per_job_requests_also_ask(slurm: FakeSlurm, marker: str) -> None:
    job(slurm, "3", RUNNING_GPU)
    env = {**GPUS5, marker: "1"}
    del env["SLURM_GPUS"]
    found = slots.resolve_slots(_env_alloc(env))
    assert found.per_host == (4, 4)
    assert any(marker in note for note in found.skipped)


def test_one_node_or_per_node_request_trusts_this_node(slurm: FakeSlurm) -> None:
    one = {**GPUS5, "SLURM_JOB_NODELIST": "node-1"}
    assert slots.resolve_slots(_env_alloc(one)).per_host == (4,)
    per_node = {**GPUS5, "SLURM_GPUS_PER_NODE": "4"}
    assert slots.resolve_slots(_env_alloc(per_node)).per_host == (4, 4)
    assert slurm.calls == []


def test_no_gpu_variables_skip_the_rpc_and_use_tasks(slurm: FakeSlurm) -> None:
    found = slots.resolve_slots(_env_alloc(N2N3))
    assert found.per_host == (1, 2)
    assert found.kind == "tasks"
    assert found.source == "SLURM_TASKS_PER_NODE=1,2 (tasks per node)"
    assert any("no GPU variable" in note for note in found.skipped)
    assert slurm.calls == []


def test_ntasks_per_node_before_tasks_per_node() -> None:
    env = {**N2N3, "SLURM_NTASKS_PER_NODE": "3", "SLURM_TASKS_PER_NODE": "3(x2)"}
    found = slots.resolve_slots(_env_alloc(env))
    assert (found.per_host, found.source) == ((3, 3), "SLURM_NTASKS_PER_NODE=3")


def test_heterogeneous_tasks_of_man_page() -> None:
    env = {"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "n[1-4]", "SLURM_TASKS_PER_NODE": "2(x3),1"}
    assert slots.resolve_slots(_env_alloc(env)).per_host == (2, 2, 2, 1)


def test_list_for_other_nodes_stops_never_one_slot_per_node() -> None:
    """Issue 28: falling back to 1 slot per node (exit 0) started the wrong process count."""
    env = {**N2N3, "SLURM_TASKS_PER_NODE": "3"}  # a one-node step's value in a two-node job
    with pytest.raises(UsageError, match=r"SLURM_TASKS_PER_NODE: '3' describes 1 nodes.*--slots N"):
        slots.resolve_slots(_env_alloc(env))
    assert slots.resolve_slots(_env_alloc(env), 2).per_host == (2, 2)  # what it asks for


@pytest.mark.parametrize(
    ("value", "note"), [("abc", "not a GPU count"), ("0", "no GPUs on this node")]
)
def test_bad_or_zero_gpus_on_node_fall_through(value: str, note: str) -> None:
    env = {**GRES2, "SLURM_GPUS_ON_NODE": value, "SLURM_GPUS_PER_NODE": "2"}
    found = slots.resolve_slots(_env_alloc(env))
    assert found.source == "SLURM_GPUS_PER_NODE=2"
    assert any(note in n for n in found.skipped)


def test_cpus_kind_reads_job_cpus_per_node() -> None:
    env = {**N2N3, "SLURM_JOB_NODELIST": "n[1-3]", "SLURM_JOB_CPUS_PER_NODE": "8(x2),4"}
    found = slots.resolve_slots(_env_alloc(env), "cpus")
    assert found.per_host == (8, 8, 4)
    assert found.kind == "cpus"


def test_kind_without_answer_is_an_error() -> None:
    with pytest.raises(SlurmkitError, match="no gpus count per node is known for job 89"):
        slots.resolve_slots(_env_alloc(N2N3), "gpus")


def test_tasks_kind_skips_gpus() -> None:
    found = slots.resolve_slots(_env_alloc(GRES2), "tasks")
    assert found.per_host == (1, 1) and found.kind == "tasks"


# ---------------------------------------------------------------- slots: from outside


@pytest.mark.parametrize("text", [RUNNING_GPU, RUNNING_GPU_2411])
def test_outside_reads_gres_detail(slurm: FakeSlurm, text: str) -> None:
    found = slots.resolve_slots(_outside(slurm, text))
    assert found.per_host == (4, 4)
    assert found.source == "scontrol show job -d: GPUs per node (node-[1-2]: gpu:4(IDX:0-3))"
    assert len(slurm.calls) == 1  # the record fetched for the node list is reused


def test_outside_typed_gres(slurm: FakeSlurm) -> None:
    typed = RUNNING_GPU.replace("GRES=gpu:4(IDX:0-3)", "GRES=gpu:h100:4(IDX:0-3)")
    assert slots.resolve_slots(_outside(slurm, typed)).per_host == (4, 4)


def test_outside_detail_is_matched_by_node_name(slurm: FakeSlurm) -> None:
    detail = "     Nodes=node-2 CPU_IDs=2-3 Mem=0 GRES=gpu:2(IDX:1-2)\n"
    detail += "     Nodes=node-1 CPU_IDs=4-5 Mem=0 GRES=gpu:1(IDX:1)\n"
    text = RUNNING_GPU.replace(
        "     Nodes=node-[1-2] CPU_IDs=0-3 Mem=0 GRES=gpu:4(IDX:0-3)\n", detail
    )
    assert slots.resolve_slots(_outside(slurm, text)).per_host == (1, 2)


def test_outside_tres_per_node_when_no_detail(slurm: FakeSlurm) -> None:
    text = RUNNING_GPU.replace(
        "     Nodes=node-[1-2] CPU_IDs=0-3 Mem=0 GRES=gpu:4(IDX:0-3)\n", ""
    ).replace("TresPerNode=gres:gpu:4", "TresPerNode=gres:gpu:a100:2")
    found = slots.resolve_slots(_outside(slurm, text))
    assert found.per_host == (2, 2)
    assert found.source == "scontrol show job: TresPerNode=gpu:a100:2"


def test_gpus_missing_on_a_node_is_an_error(slurm: FakeSlurm) -> None:
    detail = "     Nodes=node-1 CPU_IDs=0 Mem=0 GRES=gpu:1(IDX:0)\n"
    detail += "     Nodes=node-2 CPU_IDs=0 Mem=0 GRES=\n"
    text = RUNNING_GPU.replace(
        "     Nodes=node-[1-2] CPU_IDs=0-3 Mem=0 GRES=gpu:4(IDX:0-3)\n", detail
    )
    with pytest.raises(SlurmkitError, match=r"no GPUs on node-2.*--slots N"):
        slots.resolve_slots(_outside(slurm, text))


def _cpu_job(tasks: int, per_node: int = 0) -> str:
    return (
        COMPLETED.replace("JobState=COMPLETED", "JobState=RUNNING")
        .replace("NumTasks=2", f"NumTasks={tasks}")
        .replace("NtasksPerN:B:S:C=0:", f"NtasksPerN:B:S:C={per_node}:")
    )


def test_outside_cpu_job_tasks(slurm: FakeSlurm) -> None:
    found = slots.resolve_slots(_outside(slurm, _cpu_job(2), "1"))
    assert (found.per_host, found.kind) == ((1, 1), "tasks")
    assert "NumTasks=2 on 2 nodes" in found.source
    found = slots.resolve_slots(_outside(slurm, _cpu_job(6, 3), "1"))
    assert found.per_host == (3, 3) and "--ntasks-per-node=3" in found.source


def test_outside_uneven_tasks_fall_back_to_one_and_say_so(slurm: FakeSlurm) -> None:
    found = slots.resolve_slots(_outside(slurm, _cpu_job(3), "1"))
    assert found.per_host == (1, 1) and found.kind == "default"
    assert any("3 tasks on 2 nodes, split unknown" in note for note in found.skipped)


def test_outside_cpus_are_unknown(slurm: FakeSlurm) -> None:
    with pytest.raises(SlurmkitError, match="outside the job only GPUs and tasks are known"):
        slots.resolve_slots(_outside(slurm, _cpu_job(2), "1"), "cpus")


def test_nodelist_gets_one_slot_without_slurm(slurm: FakeSlurm) -> None:
    found = slots.resolve_slots(allocation.resolve(GRES2, nodelist=["a1", "a2", "a3"]))
    assert found.per_host == (1, 1, 1) and found.kind == "default"
    assert slurm.calls == []


def test_describe_names_source_and_skips() -> None:
    text = slots.resolve_slots(_env_alloc(N2N3)).describe()
    assert text.splitlines()[0] == "slots from SLURM_TASKS_PER_NODE=1,2 (tasks per node)"
    assert text.splitlines()[1].startswith("  skipped: job GRES")
