"""``faulty history``: ranking on recorded sacct output and on made-up jobs; --since; one call."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from slurmkit.errors import UsageError
from slurmkit.faulty.history import rank, since
from slurmkit.faulty.report import NodeScanResult, node_results
from slurmkit.slurm import _exec
from slurmkit.slurm.parse_text import DELIMITER, SACCT_COLUMNS, parse_sacct
from slurmkit.slurm.records import Job
from slurmkit.templating.results import CheckLine
from tests.fakes import FakeSlurm
from tests.unit.fixtures_path import JOB_SCENARIOS, VERSIONS, read

FIXTURE_COLUMNS = (
    ("display_id", "JobID"),
    ("name", "JobName"),
    ("state", "State"),
    ("exit_code", "ExitCode"),
    ("nodelist", "NodeList"),
    ("time_used", "Elapsed"),
    ("start_time", "Start"),
    ("end_time", "End"),
)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scenario", JOB_SCENARIOS)
def test_rank_on_recorded_sacct(version: str, scenario: str) -> None:
    text = read(version, scenario, "sacct_j_P_o_fmt.txt")
    jobs = parse_sacct(text, FIXTURE_COLUMNS, "|", header=True)
    (node1,) = rank(jobs)  # job 2 "failed-exit3" on node-1; pending jobs have no nodes
    assert (node1.node, node1.failed, node1.node_fail, node1.jobs) == ("node-1", 1, 0, 3)
    assert node1.failed_jobs == ["2"] and node1.last_failure is not None
    assert round(node1.rate, 3) == 0.333


def job(job_id: str, state: str, nodes: str, day: int = 1) -> Job:
    end = datetime(2026, 11, day, tzinfo=timezone.utc)
    return Job(job_id=job_id, state=state, nodelist=nodes, end_time=end)


def test_rank_orders_by_failures_then_node_fail_then_rate() -> None:
    jobs = [
        job("1", "FAILED", "n[1-2]"),
        job("2", "NODE_FAIL", "n2", 3),
        job("3", "FAILED", "n3"),
        job("4", "NODE_FAIL", "n3", 2),
        job("5", "COMPLETED", "n[1-4]"),
        job("6", "FAILED", "n4"),
        job("7", "PENDING", "None assigned"),
        job("8", "FAILED", "bad[", 9),
    ]
    ranked = rank(jobs)
    assert [(n.node, n.node_fail, n.failed, n.jobs) for n in ranked] == [
        ("n2", 1, 1, 3),
        ("n3", 1, 1, 3),
        ("n1", 0, 1, 2),
        ("n4", 0, 1, 2),
    ]
    assert ranked[0].last_failure == datetime(2026, 11, 3, tzinfo=timezone.utc)
    assert [n.node for n in rank(jobs, top=2)] == ["n2", "n3"]


def test_rank_leaves_out_slurmkits_own_scan_jobs() -> None:
    scan = Job(job_id="9", name="slurmkit-faulty-1a2b3c", state="FAILED", nodelist="n[1-4]")
    assert rank([scan, job("1", "FAILED", "n3")])[0].node == "n3"
    assert [n.node for n in rank([scan])] == []


def test_since() -> None:
    now = datetime(2026, 11, 21, 12, 0, tzinfo=timezone.utc)
    assert since("7d", now) == now - timedelta(days=7)
    assert since("12h", now) == now - timedelta(hours=12)
    assert since("2026-11-01", now).date().isoformat() == "2026-11-01"
    assert since("2026-11-01T08:30", now).hour == 8
    with pytest.raises(UsageError, match=r"--since .soon."):
        since("soon", now)


def sacct(slurm: FakeSlurm, rows: list[dict[str, str]]) -> FakeSlurm:
    """Any ``sacct`` call prints ``rows`` (fields in SACCT_COLUMNS order)."""
    out = "".join(
        DELIMITER.join(row.get(name, "") for name, _ in SACCT_COLUMNS) + "\n" for row in rows
    )
    return slurm.on(["sacct", "**"], out)


def row(job_id: str, state: str, nodes: str) -> dict[str, str]:
    return {
        "job_id": job_id,
        "display_id": job_id,
        "state": state,
        "nodelist": nodes,
        "end_time": "2026-11-20T10:00:00",
        "exit_code": "1:0",
    }


def test_cli_one_sacct_call_and_a_table(run_cli, fake_slurm: FakeSlurm) -> None:
    fake = sacct(
        fake_slurm,
        [
            row("1", "FAILED", "node-2"),
            row("2", "FAILED", "node-2"),
            row("3", "NODE_FAIL", "node-[1-2]"),
            row("4", "COMPLETED", "node-3"),
        ],
    )
    before = len(_exec.call_log)
    result = run_cli("faulty", "history", "--since", "2d")
    assert len(_exec.call_log) - before == 1
    (argv,) = fake.calls
    assert "--allusers" in argv and any(a.startswith("--starttime=") for a in argv)
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["NODE", "NODE_FAIL", "FAILED", "JOBS"]
    assert [line.split()[:4] for line in lines[2:]] == [
        ["node-2", "1", "2", "3"],
        ["node-1", "1", "0", "1"],
    ]
    assert "4 job(s) since" in result.stderr


def test_cli_json_top_and_nothing_found(run_cli, fake_slurm: FakeSlurm) -> None:
    sacct(fake_slurm, [row(str(i), "FAILED", f"n{i}") for i in range(1, 6)])
    data = json.loads(run_cli("faulty", "history", "--top", "2", "--json").stdout)
    assert [n["node"] for n in data["nodes"]] == ["n1", "n2"] and data["jobs"] == 5
    sacct(fake_slurm, [row("1", "COMPLETED", "n1")])
    result = run_cli("faulty", "history")
    assert result.stdout == "" and "no node ran a FAILED or NODE_FAIL job" in result.stderr


def test_cli_bad_since_and_accounting_down(run_cli, fake_slurm: FakeSlurm) -> None:
    assert (
        "--since 'yesterday'"
        in run_cli("faulty", "history", "--since", "yesterday", exit_code=2).stderr
    )

    fake_slurm.on(
        ["sacct", "**"],
        rc=1,
        stderr="sacct: error: Problem talking to the database: Connection refused\n",
    )
    result = run_cli("faulty", "history", exit_code=2)
    assert result.stderr.startswith("slurmkit: ") and "Traceback" not in result.stderr


# ---------------------------------------------------------------- per-node verdicts


def r(node: str, check: str, status: str, detail: str = "d") -> CheckLine:
    return CheckLine(node, check, status, detail)


def test_node_verdicts_worst_wins_and_missing_is_unknown() -> None:
    nodes = node_results(
        ["python", "cuda"],
        ["n1", "n2", "n3", "n4", "n10"],
        [
            r("n1", "python", "pass"),
            r("n1", "cuda", "pass"),
            r("n2", "python", "pass"),
            r("n2", "cuda", "skipped", "no driver"),
            r("n3", "python", "fail", "not found"),
            r("n3", "cuda", "skipped"),
            r("n4", "python", "pass"),
            r("n11", "python", "pass"),
            r("n11", "cuda", "fail"),  # reported, not in the allocation: dropped (issue 14 #4)
        ],
        [("n9", "IDLE+DRAIN")],
    )
    verdicts = {n.node: n.result for n in nodes}
    assert verdicts == {
        "n1": "pass",
        "n2": "skipped",
        "n3": "FAIL",
        "n4": "unknown",
        "n9": "unavailable",
        "n10": "unknown",
    }
    assert [n.node for n in nodes] == ["n1", "n2", "n3", "n4", "n9", "n10"]
    by_name: dict[str, NodeScanResult] = {n.node: n for n in nodes}
    assert by_name["n3"].detail == "python: not found; skipped cuda: d"
    assert by_name["n4"].detail == "no result for cuda"
    assert by_name["n2"].status_of("cuda") == "skip" and by_name["n4"].status_of("cuda") == "?"
