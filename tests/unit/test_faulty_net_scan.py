"""``faulty scan --checks net`` at the argv seam: the refusal below 2 nodes, the job it
submits, and how the pairs' verdicts reach the table, --json, --exclude, the exclude list
and --drain (a recording fake Slurm, :class:`tests.unit.test_faulty_scan.CheckJobCluster`)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from slurmkit.faulty import excluded
from tests.unit.test_faulty_net import died_after_round_one, simulate
from tests.unit.test_faulty_scan import CheckJobCluster, check_line


@pytest.fixture
def slurm(fake_slurm: CheckJobCluster, monkeypatch, tmp_path) -> Iterator[CheckJobCluster]:
    fake = CheckJobCluster(fake_slurm)
    monkeypatch.chdir(tmp_path)
    yield fake


def scan(run_cli, *args: str, exit_code: int | None = 1):
    return run_cli("faulty", "scan", "--dir", "work", *args, exit_code=exit_code)


@pytest.mark.parametrize("checks", ["net", "nccl-multi", "python,net"])
def test_one_node_is_refused_before_any_job(run_cli, slurm, checks: str) -> None:
    result = scan(run_cli, "-w", "node-1", "--checks", checks, exit_code=2)
    assert "needs at least 2 nodes" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not slurm.slurm_calls("sbatch")


def test_two_nodes_of_which_one_is_drained_are_one_node(run_cli, slurm) -> None:
    slurm.nodes["node-2"] = "IDLE+DRAIN"
    result = scan(run_cli, "-w", "node-[1-2]", "--checks", "net", exit_code=2)
    assert "needs at least 2 nodes (it runs across pairs of nodes); only 1 can run" in result.stderr
    assert not slurm.slurm_calls("sbatch")


def test_a_port_range_past_65535_is_refused(run_cli, slurm) -> None:
    slurm.nodes.update({f"node-{i}": "IDLE" for i in range(5, 9)})
    result = scan(run_cli, "--checks", "net", "--net-port", "65533", exit_code=2)
    assert "4 pairs per round need ports up to 65536, past 65535" in result.stderr
    assert not slurm.slurm_calls("sbatch")
    slurm.log_lines = simulate(8).splitlines()
    scan(run_cli, "--checks", "net", "--net-port", "65532", exit_code=None)
    assert "--port 65532 " in slurm.script_text


@pytest.mark.parametrize(
    ("value", "message"),
    [("0", "expected a number of rounds"), ("x", "expected a number"), ("-2", "expected")],
)
def test_bad_net_rounds(run_cli, slurm, value: str, message: str) -> None:
    result = scan(run_cli, "--checks", "net", "--net-rounds", value, exit_code=2)
    assert message in result.stderr and not slurm.slurm_calls("sbatch")


def test_the_net_job_runs_the_driver_with_the_options(run_cli, slurm) -> None:
    slurm.log_lines = simulate(4, 0).splitlines()
    result = scan(
        run_cli, "--checks", "python,net", "--net-rounds", "all", "--net-port", "31000",
        "--net-size", "4", "--net-timeout", "12", exit_code=None,
    )  # fmt: skip
    assert len(slurm.slurm_calls("sbatch")) == 1
    script = slurm.script_text
    assert "# Rendered by slurmkit from template net-check" in script
    assert "--checks net \\\n  --port 31000 --size 4 --iters 3 --rounds 0" in script
    assert "--pair-timeout 12 " in script
    assert 'bash -c "$task" slurmkit-checks python || rc=$?' in script
    assert "#SBATCH --gres" not in script  # net needs no GPU
    assert result.exit_code == 1  # python printed no line: unknown
    default = scan(run_cli, "--checks", "net", "--timeout", "300", exit_code=None)
    assert "--rounds 3 " in slurm.script_text and "--pair-timeout 50 " in slurm.script_text
    assert default.exit_code == 0


def test_a_broken_node_is_named_excluded_recorded_and_drained(run_cli, slurm) -> None:
    slurm.log_lines = simulate(4, broken={"node-3"}).splitlines()
    result = scan(run_cli, "--checks", "net", "--drain", "--yes", "-v")  # -v: a row per node
    lines = result.stdout.splitlines()
    assert lines[-1] == "--exclude=node-3"
    rows = {line.split()[0]: line.split()[1] for line in lines[2:-1]}
    assert rows == {"node-1": "pass", "node-2": "pass", "node-3": "FAIL", "node-4": "pass"}
    assert "net: all 3 pairs failed, with node-[1-2,4]: " in result.stdout
    assert "net: warning: 1 of 3 pairs failed (with node-3); median 801.5 MB/s over 2 pair(s)" in (
        result.stdout
    )  # its partners pass, with their figure
    assert slurm.reasons == {"node-3": "slurmkit: net failed"}
    (entry,) = excluded.load(excluded.default_path())
    assert (entry.node, entry.check) == ("node-3", "net")


def test_a_slow_node_is_excluded_and_recorded_but_not_drained(run_cli, slurm) -> None:
    slurm.log_lines = simulate(4, slow={"node-2": 4.4}).splitlines()
    result = scan(run_cli, "--checks", "net", "--drain", "--yes", "--json")
    data = json.loads(result.stdout)
    assert {n["node"]: n["result"] for n in data["nodes"]} == {
        "node-1": "pass", "node-2": "slow", "node-3": "pass", "node-4": "pass",
    }  # fmt: skip
    assert data["slow"] == "node-2" and data["exclude"] == "node-2" and data["failing"] == ""
    assert data["drain"]["groups"] == [] and not slurm.slurm_calls("update")
    (entry,) = excluded.load(excluded.default_path())
    assert entry.node == "node-2" and entry.error.startswith("slow: median 4.4 MB/s")
    text = scan(run_cli, "--checks", "net", "--drain", "--yes", "--no-record")
    assert "slurmkit: not draining node-2: slow, not broken (excluded)" in text.stderr
    assert text.stdout.splitlines()[-1] == "--exclude=node-2"


def test_a_node_that_dies_mid_scan_is_unknown_excluded_never_drained(run_cli, slurm) -> None:
    """The job ends NODE_FAIL: node-3 is a row of its own, unknown, not lost and not a pass."""
    slurm.log_lines = died_after_round_one(simulate(4, broken={"node-3"}), "node-3").splitlines()
    slurm.states = ["RUNNING", "NODE_FAIL"]
    result = scan(run_cli, "--checks", "net", "--drain", "--yes", "--json")
    data = json.loads(result.stdout)
    assert data["job_state"] == "NODE_FAIL"
    assert {n["node"]: n["result"] for n in data["nodes"]} == {
        "node-1": "pass", "node-2": "pass", "node-3": "unknown", "node-4": "pass",
    }  # fmt: skip
    assert data["exclude"] == "node-3" and data["failing"] == ""
    assert not slurm.slurm_calls("update")  # unknown is never drained
    node3 = next(n for n in data["nodes"] if n["node"] == "node-3")
    assert node3["checks"][0]["detail"].startswith(
        "its task did not run in its pair(s) with node-[1,4] after 1 good pair(s)"
    )
    assert excluded.load(excluded.default_path()) == []  # recorded: failing and slow only


def test_a_hung_pair_is_bounded_and_every_other_pair_is_still_reported(run_cli, slurm) -> None:
    """The driver killed node-3's steps at --net-timeout (status=timeout); the rest ran."""
    slurm.log_lines = simulate(4, broken={"node-3"}, status="timeout").splitlines()
    data = json.loads(scan(run_cli, "--checks", "net", "--net-timeout", "5", "--json").stdout)
    assert "--pair-timeout 5 " in slurm.script_text
    results = {n["node"]: n["checks"][0] for n in data["nodes"]}
    assert [results[n]["status"] for n in sorted(results)] == ["pass", "pass", "fail", "pass"]
    assert results["node-3"]["detail"].startswith("all 3 pairs failed, with node-[1-2,4]: ")
    assert results["node-2"]["detail"] == (  # its partners report, with their figures
        "warning: 1 of 3 pairs failed (with node-3); median 802.5 MB/s over 2 pair(s)"
    )
    assert data["exclude"] == "node-3" and data["timed_out"] is False


def test_a_failing_per_node_check_and_the_net_verdict_share_one_row(run_cli, slurm) -> None:
    slurm.log_lines = [
        *simulate(4).splitlines(),
        *(check_line(n, "python", "pass") for n in ("node-1", "node-2", "node-4")),
        check_line("node-3", "python", "fail", "python3 not found on PATH"),
    ]
    data = json.loads(scan(run_cli, "--checks", "python,net", "--json").stdout)
    node3 = next(n for n in data["nodes"] if n["node"] == "node-3")
    assert node3["result"] == "FAIL"
    assert {c["check"]: c["status"] for c in node3["checks"]} == {"python": "fail", "net": "pass"}
    assert data["exclude"] == "node-3"


def test_nccl_multi_without_torch_is_skipped_never_pass(run_cli, slurm) -> None:
    slurm.log_lines = [
        f"SLURMKIT_NET kind=skip check=nccl-multi node={n} why=torch is not importable by "
        "/usr/bin/python3 (ModuleNotFoundError)"
        for n in ("node-1", "node-2", "node-3", "node-4")
    ] + ["SLURMKIT_NET kind=plan check=nccl-multi nodes=- rounds=0"]
    data = json.loads(scan(run_cli, "--checks", "nccl-multi", "--json").stdout)
    assert {n["result"] for n in data["nodes"]} == {"skipped"}
    assert data["nodes"][0]["checks"][0]["detail"].startswith("torch is not importable")
    assert data["exclude"] == "" and "#SBATCH --gres=gpu:4" in slurm.script_text


def test_a_pair_line_for_a_node_outside_the_job_is_shown_never_judged(run_cli, slurm) -> None:
    forged = (
        "SLURMKIT_NET kind=pair check=net round=1 a=node-1 b=node-9 port=29600 status=fail "
        "mbps=- ran=node-1,node-9 error=forged"
    )
    slurm.log_lines = [*simulate(4).splitlines(), forged]
    result = scan(run_cli, "--checks", "net", "--drain", "--yes", "--json", exit_code=0)
    data = json.loads(result.stdout)
    assert data["ignored"] == ["node-9"] and data["exclude"] == ""
    assert [n["node"] for n in data["nodes"]] == ["node-1", "node-2", "node-3", "node-4"]
    assert "ignoring result lines for node-9" in result.stderr
