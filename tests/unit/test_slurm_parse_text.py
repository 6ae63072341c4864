"""Text parsers against the recorded 22.05 and 24.11 outputs (and a few edge strings)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from fixtures_path import (
    JOB_SCENARIOS,
    NODE_STATES,
    REASONS,
    SCENARIOS,
    VERSIONS,
    all_cases,
    degraded,
    read,
    scenario_jobs,
)
from hypothesis import given
from hypothesis import strategies as st

from slurmkit.errors import SlurmParseError
from slurmkit.slurm import parse_records as pr
from slurmkit.slurm import parse_text as pt
from slurmkit.slurm.records import SlurmVersion

UTC = timezone.utc

# When the scenario script set the reasons (the recordings ran with TZ=UTC).
REASON_TIMES = {
    ("22.05", "02_nodes_degraded"): "00:03:40",
    ("22.05", "05_node_not_responding"): "00:04:10",
    ("24.11", "02_nodes_degraded"): "00:05:39",
    ("24.11", "05_node_not_responding"): "00:06:07",
}
RUNNING_GPU_START = {"22.05": "00:03:52", "24.11": "00:05:51"}


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Text timestamps are local time; the recordings were made in UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def at(clock: str) -> datetime:
    hour, minute, second = (int(x) for x in clock.split(":"))
    return datetime(2026, 11, 21, hour, minute, second, tzinfo=UTC)


# ---------------------------------------------------------------- scontrol show node


@pytest.mark.parametrize(("version", "scenario"), all_cases())
def test_node_states_and_reasons(version: str, scenario: str) -> None:
    nodes = {
        n.name: n
        for n in pr.parse_scontrol_nodes(read(version, scenario, "scontrol_show_node_oneliner.txt"))
    }
    assert {name: n.state_text for name, n in nodes.items()} == NODE_STATES[scenario]
    for name, node in nodes.items():
        assert node.cpus == 8 and node.real_memory == 1000 and node.gres == "gpu:4"
        assert node.partitions == (("cpu",) if name == "node-4" else ("gpu",))
        expected_reason = REASONS.get(name) if degraded(scenario) else None
        assert node.reason == expected_reason
        assert node.reason_user == ("root" if expected_reason else None)
        assert node.version is not None and node.version.startswith(version)


@pytest.mark.parametrize("version", VERSIONS)
def test_drain_flags_follow_the_jobs_on_the_node(version: str) -> None:
    def by_name(scenario: str) -> dict:
        text = read(version, scenario, "scontrol_show_node_oneliner.txt")
        return {n.name: n for n in pr.parse_scontrol_nodes(text)}

    idle_drained, busy_drained = by_name("02_nodes_degraded"), by_name("05_node_not_responding")
    assert idle_drained["node-2"].is_drained and not idle_drained["node-2"].is_draining
    assert busy_drained["node-2"].is_draining and not busy_drained["node-2"].is_drained
    assert idle_drained["node-3"].is_down and not idle_drained["node-3"].is_not_responding
    assert busy_drained["node-3"].is_down and busy_drained["node-3"].is_not_responding
    assert [busy_drained[f"node-{i}"].cpus_alloc for i in range(1, 5)] == [4, 4, 0, 2]
    assert busy_drained["node-1"].cpu_load is not None and 0 < busy_drained["node-1"].cpu_load < 1


@pytest.mark.parametrize(("version", "scenario"), list(REASON_TIMES))
def test_reason_time_is_split_off_the_reason(version: str, scenario: str) -> None:
    text = read(version, scenario, "scontrol_show_node_oneliner.txt")
    node = {n.name: n for n in pr.parse_scontrol_nodes(text)}["node-4"]
    assert (node.reason, node.reason_user) == ("gpu ECC error", "root")
    assert node.reason_time == at(REASON_TIMES[version, scenario])


@pytest.mark.parametrize(("version", "scenario"), all_cases())
def test_multiline_show_node_equals_oneliner(version: str, scenario: str) -> None:
    (single,) = pr.parse_scontrol_nodes(read(version, scenario, "scontrol_show_node_node-2.txt"))
    oneliner = pr.parse_scontrol_nodes(read(version, scenario, "scontrol_show_node_oneliner.txt"))
    assert single == next(n for n in oneliner if n.name == "node-2")
    assert single.state_text == NODE_STATES[scenario]["node-2"]


def test_reason_with_equals_and_following_comment_is_kept_whole() -> None:
    line = (
        "NodeName=n1 State=IDLE+DRAIN Partitions=a,b "
        "Reason=bad dimm slot=3 [admin@2026-11-21T00:00:00] Comment=ticket 42"
    )
    (node,) = pr.parse_scontrol_nodes(line)
    assert node.reason == "bad dimm slot=3"
    assert node.reason_user == "admin"
    assert node.raw["Comment"] == "ticket 42"
    assert node.partitions == ("a", "b")


def test_multiline_reason_continues_on_indented_lines() -> None:
    text = (
        "NodeName=n1 State=DOWN\n"
        "   Reason=first line [root@2026-11-21T00:00:00]\n"
        "       second line\n"
    )
    (node,) = pr.parse_scontrol_nodes(text)
    assert node.reason == "first line\nsecond line"
    assert node.reason_time == at("00:00:00")


def test_unexpected_line_in_show_node_is_an_error() -> None:
    with pytest.raises(SlurmParseError, match="unexpected line"):
        pr.parse_scontrol_nodes("Node node-9 not found\n")


def test_no_records_messages_mean_empty() -> None:
    assert pr.parse_scontrol_jobs(read("24.11", "01_idle", "scontrol_show_job_all_d.txt")) == []
    assert pr.parse_scontrol_nodes("No nodes in the system\n") == []


# ---------------------------------------------------------------- scontrol show job -d


def show_job(version: str, scenario: str, role: str) -> list:
    return pr.parse_scontrol_jobs(read(version, scenario, f"scontrol_show_job_d_{role}.txt"))


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_job_ids_match_the_scenario(version: str, scenario: str) -> None:
    roles = scenario_jobs(version, scenario)
    for role, job_id in roles.items():
        records = show_job(version, scenario, role)
        assert job_id in {j.job_id for j in records} | {j.array_job_id for j in records}
        assert all(j.user == "root" and j.time_limit is None for j in records)


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_gpu_job_runs_on_two_nodes_with_four_gpus_each(version: str, scenario: str) -> None:
    (job,) = show_job(version, scenario, "running_gpu_2node")
    assert job.job_id == "3" and job.name == "train_resnet50_imagenet_full_run_long_name"
    assert (job.nodelist, job.num_nodes, job.num_cpus, job.cpus_per_task) == ("node-[1-2]", 2, 8, 4)
    assert job.gres_per_node == "gpu:4"
    assert job.start_time == at(RUNNING_GPU_START[version])
    assert job.work_dir == "/srv/sc/work" and job.std_out == "/srv/sc/work/slurm-3.out"
    (detail,) = job.gres_detail
    assert (detail.nodes, detail.cpu_ids, detail.mem) == ("node-[1-2]", "0-3", 0)
    if scenario == "06_cancelled":
        assert (job.state, job.exit_code, job.exit_signal) == ("CANCELLED", 0, 15)
        assert job.end_time is not None and job.time_left is None
    else:
        assert job.state == "RUNNING" and job.end_time is None
        assert detail.gres == "gpu:4(IDX:0-3)" and detail.gpu_indices == "0-3"
        assert job.time_used is not None and job.time_used > 0


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_array_task_one_runs_and_the_rest_wait(version: str, scenario: str) -> None:
    records = {j.display_id: j for j in show_job(version, scenario, "array")}
    assert set(records) == {"4_1", "4_[2-6%1]"}
    task, rest = records["4_1"], records["4_[2-6%1]"]
    assert (task.job_id, task.array_job_id, task.array_task_id) == ("5", "4", "1")
    assert task.nodelist == "node-4" and rest.nodelist == ""
    assert rest.reason == "JobArrayTaskLimit"
    if scenario == "06_cancelled":
        assert task.state == rest.state == "CANCELLED"
    else:
        assert (task.state, rest.state) == ("RUNNING", "PENDING")


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_held_jobs_are_flagged(version: str, scenario: str) -> None:
    (user_held,) = show_job(version, scenario, "held_user")
    (admin_held,) = show_job(version, scenario, "held_admin")
    (waiting,) = show_job(version, scenario, "dependency")
    assert user_held.held and user_held.reason == "JobHeldUser" and user_held.priority == 0
    assert admin_held.held and admin_held.reason == "JobHeldAdmin"
    assert admin_held.gres_per_node == "gpu:4" and admin_held.num_nodes == 2
    assert not waiting.held
    # Held from submission or waiting on a dependency: never eligible, so no queue age yet.
    assert user_held.accrue_time is None and waiting.accrue_time is None


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_pending_reasons_and_dependency(version: str, scenario: str) -> None:
    (dep,) = show_job(version, scenario, "dependency")
    (later,) = show_job(version, scenario, "begin_later")
    (big,) = show_job(version, scenario, "pending_resources")
    if scenario == "06_cancelled":
        assert (dep.reason, dep.dependency) == ("DependencyNeverSatisfied", "afterok:3(failed)")
    else:
        assert (dep.reason, dep.dependency) == ("Dependency", "afterok:3(unfulfilled)")
    assert later.reason == "BeginTime" and later.state == "PENDING"
    assert later.start_time is not None and later.submit_time is not None
    assert 3590 <= (later.start_time - later.submit_time).total_seconds() <= 3610
    assert (big.num_nodes, big.gres_per_node, big.nodelist) == (3, "gpu:1", "")
    assert big.accrue_time is not None and big.submit_time is not None
    assert 0 <= (big.accrue_time - big.submit_time).total_seconds() <= 5
    nodes_unavailable = (
        "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority "
        "partitions"
    )
    assert big.reason == ("Resources" if scenario == "03_jobs" else nodes_unavailable)


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_finished_jobs_carry_exit_codes(version: str, scenario: str) -> None:
    (done,) = show_job(version, scenario, "completed")
    (failed,) = show_job(version, scenario, "failed")
    assert (done.state, done.exit_code, done.nodelist) == ("COMPLETED", 0, "node-[1-2]")
    assert (failed.state, failed.exit_code, failed.exit_signal) == ("FAILED", 3, 0)
    assert failed.reason == "NonZeroExitCode" and failed.end_time is not None


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_show_job_all_holds_every_role(version: str, scenario: str) -> None:
    jobs = pr.parse_scontrol_jobs(read(version, scenario, "scontrol_show_job_all_d.txt"))
    assert {j.job_id for j in jobs} == {"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}


# ---------------------------------------------------------------- partitions


@pytest.mark.parametrize(("version", "scenario"), all_cases())
def test_partitions(version: str, scenario: str) -> None:
    parts = {
        p.name: p
        for p in pr.parse_scontrol_partitions(
            read(version, scenario, "scontrol_show_partition.txt")
        )
    }
    assert set(parts) == {"gpu", "cpu"}
    assert (parts["gpu"].nodes, parts["gpu"].default, parts["gpu"].total_cpus) == (
        "node-[1-3]",
        True,
        24,
    )
    assert (parts["cpu"].nodes, parts["cpu"].default, parts["cpu"].total_nodes) == (
        "node-4",
        False,
        1,
    )
    assert parts["gpu"].max_time is None and parts["gpu"].state == "UP"


# ---------------------------------------------------------------- delimited text


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_squeue_delimited_rows(version: str, scenario: str) -> None:
    columns = (("display_id", "%i"), ("state", "%T"), ("reason", "%r"))
    jobs = pt.parse_squeue(read(version, scenario, "squeue_r_o_i_T_r.txt"), columns, "|")
    by_id = {j.display_id: j for j in jobs}
    assert by_id["6"].held and by_id["7"].held and not by_id["8"].held
    big_job_waits_for = "Resources" if scenario == "03_jobs" else "Nodes required for job are DOWN,"
    assert by_id["10"].reason is not None and by_id["10"].reason.startswith(big_job_waits_for)
    if scenario == "06_cancelled":  # cancelled jobs have left the queue
        assert set(by_id) == {"6", "7", "8", "9", "10"}
        return
    assert {j.display_id for j in jobs if j.state == "RUNNING"} == {"3", "4_1"}
    assert {f"4_{i}" for i in range(2, 7)} <= set(by_id)  # -r expands the pending tasks
    assert (by_id["4_2"].array_job_id, by_id["4_2"].array_task_id) == ("4", "2")


def test_squeue_full_format_row() -> None:
    """One row in the exact format :func:`query.jobs` asks for (values from 05, 24.11)."""
    values = [
        "3", "3", "N/A", "train run", "root", "RUNNING", "None", "gpu", "root", "normal",
        "node-[1-2]", "node-1", "2", "8", "gres/gpu:4", "2026-11-21T00:05:49",
        "2026-11-21T00:05:51", "NONE", "UNLIMITED", "0:55", "UNLIMITED", "1", "(null)",
        "/srv/sc/scratch/job",
    ]  # fmt: skip
    (job,) = pt.parse_squeue(pt.DELIMITER.join(values) + "\n")
    assert (job.job_id, job.name, job.state, job.reason) == ("3", "train run", "RUNNING", None)
    assert (job.array_job_id, job.array_task_id) == (None, None)
    assert (job.nodelist, job.num_nodes, job.num_cpus, job.gres_per_node) == (
        "node-[1-2]",
        2,
        8,
        "gpu:4",
    )
    assert (job.time_limit, job.time_used, job.time_left, job.end_time) == (None, 55, None, None)
    assert job.start_time == at("00:05:51") and job.dependency is None and job.priority == 1


def test_squeue_row_with_a_missing_field_is_refused() -> None:
    with pytest.raises(SlurmParseError, match="line 1 has 2 fields, expected 24"):
        pt.parse_squeue(f"3{pt.DELIMITER}RUNNING\n")


@pytest.mark.parametrize(("version", "scenario"), all_cases())
def test_sinfo_reason_rows(version: str, scenario: str) -> None:
    columns = (("nodelist", "%N"), ("state", "%T"), ("reason", "%E"))
    reasons = pt.parse_sinfo_reasons(read(version, scenario, "sinfo_h_o_N_T_E.txt"), columns, "|")
    got = {r.nodelist: (r.reason, r.state) for r in reasons}
    if not degraded(scenario):
        assert got == {}
        return
    assert {name: reason for name, (reason, _) in got.items()} == REASONS
    drained = (
        "draining"
        if scenario in ("04_jobs_nodes_degraded", "05_node_not_responding")
        else "drained"
    )
    assert got["node-2"][1] == drained
    assert got["node-3"][1] == ("down" if scenario < "05" else "down*")


SACCT_FIXTURE_COLUMNS = (
    ("display_id", "JobID"),
    ("name", "JobName"),
    ("state", "State"),
    ("exit_code", "ExitCode"),
    ("nodelist", "NodeList"),
    ("time_used", "Elapsed"),
    ("start_time", "Start"),
    ("end_time", "End"),
)


@pytest.mark.parametrize(("version", "scenario"), all_cases(JOB_SCENARIOS))
def test_sacct_rows_skip_steps(version: str, scenario: str) -> None:
    text = read(version, scenario, "sacct_j_P_o_fmt.txt")
    jobs = {j.display_id: j for j in pt.parse_sacct(text, SACCT_FIXTURE_COLUMNS, "|", header=True)}
    assert set(jobs) == {"1", "2", "3", "4_1", "4_[2-6%1]", "6", "7", "8", "9", "10"}
    assert (jobs["2"].state, jobs["2"].exit_code) == ("FAILED", 3)
    assert jobs["1"].time_used == 2 and jobs["1"].nodelist == "node-[1-2]"
    assert jobs["6"].nodelist == "" and jobs["6"].start_time is None
    if scenario == "06_cancelled":
        assert jobs["3"].state == "CANCELLED" and jobs["3"].end_time is not None
    else:
        assert jobs["3"].state == "RUNNING" and jobs["3"].end_time is None
    steps = pt.parse_sacct(text, SACCT_FIXTURE_COLUMNS, "|", header=True, steps=True)
    assert "3.batch" in {j.job_id for j in steps}


@pytest.mark.parametrize("version", VERSIONS)
def test_sacct_without_jobs_and_with_a_wrong_header(version: str) -> None:
    text = read(version, "01_idle", "sacct_P_o_fmt_nojobs.txt")
    assert pt.parse_sacct(text, SACCT_FIXTURE_COLUMNS, "|", header=True) == []
    with pytest.raises(SlurmParseError, match="does not match"):
        pt.parse_sacct(text, SACCT_FIXTURE_COLUMNS[::-1], "|", header=True)


# ---------------------------------------------------------------- small outputs


@pytest.mark.parametrize(("version", "scenario"), all_cases())
def test_sinfo_version(version: str, scenario: str) -> None:
    expected = {"22.05": SlurmVersion(22, 5, 8), "24.11": SlurmVersion(24, 11, 5)}[version]
    assert pt.parse_version(read(version, scenario, "sinfo_version.txt")) == expected


@pytest.mark.parametrize(("version", "scenario"), all_cases())
def test_hostnames_one_per_line(version: str, scenario: str) -> None:
    names = pt.parse_names(read(version, scenario, "scontrol_show_hostnames.txt"))
    assert names == ["node-1", "node-2", "node-3", "node-4"]


def test_names_are_deduplicated_in_order() -> None:
    assert pt.parse_names("node-2\nnode-1\nnode-2\n\n") == ["node-2", "node-1"]


@pytest.mark.parametrize(
    ("version", "scenario"),
    all_cases(("03_jobs", "04_jobs_nodes_degraded", "05_node_not_responding")),
)
def test_listpids(version: str, scenario: str) -> None:
    gpu_job = pt.parse_listpids(read(version, scenario, "scontrol_listpids_running_node-1.txt"))
    assert {p.job_id for p in gpu_job} == {"3"}
    assert {p.step_id for p in gpu_job} == {"0", "batch"}
    assert sum(p.local_id is None for p in gpu_job) == 2
    array_task = pt.parse_listpids(
        read(version, scenario, "scontrol_listpids_array_task1_node-4.txt")
    )
    assert [p.job_id for p in array_task] == ["5", "5"] and all(p.pid > 0 for p in array_task)


def test_listpids_with_a_foreign_header_is_refused() -> None:
    with pytest.raises(SlurmParseError, match="unexpected header"):
        pt.parse_listpids("JOBID PID\n1 2\n")


# ---------------------------------------------------------------- values


def test_bad_time_is_a_parse_error() -> None:
    with pytest.raises(SlurmParseError):
        pt.parse_time("yesterday")


def test_kv_keys_with_colons_and_slashes() -> None:
    kv = pr.parse_kv("AllocNode:Sid=localhost:8713 CPUs/Task=4 TRES=cpu=8,gres/gpu=8 Power=")
    assert kv == {
        "AllocNode:Sid": "localhost:8713",
        "CPUs/Task": "4",
        "TRES": "cpu=8,gres/gpu=8",
        "Power": "",
    }


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_versions_agree_on_node_model(scenario: str) -> None:
    """Same cluster, two Slurm versions: the parsed model must not depend on the version."""
    states = [
        {
            n.name: (n.state_text, n.reason)
            for n in pr.parse_scontrol_nodes(read(v, scenario, "scontrol_show_node_oneliner.txt"))
        }
        for v in VERSIONS
    ]
    assert states[0] == states[1]


# ---------------------------------------------------------------- properties


KEYS = st.from_regex(r"[A-Z][A-Za-z0-9_:/]{0,12}", fullmatch=True)
PLAIN_VALUES = st.from_regex(r"[A-Za-z0-9_.:,()/@\[\]-]{0,20}", fullmatch=True)


@given(st.dictionaries(KEYS, PLAIN_VALUES, min_size=1, max_size=8))
def test_kv_round_trip(pairs: dict[str, str]) -> None:
    line = " ".join(f"{key}={value}" for key, value in pairs.items())
    assert pr.parse_kv(line) == pairs


@given(PLAIN_VALUES, st.lists(PLAIN_VALUES, max_size=4))
def test_glued_key_keeps_spaces_and_equals(first: str, words: list[str]) -> None:
    value = " ".join([first, *(f"x{i}={w}" for i, w in enumerate(words))]).strip()
    line = f"JobId=1 JobName={value}"
    assert pr.parse_kv(line, {"JobName": frozenset()}) == {"JobId": "1", "JobName": value}
