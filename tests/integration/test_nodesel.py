"""Node groups, ``-w``/``-x`` and the old ``--nodes`` spelling on the real sandbox.

The sandbox has no reservation and no node feature, so the tests make them (a reservation
that starts in a week, so no job is kept off a node; a feature on node-3 and node-4) and
remove them afterwards. Every group is counted in ``_exec.call_log``: one Slurm call each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.hostlist import fold
from slurmkit.slurm import _exec, query
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll, submit

RESERVED = "node-[2-3]"
FEATURED = "node-[3-4]"
REASON = "sk-nodesel-test"


@pytest.fixture
def reservation(cluster: sandbox.SandboxSpec) -> Iterator[str]:
    """A reservation of node-[2-3] starting in 7 days (nothing is held off the nodes now)."""
    name = f"sk-nodesel-{uuid.uuid4().hex[:6]}"
    run_slurm(
        [
            "scontrol", "create", "reservation", f"ReservationName={name}", f"Nodes={RESERVED}",
            "StartTime=now+7days", "Duration=10", "Users=root",
        ]
    )  # fmt: skip
    try:
        yield name
    finally:
        run_slurm(["scontrol", "delete", f"ReservationName={name}"])


def _features() -> dict[str, str]:
    out = run_slurm(["sinfo", "--all", "--noheader", "--Node", "--format=%N %f"]).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if line.strip())


@pytest.fixture
def feature(cluster: sandbox.SandboxSpec) -> Iterator[str]:
    """A feature offered by node-3 and node-4 only; each node's own features are put back."""
    name = f"skf{uuid.uuid4().hex[:6]}"
    before = _features()
    run_slurm(
        ["scontrol", "update", f"NodeName={FEATURED}", f"AvailableFeatures={name}",
         f"ActiveFeatures={name}"]
    )  # fmt: skip
    try:
        yield name
    finally:
        for node in ("node-3", "node-4"):
            old = "" if before.get(node, "(null)") == "(null)" else before[node]
            run_slurm(
                ["scontrol", "update", f"NodeName={node}", f"AvailableFeatures={old}",
                 f"ActiveFeatures={old}"]
            )  # fmt: skip


@pytest.fixture
def job(cluster: sandbox.SandboxSpec) -> Iterator[str]:
    """A running 2-node job."""
    job_id = submit("-N2", "-J", "sk-nodesel", "--wrap", "sleep 300")
    poll(lambda: query.jobs(job_ids=[job_id])[0].state == "RUNNING", 60, "job to run")
    try:
        yield job_id
    finally:
        run_slurm(["scancel", job_id])


@pytest.fixture
def drained_back() -> Iterator[list[str]]:
    """Nodes a test may drain; each one still drained with this test's reason is resumed."""
    touched: list[str] = []
    yield touched
    nodes = query.nodes(fold(touched or ["node-1"]), exact_reasons=True)
    left = [n.name for n in nodes if (n.reason or "").startswith(REASON)]
    if left:
        run_slurm(["scontrol", "update", f"nodename={fold(left)}", "state=resume"])


def _drained(names: str) -> list[str]:
    return [n.name for n in query.nodes(names, exact_reasons=True) if "DRAIN" in n.flags]


def _fold(run_cli, *args: str) -> tuple[str, int]:
    """``nodes fold ARGS`` in process: its output and the Slurm calls it made."""
    start = len(_exec.call_log)
    out = run_cli("nodes", "fold", *args).stdout.strip()
    return out, len(_exec.call_log) - start


@pytest.mark.smoke
def test_each_group_kind_is_one_slurm_call(
    run_cli, cluster: sandbox.SandboxSpec, reservation: str, feature: str, job: str
) -> None:
    expected = {
        "@partition:gpu": "node-[1-4]",
        "@all": "node-[1-4]",
        f"@reservation:{reservation}": RESERVED,
        f"@feature:{feature}": FEATURED,
        f"@job:{job}": fold(query.job_nodelist(job)),
    }
    for group, nodes in expected.items():
        assert _fold(run_cli, group) == (nodes, 1), group
    out, calls = _fold(run_cli, "@state:idle")
    assert (out, calls) == (fold(query.nodes_in_state("idle")), 1)
    # all six kinds in one list: six calls, never one per node
    every = ",".join([*expected, "@state:idle", "login-1"])
    out, calls = _fold(run_cli, every)
    assert calls == 6 and out == "login-1,node-[1-4]"


def test_state_group_and_exclude_on_a_command_that_acts(
    run_cli, cluster: sandbox.SandboxSpec, feature: str, drained_back: list[str]
) -> None:
    """node drain @feature:F -x node-4 drains node-3 only; @state:drain then finds it."""
    drained_back.extend(["node-3", "node-4"])
    result = run_cli(
        "node", "drain", f"@feature:{feature}", "-x", "node-4", "--reason", REASON, "--yes",
        "--json",
    )  # fmt: skip
    assert [r["node"] for r in json.loads(result.stdout)["nodes"]] == ["node-3"]
    assert _drained(FEATURED) == ["node-3"]
    start = len(_exec.call_log)
    names = run_cli("nodes", "expand", "@state:drain", "-x", "@state:down").stdout.split()
    assert "node-3" in names and "node-4" not in names
    assert len(_exec.call_log) - start == 2  # one sinfo -t per group


def test_exclude_removing_every_node_changes_nothing(
    run_cli, cluster: sandbox.SandboxSpec, feature: str, drained_back: list[str]
) -> None:
    drained_back.extend(["node-3", "node-4"])
    result = run_cli(
        "node", "drain", f"@feature:{feature}", "-x", f"@feature:{feature}", "--reason", REASON,
        "--yes", exit_code=2,
    )  # fmt: skip
    assert "names no node (an empty list is refused)" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert _drained(FEATURED) == []


@pytest.mark.parametrize(
    ("group", "message"),
    [
        ("@partition:nope", "no such partition 'nope'"),
        ("@reservation:nope", "no such reservation 'nope'"),
        ("@state:bogus", "no such node state 'bogus'"),
        ("@rack:3", "the kinds are @partition:NAME, @state:STATE, @job:ID"),
        ("@job:999999", "unknown job 999999"),
    ],
)
def test_bad_groups_are_one_line_exit_2_and_nothing_acts(
    run_cli, cluster: sandbox.SandboxSpec, drained_back: list[str], group: str, message: str
) -> None:
    drained_back.append("node-1")
    result = run_cli("node", "drain", f"node-1,{group}", "--reason", REASON, "--yes", exit_code=2)
    assert message in result.stderr and len(result.stderr.splitlines()) == 1
    assert _drained("node-1") == []


def test_a_group_with_no_node_is_the_empty_list_error(
    run_cli, cluster: sandbox.SandboxSpec
) -> None:
    result = run_cli("nodes", "expand", "@feature:sk-no-such-feature", exit_code=2)
    assert "names no node" in result.stderr


def _cron_line(*args: str) -> subprocess.CompletedProcess[str]:
    """slurmkit as cron runs it: its own process, stdin not a terminal."""
    return subprocess.run(
        [sys.executable, "-m", "slurmkit", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )


def test_old_undrain_cron_line_still_works_and_warns_once(
    cluster: sandbox.SandboxSpec, drained_back: list[str], tmp_path: Path
) -> None:
    """``slurmkit undrain --yes --nodes LIST`` from an old crontab returns the node, warned once."""
    drained_back.append("node-2")
    run_slurm(["scontrol", "update", "nodename=node-2", "state=drain", f"reason={REASON}"])
    done = _cron_line(
        "undrain", "--yes", "--nodes", "node-2", "--reason", f"^{REASON}$", "--json",
        "--lock", str(tmp_path / "lock"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "deprecated" in line]
    assert warnings == [
        "slurmkit: warning: --nodes LIST is deprecated: use -w/--nodelist LIST "
        "(-N/--nodes is a count in Slurm)"
    ]
    assert [o["node"] for o in json.loads(done.stdout)["nodes"]] == ["node-2"]
    poll(lambda: not _drained("node-2"), 30, "node-2 returned")


def test_undrain_exclude_keeps_a_node_drained(
    run_cli, cluster: sandbox.SandboxSpec, drained_back: list[str], tmp_path: Path
) -> None:
    drained_back.extend(["node-1", "node-2"])
    run_slurm(["scontrol", "update", "nodename=node-[1-2]", "state=drain", f"reason={REASON}"])
    result = run_cli(
        "undrain", "-w", "@partition:gpu", "-x", "node-1", "--reason", f"^{REASON}$", "--yes",
        "--json", "--lock", str(tmp_path / "lock"),
    )  # fmt: skip
    assert [o["node"] for o in json.loads(result.stdout)["nodes"]] == ["node-2"]
    assert _drained("node-[1-2]") == ["node-1"]
