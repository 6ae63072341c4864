"""Queries at the argv seam: which Slurm command each runs, that it runs once, what it returns.

The shared fake Slurm (``tests/fakes``) answers exact argv lists with recorded fixture text
(or, where no recording used our delimited format, rows built from the
recorded values) and refuses any other call.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest
from fixtures_path import read

from slurmkit.errors import NotFound, SlurmkitError, SlurmParseError
from slurmkit.hostlist import HostSet
from slurmkit.slurm import _exec, backend, nodeops, query
from slurmkit.slurm.parse_text import DELIMITER, SACCT_COLUMNS, SQUEUE_COLUMNS
from slurmkit.slurm.records import SlurmVersion
from tests.fakes import FakeSlurm

UTC = timezone.utc
SCENARIO = "05_node_not_responding"


@pytest.fixture
def slurm(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlurm]:
    """The shared fake Slurm, with times read in UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield fake_slurm
    monkeypatch.undo()
    time.tzset()


def rows(*records: list[str]) -> str:
    return "".join(DELIMITER.join(fields) + "\n" for fields in records)


def squeue_row(**values: str) -> list[str]:
    """A row in :data:`SQUEUE_COLUMNS` order; unnamed fields are Slurm's ``N/A``."""
    return [values.get(name, "N/A") for name, _ in SQUEUE_COLUMNS]


def sacct_row(**values: str) -> list[str]:
    return [values.get(name, "") for name, _ in SACCT_COLUMNS]


# ---------------------------------------------------------------- version


@pytest.mark.parametrize(("version", "expected"), [("22.05", (22, 5, 8)), ("24.11", (24, 11, 5))])
def test_version_is_asked_once(slurm: FakeSlurm, version: str, expected: tuple) -> None:
    slurm.on(["sinfo", "--version"], read(version, "01_idle", "sinfo_version.txt"))
    assert query.version() == SlurmVersion(*expected)
    assert query.version() >= SlurmVersion(22, 5)
    assert slurm.calls == [("sinfo", "--version")]


# ---------------------------------------------------------------- nodes


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_four_nodes_cost_one_scontrol_call(slurm: FakeSlurm, version: str) -> None:
    argv = ["scontrol", "--all", "--oneliner", "show", "node", "node-[1-4]"]
    slurm.on(argv, read(version, SCENARIO, "scontrol_show_node_oneliner.txt"))
    before = len(_exec.call_log)
    nodes = query.nodes(HostSet("node-[1-4]"))  # one folded word, never one per name
    assert [n.name for n in nodes] == ["node-1", "node-2", "node-3", "node-4"]
    assert nodes[2].is_not_responding and nodes[1].is_draining
    assert slurm.calls == [tuple(argv)]
    assert len(_exec.call_log) - before == 1


def test_nodes_accepts_a_list_and_no_names(slurm: FakeSlurm) -> None:
    slurm.on(["scontrol", "--all", "--oneliner", "show", "node", "node-1,node-3"])
    slurm.on(["scontrol", "--all", "--oneliner", "show", "node"], "No nodes in the system\n")
    assert query.nodes(["node-1", "node-3"]) == []
    assert query.nodes() == []
    assert len(slurm.calls) == 2


def test_a_node_set_reaches_every_node_call_as_one_folded_word(slurm: FakeSlurm) -> None:
    """A HostSet of 1000 nodes is one ``node-[1-1000]`` word in each argv, whichever call."""
    hosts = HostSet("node-[1-1000]")
    assert query.update_node_state_argv(hosts, "drain", "r")[2] == "nodename=node-[1-1000]"
    assert nodeops.reboot_argv(hosts) == ["scontrol", "reboot", "node-[1-1000]"]
    assert query.squeue_argv(nodelist=hosts)[-1] == "--nodelist=node-[1-1000]"
    assert query.nodes_argv(["node-1", "node-3"])[-1] == "node-1,node-3"


def test_the_backend_is_one_implementation_chosen_by_name() -> None:
    """query's read-only calls go to the one object the selection made (the commands here)."""
    backend.choose("commands")
    chosen = backend.current()
    assert isinstance(chosen, query.CommandsBackend) and backend.current() is chosen


def test_unknown_node_is_not_found(slurm: FakeSlurm) -> None:
    argv = ["scontrol", "--all", "--oneliner", "show", "node", "node-9"]
    slurm.on(argv, "Node node-9 not found\n", rc=1)
    with pytest.raises(NotFound, match="Node node-9 not found"):
        query.nodes(["node-9"])


def test_nodes_in_state_expands_and_deduplicates(slurm: FakeSlurm) -> None:
    argv = ["sinfo", "--all", "--noheader", "--Node", "--states=drain", "--format=%N"]
    slurm.on(argv, "node-2\nnode-4\nnode-2\n")
    assert query.nodes_in_state("drain") == ["node-2", "node-4"]
    assert slurm.calls == [tuple(argv)]


def test_bad_state_word_reports_sinfo_message(slurm: FakeSlurm) -> None:
    argv = ["sinfo", "--all", "--noheader", "--Node", "--states=bogus", "--format=%N"]
    slurm.on(
        argv,
        rc=1,
        stderr='sinfo: error: Bad state string: "bogus"\nsinfo: error: valid states: idle\n',
    )
    with pytest.raises(SlurmkitError, match='Bad state string: "bogus"'):
        query.nodes_in_state("bogus")


def test_drain_reasons(slurm: FakeSlurm) -> None:
    """Rows carry the values of the 05 recording's ``sinfo -R``."""
    argv = [
        "sinfo",
        "--all",
        "--list-reasons",
        "--noheader",
        f"--format={DELIMITER.join(['%E', '%u', '%H', '%T', '%N'])}",
    ]
    slurm.on(
        argv,
        rows(
            ["Not responding", "root", "2026-11-21T00:04:10", "down*", "node-3"],
            ["Kill task failed", "root", "2026-11-21T00:04:10", "draining", "node-2"],
            ["gpu ECC error", "root", "2026-11-21T00:04:10", "draining", "node-4"],
        ),
    )
    reasons = {r.nodelist: r for r in query.drain_reasons()}
    assert reasons["node-2"].reason == "Kill task failed" and reasons["node-2"].user == "root"
    assert reasons["node-3"].state == "down*"
    assert reasons["node-4"].time == datetime(2026, 11, 21, 0, 4, 10, tzinfo=UTC)


# ---------------------------------------------------------------- jobs


def test_jobs_builds_every_filter_into_one_squeue(slurm: FakeSlurm) -> None:
    argv = query.squeue_argv(
        ["3", "4_1"], user="root", name="train", states=["R", "PD"], nodelist="node-[1-2]"
    )
    assert argv[:3] == ["squeue", "--all", "--noheader"]
    assert argv[4:] == [
        "--jobs=3,4_1",
        "--user=root",
        "--name=train",
        "--states=R,PD",
        "--nodelist=node-[1-2]",
    ]
    common = {"user": "root", "state": "RUNNING", "reason": "None", "account": "root"}
    slurm.on(
        argv,
        rows(
            squeue_row(
                **common,
                job_id="3",
                array_job_id="3",
                name="train",
                partition="gpu",
                nodelist="node-[1-2]",
                num_nodes="2",
                gres_per_node="gres:gpu:4",
                start_time="2026-11-21T00:03:52",
            ),
            squeue_row(
                **common,
                job_id="5",
                array_job_id="4",
                array_task_id="1",
                name="array-1-6",
                partition="cpu",
                nodelist="node-4",
                num_nodes="1",
                start_time="2026-11-21T00:03:55",
            ),
        ),
    )
    jobs = query.jobs(
        ["3", "4_1"], user="root", name="train", states=["R", "PD"], nodelist="node-[1-2]"
    )
    assert [(j.display_id, j.nodelist, j.gres_per_node) for j in jobs] == [
        ("3", "node-[1-2]", "gpu:4"),
        ("4_1", "node-4", ""),
    ]
    assert slurm.calls == [tuple(argv)]
    assert slurm.log[0].env is not None and slurm.log[0].env["SLURM_BITSTR_LEN"] == "0"


def test_jobs_with_an_unknown_id_is_empty(slurm: FakeSlurm) -> None:
    slurm.on(
        query.squeue_argv("999999"),
        rc=1,
        stderr="slurm_load_jobs error: Invalid job id specified\n",
    )
    assert query.jobs(job_ids="999999") == []


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_job_detail_comes_from_scontrol_show_job_d(slurm: FakeSlurm, version: str) -> None:
    slurm.on(
        ["scontrol", "--details", "show", "job", "3"],
        read(version, SCENARIO, "scontrol_show_job_d_running_gpu_2node.txt"),
    )
    job = query.job("3")
    assert (job.state, job.nodelist, job.cpus_per_task) == ("RUNNING", "node-[1-2]", 4)
    assert [(d.nodes, d.gres) for d in job.gres_detail] == [("node-[1-2]", "gpu:4(IDX:0-3)")]


@pytest.mark.parametrize(("asked", "job_id"), [("4", "4"), ("4_1", "5"), ("5", "5")])
def test_job_picks_the_matching_array_record(slurm: FakeSlurm, asked: str, job_id: str) -> None:
    slurm.on(
        ["scontrol", "--details", "show", "job", asked],
        read("24.11", SCENARIO, "scontrol_show_job_d_array.txt"),
    )
    assert query.job(asked).job_id == job_id


def test_unknown_job_is_not_found(slurm: FakeSlurm) -> None:
    slurm.on(
        ["scontrol", "--details", "show", "job", "999999"],
        rc=1,
        stderr="slurm_load_jobs error: Invalid job id specified\n",
    )
    with pytest.raises(
        NotFound, match=r"^unknown job 999999 \(scontrol: .*Invalid job id specified\)$"
    ):
        query.job("999999")


def nodelist_argv(job_id: str) -> list[str]:
    return [
        "squeue",
        "--all",
        "--noheader",
        f"--format={DELIMITER.join(['%i', '%T', '%N'])}",
        f"--jobs={job_id}",
    ]


def test_job_nodelist_of_a_running_job(slurm: FakeSlurm) -> None:
    slurm.on(nodelist_argv("3"), rows(["3", "RUNNING", "node-[1-2]"]))
    assert query.job_nodelist("3") == "node-[1-2]"
    assert slurm.calls == [tuple(nodelist_argv("3"))]


def test_job_nodelist_of_an_array_keeps_the_tasks_with_nodes(slurm: FakeSlurm) -> None:
    slurm.on(nodelist_argv("4"), rows(["4_1", "RUNNING", "node-4"], ["4_[2-6%1]", "PENDING", ""]))
    assert query.job_nodelist("4") == "node-4"


def test_job_nodelist_of_a_pending_job_is_a_clear_error(slurm: FakeSlurm) -> None:
    slurm.on(nodelist_argv("6"), rows(["6", "PENDING", ""]))
    with pytest.raises(
        SlurmkitError, match="job 6 has no nodes allocated yet \\(state PENDING\\)"
    ) as caught:
        query.job_nodelist("6")
    assert not isinstance(caught.value, NotFound)


def test_job_nodelist_of_an_unknown_job_is_not_found(slurm: FakeSlurm) -> None:
    slurm.on(
        nodelist_argv("999999"), rc=1, stderr="slurm_load_jobs error: Invalid job id specified\n"
    )
    with pytest.raises(NotFound, match="unknown job 999999"):
        query.job_nodelist("999999")


# ---------------------------------------------------------------- partitions


def test_partitions_and_partition_nodelist(slurm: FakeSlurm) -> None:
    text = read("22.05", SCENARIO, "scontrol_show_partition.txt")
    slurm.on(["scontrol", "--all", "show", "partition"], text)
    slurm.on(["scontrol", "--all", "show", "partition", "cpu"], text.split("\n\n")[1])
    assert [p.name for p in query.partitions()] == ["gpu", "cpu"]
    assert query.partition_nodelist("cpu") == "node-4"
    assert len(slurm.calls) == 2


def test_unknown_partition_is_not_found(slurm: FakeSlurm) -> None:
    slurm.on(["scontrol", "--all", "show", "partition", "nope"], "Partition nope not found\n", rc=1)
    with pytest.raises(NotFound, match="unknown partition nope"):
        query.partition_nodelist("nope")


# ---------------------------------------------------------------- listpids, sacct


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_listpids_runs_the_recorded_command(slurm: FakeSlurm, version: str) -> None:
    slurm.on(
        ["scontrol", "listpids", "3", "node-1"],
        read(version, SCENARIO, "scontrol_listpids_running_node-1.txt"),
    )
    processes = query.listpids("3", "node-1")
    assert len(processes) == 4 and {p.job_id for p in processes} == {"3"}


def test_sacct_jobs_asks_for_allocations_of_all_users(slurm: FakeSlurm) -> None:
    start = datetime(2026, 11, 21, 0, 0, tzinfo=UTC)
    argv = query.sacct_argv(["1", "2"], start=start)
    assert argv[:5] == [
        "sacct",
        "--allocations",
        "--parsable2",
        "--noheader",
        f"--delimiter={DELIMITER}",
    ]
    assert argv[6:] == ["--jobs=1,2", "--allusers", "--starttime=2026-11-21T00:00:00"]
    common = {"user": "root", "partition": "gpu", "time_limit": "UNLIMITED"}
    slurm.on(
        argv,
        rows(
            sacct_row(
                **common,
                job_id="1",
                name="completed-2node",
                state="COMPLETED",
                exit_code="0:0",
                nodelist="node-[1-2]",
                end_time="2026-11-21T00:03:48",
                time_used="00:00:02",
            ),
            sacct_row(
                **common,
                job_id="2",
                name="failed-exit3",
                state="FAILED",
                exit_code="3:0",
                nodelist="node-1",
                end_time="2026-11-21T00:03:49",
                time_used="00:00:00",
            ),
        ),
    )
    jobs = query.sacct_jobs(["1", "2"], start=start)
    assert [(j.job_id, j.state, j.exit_code) for j in jobs] == [
        ("1", "COMPLETED", 0),
        ("2", "FAILED", 3),
    ]
    assert jobs[0].end_time == datetime(2026, 11, 21, 0, 3, 48, tzinfo=UTC)


def test_sacct_row_with_a_delimiter_in_a_name_is_refused(slurm: FakeSlurm) -> None:
    argv = query.sacct_argv(user="root")
    slurm.on(argv, "1" + DELIMITER * 18 + "\n")
    with pytest.raises(SlurmParseError, match="has 19 fields, expected 18"):
        query.sacct_jobs(user="root")


# ---------------------------------------------------------------- hostile job names (issue 14)

# Any user can name a job, or run it in a directory, with any bytes but NUL.
EVIL_NAME = "evil\x1fname\nwith\x1elines\u2028"
EVIL_DIR = "/home/mallory/x\x1fy\nz\n"


def test_one_users_hostile_job_name_does_not_blind_squeue_for_all_users(slurm: FakeSlurm) -> None:
    argv = query.squeue_argv()
    common = {"state": "RUNNING", "reason": "None", "nodelist": "node-1", "num_nodes": "1"}
    slurm.on(
        argv,
        rows(
            squeue_row(**common, job_id="1", name="train", user="alice", work_dir="/a"),
            squeue_row(**common, job_id="2", name=EVIL_NAME, user="mallory", work_dir=EVIL_DIR),
            squeue_row(**common, job_id="3", name="eval", user="bob", work_dir="/b"),
        ),
    )
    jobs = query.jobs()
    assert [(j.job_id, j.user) for j in jobs] == [("1", "alice"), ("2", "mallory"), ("3", "bob")]
    assert jobs[1].name == EVIL_NAME.strip() and jobs[1].work_dir == EVIL_DIR.strip()
    assert (jobs[0].name, jobs[2].name, jobs[2].work_dir) == ("train", "eval", "/b")


def test_one_users_hostile_workdir_does_not_blind_sacct_for_all_users(slurm: FakeSlurm) -> None:
    argv = query.sacct_argv()
    common = {"state": "COMPLETED", "exit_code": "0:0", "user": "u"}
    slurm.on(
        argv,
        rows(
            sacct_row(**common, job_id="7", display_id="7", name="a", work_dir=EVIL_DIR),
            sacct_row(**common, job_id="8", display_id="8", name=EVIL_NAME, work_dir="/w"),
            sacct_row(**common, job_id="9", display_id="9", name="c", work_dir="/c"),
        ),
    )
    jobs = query.sacct_jobs()
    assert [j.job_id for j in jobs] == ["7", "8", "9"]
    assert jobs[0].work_dir == EVIL_DIR.strip() and jobs[1].name == EVIL_NAME.strip()
    assert jobs[2].work_dir == "/c"


def test_the_separator_cannot_be_guessed_from_the_source() -> None:
    """A name holding the old fixed separator (\\x1f) splits nothing any more."""
    assert DELIMITER != "\x1f" and DELIMITER.startswith("\x1f") and len(DELIMITER) > 8
    assert DELIMITER in query.squeue_argv()[3] and f"--delimiter={DELIMITER}" in query.sacct_argv()


def test_output_that_is_not_whole_records_is_still_refused() -> None:
    from slurmkit.slurm.parse_text import parse_squeue

    with pytest.raises(SlurmParseError, match="line 2 has 2 fields"):
        parse_squeue(DELIMITER.join(squeue_row(job_id="1")) + "\n3" + DELIMITER + "x\n")
