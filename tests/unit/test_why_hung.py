"""``why`` on a running job: quiet and fine, or hung with a node to suspect.

The stacks are the real py-spy dumps of the live hang (four ranks on node-[1-2], rank 1
in ``wait_for_peer`` on node-1) recorded on 22.05, 24.11 and 26.05 with
tests/integration/test_why_pending.py; the suspect node's state is its recorded
``scontrol show node``.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest
from test_why_pending import VERSIONS, folder, meta

from slurmkit import pyspy
from slurmkit.errors import SlurmkitError
from slurmkit.pyspy.records import NodeStacks, Problem, ProcessStack
from slurmkit.pyspy.stack import parse_dump
from slurmkit.slurm.records import Job
from slurmkit.why import hung
from tests.fakes.slurm import FakeSlurm


def _collection(version: str, job: Job, problems: tuple[Problem, ...] = ()) -> pyspy.Collection:
    kept = json.loads((folder(version) / "hang-stacks.json").read_text())
    by_node: dict[str, list[ProcessStack]] = defaultdict(list)
    for p in kept:
        stack = ProcessStack(
            p["node"], p["pid"], p["role"], p["status"], text=p["text"], dump=parse_dump(p["text"])
        )
        by_node[p["node"]].append(stack)
    reports = tuple(
        NodeStacks(node, tuple(procs), problems, len(procs)) for node, procs in by_node.items()
    )
    return pyspy.Collection(job.job_id, job, "srun", 30.0, reports)


def _node_route(fake: FakeSlurm, version: str) -> None:
    call = meta(version)["calls"]["hang-3-scontrol"]
    out = (folder(version) / "hang-3-scontrol.out").read_text()
    fake.on(call["command"], out)


def _job(out: Path | None = None) -> Job:
    return Job(
        job_id="58", state="RUNNING", nodelist="node-[1-2]", std_out=str(out) if out else None
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_the_odd_rank_names_its_node(fake_slurm: FakeSlurm, version: str) -> None:
    _node_route(fake_slurm, version)
    job = _job()
    verdict = hung.explain(
        job, hung.Options(stacks=True), collect=lambda j, jb, s: _collection(version, jb)
    )
    assert verdict.kind == "hung" and verdict.severity == "bad"
    assert verdict.headline == (
        "job 58 looks hung: 1 rank on node-1 in wait_for_peer (prog.py:13) "
        "while 3 wait in allreduce (prog.py:18): suspect node-1"
    )
    assert [e.label for e in verdict.evidence] == ["ranks", "odd ranks", "node-1"]
    assert verdict.evidence[2].text.startswith("ALLOCATED")
    assert verdict.data["suspect_nodes"] == ["node-1"]
    assert verdict.advice[1] == "resubmit without it: --exclude=node-1"
    assert fake_slurm.count("scontrol") == 1  # one node read, whatever the rank count


def test_all_ranks_alike_is_no_odd_rank(fake_slurm: FakeSlurm) -> None:
    job = _job()
    whole = _collection("24.11", job)
    alike = [r for r in whole.reports if r.node == "node-2"]
    collection = pyspy.Collection("58", job, "srun", 30.0, tuple(alike))
    verdict = hung.explain(job, hung.Options(stacks=True), collect=lambda *a: collection)
    assert verdict.kind == "hung" and verdict.severity == "warning"
    assert verdict.headline == (
        "job 58: all 2 ranks wait in allreduce (prog.py:18): no odd rank, "
        "suspect what they all wait for (I/O, the network)"
    )
    assert fake_slurm.calls == []


def test_py_spy_missing_is_a_note(fake_slurm: FakeSlurm) -> None:
    job = _job()
    missing = Problem(
        "node-1", "py_spy_missing", "py-spy not installed on node-1 (pip install py-spy)"
    )
    collection = pyspy.Collection(
        "58", job, "srun", 30.0, (NodeStacks("node-1", (), (missing,), None),)
    )
    verdict = hung.explain(job, hung.Options(stacks=True), collect=lambda *a: collection)
    assert verdict.kind == "running" and verdict.severity == "warning"
    assert verdict.notes[-1] == "node-1: py-spy not installed on node-1 (pip install py-spy)"


def test_a_collection_that_fails_is_a_note(fake_slurm: FakeSlurm) -> None:
    def failing(*args: object) -> pyspy.Collection:
        raise SlurmkitError("srun: cannot start a step")

    verdict = hung.explain(_job(), hung.Options(stacks=True), collect=failing)
    assert verdict.kind == "running"
    assert "no stacks: srun: cannot start a step" in verdict.notes


def test_fresh_output_is_not_dumped(tmp_path: Path) -> None:
    out = tmp_path / "slurm-58.out"
    out.write_text("step 10\n")

    def never(*args: object) -> pyspy.Collection:
        raise AssertionError("dumped a job whose output grows")

    verdict = hung.explain(_job(out), hung.Options(stale=600), collect=never)
    assert verdict.kind == "running" and verdict.severity == "ok"
    assert verdict.headline.startswith("job 58 is running on node-[1-2]; its output grew ")


def test_stale_output_is_dumped(fake_slurm: FakeSlurm, tmp_path: Path) -> None:
    _node_route(fake_slurm, "22.05")
    out = tmp_path / "slurm-58.out"
    out.write_text("step 10\n")
    old = time.time() - 3600
    os.utime(out, (old, old))
    job = _job(out)
    verdict = hung.explain(
        job, hung.Options(stale=600), collect=lambda j, jb, s: _collection("22.05", jb)
    )
    assert verdict.kind == "hung"
    assert hung.output_age(job) is not None and hung.output_age(job) >= 3600 - 5  # type: ignore[operator]
