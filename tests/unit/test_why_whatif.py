"""What-if: the job's request rebuilt for ``sbatch --test-only``, and Slurm's answer read.

The answers are the real ``sbatch --test-only`` stderr of 22.05, 24.11 and 26.05
(tests/fixtures/why/pending/), the requests the real ``scontrol show job`` records.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from test_why_pending import VERSIONS, folder, meta, recorded_now, replay

from slurmkit.errors import ControllerUnreachable, SlurmkitError
from slurmkit.slurm import pendingq, query
from slurmkit.slurm.records import Job
from slurmkit.why import whatif
from tests.fakes.slurm import FakeSlurm


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("call", ["resources-3-sbatch", "resources-4-sbatch"])
def test_each_versions_answer_is_read(version: str, call: str) -> None:
    recorded = meta(version)["calls"][call]
    stderr = (folder(version) / f"{call}.err").read_text()
    answer = pendingq.parse_test_only(recorded["command"], recorded["exit_code"], stderr)
    assert answer.start is not None and answer.start.year == 2026
    assert answer.partition == "cpu"
    assert answer.nodes.startswith("node-")
    assert answer.cpus in (8, 16)
    assert answer.refusal == ""


def test_a_request_that_cannot_run_is_a_refusal_not_an_error() -> None:
    # 22.05, live: sbatch --test-only -p cpu -N2 --exclusive --time=5 -w node-4 --wrap true
    stderr = "allocation failure: Requested node configuration is not available\n"
    answer = pendingq.parse_test_only(["sbatch", "--test-only"], 1, stderr)
    assert answer.start is None
    assert answer.refusal == "allocation failure: Requested node configuration is not available"


def test_an_unreachable_controller_raises(fake_slurm: FakeSlurm) -> None:
    fake_slurm.on(
        ["sbatch", "**"],
        rc=1,
        stderr="sbatch: error: Batch job submission failed: Unable to contact slurm controller",
    )
    with pytest.raises(ControllerUnreachable):
        pendingq.test_only(["--partition=cpu"])


@pytest.mark.parametrize("version", VERSIONS)
def test_the_request_is_rebuilt_from_the_job_record(fake_slurm: FakeSlurm, version: str) -> None:
    job = query.job(replay(fake_slurm, version, "resources"))
    options = whatif.request_options(job)
    assert options == {
        "--partition": "cpu",
        "--nodes": "2",
        "--ntasks": "2",
        "--cpus-per-task": "1",
        "--time": "00:10:00",
        "--qos": "normal",
        "--account": "root",
        "--exclusive": "",
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_a_shared_job_is_not_made_exclusive(fake_slurm: FakeSlurm, version: str) -> None:
    """26.05 prints OverSubscribe=NO for every job; only its Exclusive= says --exclusive."""
    job = query.job(replay(fake_slurm, version, "held"))
    assert "--exclusive" not in whatif.request_options(job)


def test_the_changes_are_half_the_time_and_half_the_nodes(fake_slurm: FakeSlurm) -> None:
    job = query.job(replay(fake_slurm, "24.11", "priority"))
    changes = whatif.changes(job, whatif.request_options(job))
    assert [c for c, _ in changes] == [("--time=00:10:00",), ("--nodes=1",)]
    assert changes[1][1]["--ntasks"] == "1" and changes[1][1]["--time"] == "00:20:00"


def test_a_one_node_one_minute_job_has_nothing_to_try() -> None:
    job = Job(job_id="9", num_nodes=1, raw={"TimeLimit": "00:01:00", "Partition": "cpu"})
    assert whatif.changes(job, whatif.request_options(job)) == []


def test_a_job_named_nodes_keeps_them() -> None:
    raw = {"TimeLimit": "00:01:00", "NumNodes": "2", "ReqNodeList": "node-[1-2]"}
    job = Job(job_id="9", num_nodes=2, raw=raw)
    assert whatif.changes(job, whatif.request_options(job)) == []


def test_a_squeue_row_has_no_request() -> None:
    with pytest.raises(SlurmkitError, match="request is unknown"):
        whatif.request_options(Job(job_id="9"))


@pytest.mark.parametrize("version", VERSIONS)
def test_earlier_is_compared_with_slurms_own_estimate(fake_slurm: FakeSlurm, version: str) -> None:
    job = query.job(replay(fake_slurm, version, "resources"))
    now = recorded_now(version)
    late = now + timedelta(days=2)
    answers = whatif.ask(job, late, now=now)
    assert [a.earlier for a in answers] == [True, True]
    assert all(" earlier" in a.text and a.text.startswith("with --") for a in answers)
    early = whatif.ask(job, now, now=now)
    assert [a.earlier for a in early] == [False, False]
    assert early[0].text.startswith("with --time=00:05:00 it would not start earlier (2026-")
    assert len(fake_slurm.calls_to("sbatch")) == 4  # two per ask, never more


def test_no_estimate_reports_the_start_without_a_gain(fake_slurm: FakeSlurm) -> None:
    job = query.job(replay(fake_slurm, "22.05", "resources"))
    answers = whatif.ask(job, None, now=datetime.now().astimezone())
    assert answers[0].text.startswith("with --time=00:05:00 it could start at 2026-")
    assert "earlier" not in answers[0].text
