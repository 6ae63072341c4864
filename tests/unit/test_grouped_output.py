"""Every report that lists nodes prints one line per group of alike nodes (issue 20 item 5).

At the CLI, through the shared fake Slurm: ``undrain`` (plan and result), ``nodes
drained``, the ``node`` commands and ``run``'s failures fold alike nodes into one line
with a count; ``-v`` prints one line per node; ``--json`` keeps one record per node,
in the shape it had. (``faulty scan``: tests/unit/test_faulty_scan.py.)
"""

from __future__ import annotations

import json

import pytest

from slurmkit.remote.result import NodeResult
from slurmkit.slurm import query
from slurmkit.slurm.parse_text import DELIMITER
from tests.fakes import FakeSlurm

KTF = "Kill task failed"


def _show(nodes: dict[str, tuple[str, str | None]]) -> str:
    """22.05's multi-line ``scontrol show node`` for these nodes (state, reason)."""
    records = []
    for name, (state, reason) in nodes.items():
        lines = [f"NodeName={name} Arch=x86_64 CoresPerSocket=2 ", f"   State={state} CPUTot=8"]
        if reason:
            lines.append(f"   Reason={reason} [root@2026-11-21T00:03:40]")
        records.append("\n".join(lines))
    return "\n\n".join(records) + "\n"


def _body(out: str) -> list[str]:
    """The table's rows, without the header and the rule under it."""
    return out.splitlines()[2:]


@pytest.fixture
def down_candidates(fake_slurm: FakeSlurm) -> FakeSlurm:
    """vnode-[1-40] down and drained by "Kill task failed" (all skipped), one idle one
    drained for another reason (not a candidate)."""
    nodes: dict[str, tuple[str, str | None]] = {
        f"vnode-{i}": ("DOWN+DRAIN", KTF) for i in range(1, 41)
    }
    nodes["node-1"] = ("IDLE+DRAIN", "disk")
    return fake_slurm.on(["scontrol", "--all", "show", "node"], _show(nodes))


def test_undrain_plan_of_40_alike_nodes_is_one_line(down_candidates: FakeSlurm, run_cli) -> None:
    result = run_cli("undrain", "--dry-run", exit_code=1)
    header, _, *rows = result.stdout.splitlines()
    assert header.split()[:4] == ["nodes", "count", "old", "state"]
    assert len(rows) == 1 and rows[0].startswith("vnode-[1-40] ")  # 40 nodes, one line
    assert rows[0].split()[1] == "40" and "skipped: DOWN" in rows[0]


def test_undrain_v_is_one_line_per_node(down_candidates: FakeSlurm, run_cli) -> None:
    rows = _body(run_cli("undrain", "--dry-run", "-v", exit_code=1).stdout)
    assert [r.split()[0] for r in rows] == [f"vnode-{i}" for i in range(1, 41)]


def test_undrain_json_keeps_a_record_per_node(down_candidates: FakeSlurm, run_cli) -> None:
    report = json.loads(run_cli("undrain", "--dry-run", "--json", exit_code=1).stdout)
    assert [n["node"] for n in report["nodes"]] == [f"vnode-{i}" for i in range(1, 41)]
    assert set(report["nodes"][0]) == {
        "node",
        "old_state",
        "reason",
        "found",
        "verdict",
        "processes",
        "killed",
        "action",
        "why",
        "new_state",
        "returned",
    }


ROWS = [
    [KTF, "root", "2026-11-21T00:04:10", "drained", "node-[2,7-9]"],
    ["Not responding", "slurm", "2026-11-21T00:04:10", "down*", "node-3"],
    [KTF, "root", "2026-11-21T00:04:10", "drained", "node-10"],  # same key, another row
]


@pytest.fixture
def reasons(fake_slurm: FakeSlurm) -> FakeSlurm:
    out = "".join(DELIMITER.join(r) + "\n" for r in ROWS)
    return fake_slurm.on(query.drain_reasons_argv(), out)


def test_nodes_drained_folds_and_counts_per_reason(reasons: FakeSlurm, run_cli) -> None:
    out = run_cli("nodes", "drained").stdout
    assert out.splitlines()[0].split() == ["nodes", "count", "reason", "user", "time", "state"]
    rows = _body(out)
    assert len(rows) == 2
    assert rows[0].split()[:2] == ["node-[2,7-10]", "5"] and KTF in rows[0]
    assert rows[1].split()[:2] == ["node-3", "1"]


def test_nodes_drained_v_and_json(reasons: FakeSlurm, run_cli) -> None:
    rows = _body(run_cli("nodes", "drained", "-v").stdout)
    names = ["node-2", "node-7", "node-8", "node-9", "node-3", "node-10"]  # sinfo's row order
    assert [r.split()[0] for r in rows] == names
    data = json.loads(run_cli("nodes", "drained", "--json").stdout)
    assert [d["nodes"] for d in data] == ["node-[2,7-9]", "node-3", "node-10"]  # as before
    assert set(data[0]) == {"reason", "user", "time", "state", "nodes", "count"}


def test_node_drain_plan_is_grouped(fake_slurm: FakeSlurm, run_cli) -> None:
    nodes: dict[str, tuple[str, str | None]] = {f"node-{i}": ("IDLE", None) for i in range(1, 6)}
    nodes["node-6"] = ("IDLE+DRAIN", "disk")
    fake_slurm.on(["scontrol", "--all", "show", "node", "node-[1-6]"], _show(nodes))
    args = ("node", "drain", "node-[1-6]", "--reason", "rack", "--dry-run")
    rows = _body(run_cli(*args).stdout)
    assert [r.split()[:2] for r in rows] == [["node-[1-5]", "5"], ["node-6", "1"]]
    assert len(_body(run_cli(*args, "-v").stdout)) == 6
    report = json.loads(run_cli(*args, "--json").stdout)
    assert [n["node"] for n in report["nodes"]] == [f"node-{i}" for i in range(1, 7)]


def test_run_failures_are_one_line_per_way_of_failing(
    monkeypatch: pytest.MonkeyPatch, run_cli
) -> None:
    from slurmkit import remote
    from slurmkit.remote import RunOutcome

    def refused(node: str) -> NodeResult:
        error = f"ssh: connect to host {node} port 22: Connection refused"
        return NodeResult(node, "unreachable", "", "", None, 0.1, error)

    results = [NodeResult("node-1", "ok", "up\n", "", 0, 0.1)]
    results += [refused(f"node-{i}") for i in range(2, 201)]
    monkeypatch.setattr(remote, "run", lambda *a, **k: RunOutcome("ssh", results))
    out = run_cli("run", "-w", "node-[1-200]", "--via", "ssh", "--", "uptime", exit_code=1)
    assert out.stdout.splitlines()[-1] == (
        "node-[2-200] (199 nodes): unreachable: ssh: connect to host <node> port 22: "
        "Connection refused"
    )
    per_node = run_cli(
        "run", "-v", "-w", "node-[1-200]", "--via", "ssh", "--", "uptime", exit_code=1
    )
    assert per_node.stdout.splitlines()[-1] == (
        "node-200: unreachable: ssh: connect to host node-200 port 22: Connection refused"
    )
    data = json.loads(
        run_cli("run", "--json", "-w", "node-[1-200]", "--", "uptime", exit_code=1).stdout
    )
    assert len(data["nodes"]) == 200
