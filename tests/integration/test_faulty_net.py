"""``faulty scan --checks net`` on the real 4-node sandbox (issue 16 item 1, "Done means").

The fault is real: ``slurmkit sandbox fault NODE net-down|net-slow`` drops or polices
the node's data traffic with nftables while its slurmd and ssh stay up. The scan must
name exactly that node out of 4 (with ``--exclude=``), and flag a slowed node slow with
its figure. Every fault is cleared by the fixture's finalizer, whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from slurmkit import hostlist, sandbox
from slurmkit.faulty import excluded
from slurmkit.sandbox import netfault
from slurmkit.slurm import query
from slurmkit.slurm.commands import run_slurm
from tests.integration.conftest import (
    SPARE_SLOT,
    poll,
    session_slot,
    slot_spec,
    slurmd_pid,
    usable_nodes,
)

NODES = ["node-1", "node-2", "node-3", "node-4"]


def _all_can_run() -> bool:
    return all(
        n.state in ("IDLE", "MIXED") and not n.flags & {"DRAIN", "NOT_RESPONDING"}
        for n in query.nodes("node-[1-4]")
    )


@pytest.fixture
def fault(cluster: sandbox.SandboxSpec, run_cli) -> Iterator[Callable[[str, str], None]]:
    """``fault(node, kind)`` breaks a node's network; every broken node is cleared after."""
    usable_nodes()
    broken: list[str] = []

    def apply(node: str, kind: str) -> None:
        broken.append(node)
        run_cli("sandbox", "fault", "--dir", str(cluster.dir), node, kind)

    try:
        yield apply
    finally:
        for node in broken:
            run_cli("sandbox", "fault", "--dir", str(cluster.dir), node, "clear")
        left = [f for f in netfault.active(cluster) if f.node in broken]
        assert not left, f"faults still in force: {left}"


def _scan(run_cli, tmp_path: Path, *extra: str, exit_code: int, checks: str = "net") -> str:
    return run_cli(
        "faulty", "scan", "-w", "node-[1-4]", "--checks", checks, "--dir", str(tmp_path),
        "--timeout", "300", "--net-timeout", "15", *extra, exit_code=exit_code,
    ).stdout  # fmt: skip


@pytest.mark.smoke
@pytest.mark.serial  # a rate, compared: on a quiet machine
def test_healthy_nodes_all_pass_with_bandwidth_figures(run_cli, tmp_path, fault) -> None:
    """With a per-node check too: both run in the one job, the per-node step first."""
    out = _scan(run_cli, tmp_path, "--json", exit_code=0, checks="python,net")
    data = json.loads(out)
    assert data["job_state"] == "COMPLETED" and data["exclude"] == ""
    for node in data["nodes"]:
        python, check = node["checks"]
        assert python["check"] == "python" and python["status"] == "pass", node
        assert node["result"] == "pass" and check["status"] == "pass", node
        found = re.fullmatch(r"median ([0-9.]+) MB/s over 3 pair\(s\)", check["detail"])
        assert found and float(found.group(1)) > 0, check
    log = Path(data["log"]).read_text()
    assert log.count("SLURMKIT_NET kind=pair check=net") == 6  # 3 rounds of 2 pairs
    assert "status=fail" not in log and "status=timeout" not in log


def test_a_node_whose_network_is_down_is_named_alone(run_cli, tmp_path, fault, cluster) -> None:
    fault("node-3", "net-down")
    out = _scan(run_cli, tmp_path, "-v", exit_code=1)  # -v: one line per node
    lines = out.splitlines()
    assert lines[-1] == "--exclude=node-3"
    rows = {line.split()[0]: line.split()[1] for line in lines[2:-1]}
    assert rows == {"node-1": "pass", "node-2": "pass", "node-3": "FAIL", "node-4": "pass"}
    assert "net: all 3 pairs failed, with node-[1-2,4]: " in out
    node_3 = cluster.node_addr(3)
    assert f"from {node_3}: timed out" in out or f"to {node_3} port" in out
    entries = excluded.load(excluded.default_path())
    assert [(e.node, e.check) for e in entries] == [("node-3", "net")]


@pytest.mark.serial  # a rate, compared: on a quiet machine
def test_a_slowed_node_is_flagged_slow_with_its_figure(run_cli, tmp_path, fault) -> None:
    fault("node-2", "net-slow")
    data = json.loads(_scan(run_cli, tmp_path, "--net-size", "4", "--json", exit_code=1))
    results = {n["node"]: n for n in data["nodes"]}
    assert {name: n["result"] for name, n in results.items()} == {
        "node-1": "pass", "node-2": "slow", "node-3": "pass", "node-4": "pass",
    }  # fmt: skip
    detail = results["node-2"]["checks"][0]["detail"]
    found = re.fullmatch(
        r"slow: median ([0-9.]+) MB/s over 3 pair\(s\), below 0\.5 x the median of all pairs "
        r"\(([0-9.]+) MB/s\)",
        detail,
    )
    assert found and float(found.group(1)) < 0.5 * float(found.group(2)), detail
    assert data["slow"] == "node-2" and data["exclude"] == "node-2" and data["failing"] == ""


def test_nccl_multi_without_torch_cuda_is_skipped_on_every_node(run_cli, tmp_path, fault) -> None:
    out = run_cli(
        "faulty", "scan", "-w", "node-[1-4]", "--checks", "nccl-multi", "--dir", str(tmp_path),
        "--timeout", "300", "--json", exit_code=1,
    ).stdout  # fmt: skip
    data = json.loads(out)
    assert data["exclude"] == "" and data["recorded"] == []
    for node in data["nodes"]:
        (check,) = node["checks"]
        assert node["result"] == "skipped" and check["status"] == "skipped", node
        assert re.match(r"torch (is not importable by |.*torch\.cuda\.is_available\(\) is False)",
                        check["detail"]), check  # fmt: skip


@contextlib.contextmanager
def _production_sandbox(cluster: sandbox.SandboxSpec) -> Iterator[sandbox.SandboxSpec]:
    """A 4-node sandbox of the session's version with Slurm's production timings, for this
    test alone: with the test profile's MessageTimeout (5 s) the frozen node's NODE_FAIL came
    35-37 s after the freeze, before node-2 and node-3's round-1 pair had reported (it had
    not ended 30 s into the round, on 22.05 and 26.05 under the other sessions' load); the
    race is Slurm's, not slurmkit's, and this test is about what the scan makes of it."""
    spec = slot_spec(session_slot() + 3 * SPARE_SLOT, slurm=cluster.slurm, profile="production")
    report = sandbox.up(spec, install=False)
    try:
        with pytest.MonkeyPatch.context() as env:
            for line in sandbox.env_lines(spec.dir):
                name, value = line.removeprefix("export ").split("=", 1)
                env.setenv(name, os.path.expandvars(shlex.split(value)[0]))
            poll(_all_can_run, 120, "the production sandbox's nodes to accept jobs")
            yield report.spec
    finally:
        sandbox.down(spec.dir)


@pytest.mark.serial  # a race between Slurm's timeouts: on a quiet machine, as it was measured
def test_a_node_that_stops_answering_mid_scan_is_unknown_and_the_others_are_reported(
    cluster: sandbox.SandboxSpec, tmp_path: Path
) -> None:
    with _production_sandbox(cluster) as own:
        _mid_scan(own, tmp_path)


def _mid_scan(cluster: sandbox.SandboxSpec, tmp_path: Path) -> None:
    """Issue 16, "a node that dies mid-scan is unknown, not lost": once the scan's job runs on
    all four nodes, node-4's slurmd is frozen (SIGSTOP: a hung node, no step starts there).
    Its pairs are bounded by --net-timeout; node-4 is never a pass, it is in --exclude=,
    nothing is drained, and the three others keep the result of their pairs among
    themselves. The scan answers within its bound, exit 1.

    The job's batch step sleeps 8 s before its pairs (the template's ``setup``), so the
    freeze lands after the job started and before any pair: on 26.05 the three rounds
    otherwise ran before the test saw the job running."""
    slurmd = slurmd_pid(cluster, "node-4")
    scan = subprocess.Popen(
        [sys.executable, "-m", "slurmkit", "faulty", "scan", "-w", "node-[1-4]", "--checks",
         "net", "--dir", str(tmp_path), "--timeout", "200", "--net-timeout", "6", "--json",
         "--set", "setup=sleep 8"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )  # fmt: skip
    frozen = False
    try:

        def running_on_node_4() -> bool:
            out = run_slurm(["squeue", "--noheader", "-w", "node-4", "-t", "R", "-o", "%i"])
            return bool(out.stdout.strip()) or scan.poll() is not None

        poll(running_on_node_4, 120, "the scan's job to run on node-4")
        assert scan.poll() is None, "the scan ended before node-4 could be frozen"
        os.kill(slurmd, signal.SIGSTOP)
        frozen = True
        out, err = scan.communicate(timeout=240)
    finally:
        if frozen:
            os.kill(slurmd, signal.SIGCONT)
        if scan.poll() is None:
            scan.kill()
    assert scan.returncode == 1, err
    data = json.loads(out)
    results = {n["node"]: n for n in data["nodes"]}
    assert set(results) == set(NODES), "a node was lost from the report"
    assert results["node-4"]["result"] == "unknown", results["node-4"]
    assert "node-4" in hostlist.expand(data["exclude"])
    # node-2 and node-3 meet in round 1, away from node-4, 8 s after the start; the round
    # ends when node-1's pair with node-4 is killed, 6 + 30 s later. NODE_FAIL comes a
    # SlurmdTimeout (30 s) after the freeze, 49-69 s after the start (with 12 s or 20 s it
    # came first, and node-2 and node-3 read unknown). node-1's
    # round-1 partner is node-4, and the job may end NODE_FAIL before node-1's next pair:
    # then no pair tested it (unknown). A healthy node is never blamed for its frozen partner.
    assert results["node-2"]["result"] == "pass" and results["node-3"]["result"] == "pass"
    assert results["node-1"]["result"] in ("pass", "unknown"), results["node-1"]
    drained = [n.name for n in query.nodes("node-[1-4]") if n.flags & {"DRAIN"}]
    assert drained == []
    poll(_all_can_run, 120, "node-4 to answer again once thawed")
