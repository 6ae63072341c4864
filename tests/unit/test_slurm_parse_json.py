"""JSON parsers against recorded 22.05/24.11 output, plus synthetic 26.05-shaped documents.

No 26.05 cluster was recorded: the synthetic documents below use the shapes
24.11 introduced and 26.05 keeps (state lists, ``{"set","infinite","number"}``
numbers, ``sinfo`` node groups, ``meta.slurm`` with string versions).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from fixtures_path import (
    JOB_SCENARIOS,
    NODE_STATES,
    REASONS,
    VERSIONS,
    all_cases,
    degraded,
    entry,
    read,
    scenario_jobs,
    stderr,
)

from slurmkit.errors import SlurmError, SlurmParseError
from slurmkit.slurm import parse_json as pj
from slurmkit.slurm import parse_text as pt
from slurmkit.slurm.records import SlurmVersion

UTC = timezone.utc
ROLES = (
    "array",
    "begin_later",
    "completed",
    "dependency",
    "failed",
    "held_admin",
    "held_user",
    "pending_resources",
    "running_gpu_2node",
)


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The text side of the cross-checks reads local time; the recordings are UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def text_nodes(version: str, scenario: str) -> dict:
    nodes = pt.parse_scontrol_nodes(read(version, scenario, "scontrol_show_node_oneliner.txt"))
    return {n.name: n for n in nodes}


def text_jobs(version: str, scenario: str) -> dict:
    jobs = pt.parse_scontrol_jobs(read(version, scenario, "scontrol_show_job_all_d.txt"))
    return {j.job_id: j for j in jobs}


# ---------------------------------------------------------------- nodes


@pytest.mark.parametrize(("version", "scenario"), all_cases())
def test_sinfo_json_node_states_and_reasons(version: str, scenario: str) -> None:
    nodes = {n.name: n for n in pj.parse_sinfo_json(read(version, scenario, "sinfo_json.txt"))}
    assert {name: n.state_text for name, n in nodes.items()} == NODE_STATES[scenario]
    for name, node in nodes.items():
        assert node.reason == (REASONS.get(name) if degraded(scenario) else None)
        assert node.partitions == (("cpu",) if name == "node-4" else ("gpu",))
        assert (node.cpus, node.real_memory, node.gres) == (8, 1000, "gpu:4")


@pytest.mark.parametrize(("version", "scenario"), all_cases())
def test_sinfo_json_agrees_with_scontrol_text(version: str, scenario: str) -> None:
    """Reason author and time must not depend on which output was read."""
    text = text_nodes(version, scenario)
    for node in pj.parse_sinfo_json(read(version, scenario, "sinfo_json.txt")):
        other = text[node.name]
        assert (node.reason, node.reason_user, node.reason_time) == (
            other.reason,
            other.reason_user,
            other.reason_time,
        )
        assert node.is_drained == other.is_drained and node.is_draining == other.is_draining


def test_sinfo_json_shapes_differ_between_versions() -> None:
    old = json.loads(read("22.05", "05_node_not_responding", "sinfo_json.txt"))
    new = json.loads(read("24.11", "05_node_not_responding", "sinfo_json.txt"))
    assert "nodes" in old and "sinfo" not in old
    assert old["nodes"][1]["state"] == "mixed" and old["nodes"][1]["state_flags"] == ["DRAIN"]
    assert "sinfo" in new and new["sinfo"][1]["node"]["state"] == ["MIXED", "DRAIN"]


def test_grouped_sinfo_json_keeps_per_node_counters_only_when_exact() -> None:
    """24.11 puts idle node-[1-3] in one group: their CPU count is known, their usage is not."""
    nodes = {n.name: n for n in pj.parse_sinfo_json(read("24.11", "01_idle", "sinfo_json.txt"))}
    assert [nodes[f"node-{i}"].cpus for i in range(1, 5)] == [8, 8, 8, 8]
    assert [nodes[f"node-{i}"].cpus_alloc for i in range(1, 4)] == [None, None, None]
    assert nodes["node-4"].cpus_alloc == 0  # a group of one is exact


@pytest.mark.parametrize("scenario", ["01_idle", "02_nodes_degraded", "05_node_not_responding"])
def test_scontrol_show_node_json_is_24_11_only(scenario: str) -> None:
    (node,) = pj.parse_scontrol_nodes_json(
        read("24.11", scenario, "scontrol_show_node_json_node-2.txt")
    )
    assert node.name == "node-2" and node.state_text == NODE_STATES[scenario]["node-2"]
    assert entry("22.05", scenario, "scontrol_show_node_json_node-2.txt")["exit_code"] == 1
    assert "unrecognized option '--json'" in stderr(
        "22.05", scenario, "scontrol_show_node_json_node-2.txt"
    )
    with pytest.raises(SlurmParseError, match="not JSON"):
        pj.parse_scontrol_nodes_json(read("22.05", scenario, "scontrol_show_node_json_node-2.txt"))


def test_scontrol_node_json_matches_text_field_by_field() -> None:
    (node,) = pj.parse_scontrol_nodes_json(
        read("24.11", "05_node_not_responding", "scontrol_show_node_json_node-2.txt")
    )
    text = text_nodes("24.11", "05_node_not_responding")["node-2"]
    for field in ("state", "flags", "cpus", "cpus_alloc", "real_memory", "free_memory", "gres"):
        assert getattr(node, field) == getattr(text, field), field
    assert (node.reason_user, node.reason_time) == (
        "root",
        datetime(2026, 11, 21, 0, 6, 7, tzinfo=UTC),
    )
    assert node.cpu_load == text.cpu_load == 0.95


# ---------------------------------------------------------------- squeue / scontrol show job


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_squeue_json_agrees_with_scontrol_text(version: str, scenario: str) -> None:
    text = text_jobs(version, scenario)
    jobs = pj.parse_squeue_json(read(version, scenario, "squeue_json.txt"))
    assert jobs
    for job in jobs:
        other = text[job.job_id]
        assert (job.display_id, job.state, job.nodelist, job.held) == (
            other.display_id,
            other.state,
            other.nodelist,
            other.held,
        )
        assert (job.gres_per_node, job.num_nodes, job.reason) == (
            other.gres_per_node,
            other.num_nodes,
            other.reason,
        )
        assert job.num_cpus in (other.num_cpus, None)  # 22.05 nulls it for a cancelled array
        assert (job.submit_time, job.time_limit) == (other.submit_time, None)
        assert job.accrue_time == other.accrue_time
        assert (job.exit_code, job.exit_signal) == (other.exit_code, other.exit_signal)


def test_squeue_json_of_22_05_ignores_the_default_state_filter() -> None:
    """Finished jobs 1 and 2 appear in 22.05's JSON but not in its text or in 24.11's JSON."""
    ids = {
        v: {j.job_id for j in pj.parse_squeue_json(read(v, "03_jobs", "squeue_json.txt"))}
        for v in VERSIONS
    }
    assert {"1", "2"} <= ids["22.05"]
    assert not {"1", "2"} & ids["24.11"]


@pytest.mark.parametrize("version", VERSIONS)
def test_squeue_json_running_gpu_job(version: str) -> None:
    jobs = {
        j.job_id: j
        for j in pj.parse_squeue_json(read(version, "04_jobs_nodes_degraded", "squeue_json.txt"))
    }
    gpu = jobs["3"]
    assert (gpu.state, gpu.nodelist, gpu.gres_per_node) == ("RUNNING", "node-[1-2]", "gpu:4")
    assert [(d.nodes, d.gpu_indices) for d in gpu.gres_detail] == [
        ("node-1", "0-3"),
        ("node-2", "0-3"),
    ]
    assert gpu.end_time is None  # Slurm says start + 1 year for an unlimited job
    assert gpu.cpus_per_task == (None if version == "22.05" else 4)
    assert (jobs["5"].display_id, jobs["4"].display_id) == ("4_1", "4_[2-6%1]")
    assert jobs["6"].held and jobs["7"].held and jobs["6"].priority == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_squeue_json_exit_codes(version: str) -> None:
    jobs = {
        j.job_id: j for j in pj.parse_squeue_json(read(version, "06_cancelled", "squeue_json.txt"))
    }
    if version == "22.05":  # raw wait status 768 = exit 3, 15 = killed by SIGTERM
        assert (jobs["2"].exit_code, jobs["2"].exit_signal) == (3, 0)
        assert (jobs["3"].state, jobs["3"].exit_signal) == ("CANCELLED", 15)
    assert jobs["8"].reason == "DependencyNeverSatisfied"
    assert jobs["8"].dependency == "afterok:3(failed)"


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_scontrol_show_job_json(version: str, scenario: str) -> None:
    roles = scenario_jobs(version, scenario)
    for role in ROLES:
        name = f"scontrol_show_job_json_{role}.txt"
        if version == "22.05":
            assert entry(version, scenario, name)["exit_code"] == 1
            assert "unrecognized option '--json'" in stderr(version, scenario, name)
            with pytest.raises(SlurmParseError, match="not JSON"):
                pj.parse_scontrol_jobs_json(read(version, scenario, name))
            continue
        jobs = pj.parse_scontrol_jobs_json(read(version, scenario, name))
        assert roles[role] in {j.job_id for j in jobs}
        text = {
            j.job_id: j
            for j in pt.parse_scontrol_jobs(
                read(version, scenario, f"scontrol_show_job_d_{role}.txt")
            )
        }
        for job in jobs:
            assert (job.state, job.held, job.reason) == (
                text[job.job_id].state,
                text[job.job_id].held,
                text[job.job_id].reason,
            )


# ---------------------------------------------------------------- sacct


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_sacct_json(version: str, scenario: str) -> None:
    (done,) = pj.parse_sacct_json(read(version, scenario, "sacct_json_j_completed.txt"))
    (failed,) = pj.parse_sacct_json(read(version, scenario, "sacct_json_j_failed.txt"))
    (gpu,) = pj.parse_sacct_json(read(version, scenario, "sacct_json_j_running_gpu_2node.txt"))
    array = {
        j.display_id: j
        for j in pj.parse_sacct_json(read(version, scenario, "sacct_json_j_array.txt"))
    }
    assert (done.state, done.nodelist, done.num_nodes, done.time_used) == (
        "COMPLETED",
        "node-[1-2]",
        2,
        2,
    )
    assert failed.state == "FAILED"
    # 22.05's sacct --json loses the exit code (text sacct says 3:0): why query uses text.
    assert failed.exit_code == (0 if version == "22.05" else 3)
    assert (gpu.num_cpus, gpu.nodelist, gpu.time_limit) == (8, "node-[1-2]", None)
    assert gpu.state == ("CANCELLED" if scenario == "06_cancelled" else "RUNNING")
    assert set(array) == {"4_1", "4_[2-6%1]"}  # pending tasks decoded from the 0x7C bitmap
    assert array["4_1"].job_id == "5" and array["4_[2-6%1]"].start_time is None


@pytest.mark.parametrize("version", VERSIONS)
def test_sacct_json_without_jobs_is_empty_not_an_error(version: str) -> None:
    """22.05 reports "Nothing found" in ``errors`` for an empty result."""
    assert pj.parse_sacct_json(read(version, "01_idle", "sacct_json_nojobs.txt")) == []


@pytest.mark.parametrize(
    ("version", "expected"), [("22.05", SlurmVersion(22, 5, 8)), ("24.11", SlurmVersion(24, 11, 5))]
)
def test_json_meta_version(version: str, expected: SlurmVersion) -> None:
    assert pj.json_version(read(version, "03_jobs", "squeue_json.txt")) == expected
    assert pj.json_version(read(version, "03_jobs", "sacct_json_j_failed.txt")) == expected


# ---------------------------------------------------------------- malformed documents


def test_not_json_is_a_parse_error_naming_the_command() -> None:
    with pytest.raises(SlurmParseError, match=r"squeue --json: output is not JSON"):
        pj.parse_squeue_json("squeue: error: something\n")


def test_json_without_the_expected_list_is_a_parse_error() -> None:
    with pytest.raises(SlurmParseError, match=r"no 'jobs' list \(keys: \['meta'\]\)"):
        pj.parse_squeue_json('{"meta": {}}')
    with pytest.raises(SlurmParseError, match="JSON object"):
        pj.parse_sinfo_json("[]")
    with pytest.raises(SlurmParseError, match="without 'job_id'"):
        pj.parse_squeue_json('{"jobs": [{"name": "x"}]}')


def test_errors_inside_the_document_are_raised() -> None:
    doc = {
        "jobs": [],
        "errors": [{"description": "Invalid job id specified", "error_number": 2017}],
    }
    with pytest.raises(SlurmError, match="Invalid job id specified"):
        pj.parse_squeue_json(json.dumps(doc))


# ---------------------------------------------------------------- synthetic 26.05


def n(value: float, *, infinite: bool = False, set_: bool = True) -> dict:
    return {"set": set_, "infinite": infinite, "number": value}


META_26 = {"slurm": {"version": {"major": "26", "minor": "05", "micro": "1"}, "release": "26.05.1"}}


def test_synthetic_26_05_node_document() -> None:
    doc = {
        "nodes": [
            {
                "name": "gpu-01",
                "state": ["IDLE", "DRAIN", "POWERED_DOWN"],
                "cpus": 64,
                "alloc_cpus": 0,
                "real_memory": 512000,
                "free_mem": n(0, set_=False),
                "gres": "gpu:h100:8",
                "partitions": ["gpu", "debug"],
                "features": ["h100", "ib"],
                "reason": "fan failure",
                "reason_set_by_user": "alice",
                "reason_changed_at": n(1795219567),
                "boot_time": n(0),
            }
        ],
        "meta": META_26,
        "errors": [],
        "warnings": [],
    }
    (node,) = pj.parse_scontrol_nodes_json(json.dumps(doc))
    assert (node.state, node.flags) == ("IDLE", frozenset({"DRAIN", "POWERED_DOWN"}))
    assert node.is_drained and node.features == ("h100", "ib")
    assert node.free_memory is None and node.boot_time is None
    assert node.reason_time == datetime(2026, 11, 21, 0, 6, 7, tzinfo=UTC)
    assert pj.json_version(json.dumps(doc)) == SlurmVersion(26, 5, 1)


def test_synthetic_26_05_job_document() -> None:
    doc = {
        "jobs": [
            {
                "job_id": 42,
                "array_job_id": n(40),
                "array_task_id": n(2),
                "name": "train",
                "user_name": "bob",
                "job_state": ["RUNNING", "COMPLETING"],
                "state_reason": "None",
                "nodes": "gpu-[01-02]",
                "node_count": n(2),
                "cpus": n(16),
                "cpus_per_task": n(8),
                "tres_per_node": "gres/gpu:8",
                "submit_time": n(1795219500),
                "start_time": n(1795219567),
                "end_time": n(1795223167),
                "time_limit": n(60),
                "priority": n(1000),
                "hold": False,
                "exit_code": {
                    "status": ["SIGNALED"],
                    "return_code": n(0),
                    "signal": {"id": n(9), "name": "KILL"},
                },
            }
        ],
        "meta": META_26,
    }
    (job,) = pj.parse_squeue_json(json.dumps(doc))
    assert (job.display_id, job.state, job.state_flags) == (
        "40_2",
        "RUNNING",
        frozenset({"COMPLETING"}),
    )
    assert (job.time_limit, job.cpus_per_task, job.gres_per_node) == (3600, 8, "gpu:8")
    assert job.end_time == datetime(2026, 11, 21, 1, 6, 7, tzinfo=UTC)  # kept: the job has a limit
    assert (job.exit_code, job.exit_signal, job.reason) == (0, 9, None)


def test_synthetic_26_05_unlimited_and_unset_values() -> None:
    doc = {
        "jobs": [
            {
                "job_id": 7,
                "array_job_id": n(0),
                "array_task_id": n(0, set_=False),
                "job_state": ["PENDING"],
                "state_reason": "JobHeldUser",
                "time_limit": n(0, infinite=True),
                "start_time": n(0),
                "end_time": n(4294967294),
                "hold": True,
            }
        ]
    }
    (job,) = pj.parse_squeue_json(json.dumps(doc))
    assert (job.array_job_id, job.time_limit, job.start_time, job.end_time) == (
        None,
        None,
        None,
        None,
    )
    assert job.held and job.is_pending


def test_synthetic_26_05_sinfo_groups_merge_partitions() -> None:
    group = {
        "node": {"state": ["MIXED"]},
        "nodes": {"nodes": ["gpu-01"]},
        "cpus": {"allocated": 8, "minimum": 64, "maximum": 64, "load": {"maximum": 150}},
        "memory": {
            "minimum": 512000,
            "maximum": 512000,
            "allocated": 1000,
            "free": {"maximum": n(400000)},
        },
        "gres": {"total": "gpu:8", "used": "gpu:2"},
        "reason": {"description": "", "time": n(0), "user": ""},
    }
    doc = {
        "sinfo": [
            {**group, "partition": {"name": "gpu"}},
            {**group, "partition": {"name": "debug"}},
        ],
        "meta": META_26,
    }
    (node,) = pj.parse_sinfo_json(json.dumps(doc))
    assert node.partitions == ("gpu", "debug")
    assert (node.cpus, node.cpus_alloc, node.cpu_load, node.free_memory) == (64, 8, 1.5, 400000)
    assert node.reason is None and node.gres_used == "gpu:2"


def test_synthetic_26_05_sacct_document() -> None:
    doc = {
        "jobs": [
            {
                "job_id": 99,
                "name": "x",
                "user": "carol",
                "state": {"current": ["TIMEOUT"], "reason": "None"},
                "exit_code": {
                    "status": ["ERROR"],
                    "return_code": n(1),
                    "signal": {"id": n(0, set_=False)},
                },
                "nodes": "node-1",
                "array": {"job_id": 0, "task_id": n(0, set_=False), "task": ""},
                "time": {
                    "submission": 1795219500,
                    "start": 1795219567,
                    "end": 1795223167,
                    "elapsed": 3600,
                    "limit": n(60),
                },
                "tres": {"allocated": [{"type": "cpu", "count": 4}]},
            }
        ]
    }
    (job,) = pj.parse_sacct_json(json.dumps(doc))
    assert (job.state, job.exit_code, job.exit_signal) == ("TIMEOUT", 1, 0)
    assert (job.time_limit, job.time_used, job.num_cpus) == (3600, 3600, 4)
    assert job.array_job_id is None and job.is_finished


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (5, 5),
        (None, None),
        (4294967294, None),
        (n(3), 3),
        (n(0, set_=False), None),
        (n(0, infinite=True), None),
        ("12", 12),
    ],
)
def test_number_unwraps_every_shape(value: object, expected: int | None) -> None:
    assert pj.number(value) == expected
