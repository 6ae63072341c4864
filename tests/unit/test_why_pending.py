"""``why`` on pending jobs, replayed from real Slurm outputs of 22.05, 24.11 and 26.05.

tests/fixtures/why/pending/slurm-<version>/ holds every call ``why`` made for each
scenario of tests/integration/test_why_pending.py on a real sandbox (see SOURCES.md
there): the fake Slurm answers exactly those argv with exactly those outputs, so a
call ``why`` did not make then fails the test, and the call count is the real one.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from slurmkit.slurm import query
from slurmkit.slurm.parse_text import DELIMITER
from slurmkit.why import pending
from slurmkit.why.model import Verdict
from tests.fakes.slurm import FakeSlurm

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "why" / "pending"
VERSIONS = ("22.05", "24.11", "26.05")
SEP = "<SEP>"


def folder(version: str) -> Path:
    return HERE / f"slurm-{version}"


def meta(version: str) -> dict:
    return json.loads((folder(version) / "index.json").read_text())


def _swap(text: str) -> str:
    return text.replace(SEP, DELIMITER)


def replay(fake: FakeSlurm, version: str, role: str) -> str:
    """Answer the scenario's recorded calls and its ``scontrol show job``; its job id."""
    data = meta(version)
    job_id = data["ids"][role]
    base = folder(version)
    for name, call in data["calls"].items():
        if not name.startswith(f"{role}-"):
            continue
        out = _swap((base / f"{name}.out").read_text())
        err = (base / f"{name}.err").read_text()
        fake.on([_swap(a) for a in call["command"]], answer=(call["exit_code"], out, err))
    fake.on(
        ["scontrol", "--details", "show", "job", job_id], (base / f"{role}-job.out").read_text()
    )
    return job_id


def recorded_now(version: str) -> datetime:
    return datetime.fromtimestamp(meta(version)["recorded"]).astimezone()


def explain(fake: FakeSlurm, version: str, role: str, **kwargs: object) -> tuple[Verdict, int]:
    job_id = replay(fake, version, role)
    job = query.job(job_id)
    before = len(fake.calls)
    verdict = pending.explain(job, now=recorded_now(version), **kwargs)  # type: ignore[arg-type]
    return verdict, len(fake.calls) - before


@pytest.fixture(autouse=True)
def _commands_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURMKIT_BACKEND", "commands")


@pytest.mark.parametrize("version", VERSIONS)
def test_resources_is_first_in_line_with_factors_estimate_and_what_if(
    fake_slurm: FakeSlurm, version: str
) -> None:
    verdict, calls = explain(fake_slurm, version, "resources")
    job = meta(version)["ids"]["resources"]
    assert verdict.headline == (
        f"job {job} waits for free nodes: it is 1st of 2 in line in partition cpu"
    )
    assert verdict.kind == "pending"
    assert [e.label for e in verdict.evidence] == [
        "rank",
        "priority",
        "start",
        "what-if",
        "what-if",
    ]
    assert verdict.evidence[1].text == "priority 1"
    assert verdict.evidence[2].text.startswith("Slurm expects it to start at ")
    assert [a["change"] for a in verdict.data["what_if"]] == [["--time=00:05:00"], ["--nodes=1"]]
    assert all(a["start"] for a in verdict.data["what_if"])  # 26.05's stray word is read past
    assert calls == 4  # squeue, sprio, sbatch --test-only twice


@pytest.mark.parametrize("version", VERSIONS)
def test_priority_is_second_behind_the_first(fake_slurm: FakeSlurm, version: str) -> None:
    verdict, calls = explain(fake_slurm, version, "priority")
    ids = meta(version)["ids"]
    assert verdict.headline == (
        f"job {ids['priority']} waits for jobs of higher priority: "
        "it is 2nd of 2 in line in partition cpu"
    )
    assert verdict.evidence[0].text.startswith(
        f"2nd of 2 in line in partition cpu; ahead of it (priority): {ids['resources']} (1)"
    )
    assert calls == 4


@pytest.mark.parametrize("version", VERSIONS)
def test_dependency_names_the_job_and_its_state(fake_slurm: FakeSlurm, version: str) -> None:
    verdict, calls = explain(fake_slurm, version, "dependency")
    ids = meta(version)["ids"]
    assert verdict.headline == (
        f"job {ids['dependency']} waits for job {ids['hang']} (afterok): RUNNING on node-[1-2]"
    )
    assert calls == 2


@pytest.mark.parametrize("version", VERSIONS)
def test_held_by_user_and_by_admin(fake_slurm: FakeSlurm, version: str) -> None:
    ids = meta(version)["ids"]
    user, calls = explain(fake_slurm, version, "held")
    assert user.headline == f"job {ids['held']} is held by its user: scontrol release {ids['held']}"
    assert user.advice == (f"scontrol release {ids['held']}",)
    assert [e.label for e in user.evidence] == ["held"]  # no "no estimate" line for a held job
    admin, _ = explain(fake_slurm, version, "admin")
    assert admin.headline == f"job {ids['admin']} is held by an administrator"
    assert any("does not record who held" in n for n in admin.notes)
    assert calls == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_begin_time(fake_slurm: FakeSlurm, version: str) -> None:
    verdict, calls = explain(fake_slurm, version, "begin")
    job = meta(version)["ids"]["begin"]
    assert verdict.headline.startswith(f"job {job} may not start before 2026-")
    assert verdict.headline.endswith("(in 60 min) (--begin)")
    assert [e.label for e in verdict.evidence] == ["begin"]  # the estimate is the begin time
    assert calls == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_unavailable_node_names_its_drain_reason_author_and_time(
    fake_slurm: FakeSlurm, version: str
) -> None:
    verdict, calls = explain(fake_slurm, version, "nodes")
    job = meta(version)["ids"]["nodes"]
    assert verdict.headline.startswith(
        f"job {job} waits for node-4, out of service: IDLE+DRAIN, "
        "reason 'slurmkit why test: bad fan' (root, 2026-11-29T"
    )
    assert (
        verdict.advice[0] == "it asks for node-4 by name (-w): drop or change -w to run elsewhere"
    )
    assert calls == 2


@pytest.mark.parametrize("role", ["resources", "nodes", "dependency", "held"])
def test_calls_do_not_grow_with_the_queue(fake_slurm: FakeSlurm, role: str) -> None:
    """O(1): the same calls for a queue of 3 pending jobs and one of 3000."""
    small, small_calls = explain(fake_slurm, "24.11", role)
    big = FakeSlurm()
    job_id = replay(big, "24.11", role)
    name = next(n for n in meta("24.11")["calls"] if n.startswith(f"{role}-1-"))
    rows = _swap((folder("24.11") / f"{name}.out").read_text()).splitlines()
    extra = [_renumbered(row, 100000 + i) for i in range(1000) for row in rows[:3]]
    big.on(
        [_swap(a) for a in meta("24.11")["calls"][name]["command"]], "\n".join(rows + extra) + "\n"
    )
    import slurmkit._proc as proc

    saved, proc.runner = proc.runner, big
    try:
        job = query.job(job_id)
        before = len(big.calls)
        verdict = pending.explain(job, now=recorded_now("24.11"))
        big_calls = len(big.calls) - before
    finally:
        proc.runner = saved
    assert big_calls == small_calls
    assert verdict.kind == small.kind


def _renumbered(row: str, job_id: int) -> str:
    fields = row.split(DELIMITER)
    fields[0] = fields[1] = str(job_id)
    return DELIMITER.join(fields)


def test_partition_time_limit_says_it_will_not_start(fake_slurm: FakeSlurm) -> None:
    base = folder("22.05")
    text = (base / "held-job.out").read_text()
    text = text.replace("Reason=JobHeldUser", "Reason=PartitionTimeLimit").replace(
        "Priority=0", "Priority=5"
    )
    fake_slurm.on("scontrol --details show job *", text)
    fake_slurm.on(["squeue", "**"], "")
    fake_slurm.on(
        ["scontrol", "--all", "show", "partition"],
        "PartitionName=cpu\n   MaxTime=00:02:00 Nodes=node-[1-4]\n",
    )
    job = query.job("1")
    verdict = pending.explain(job, now=recorded_now("22.05"))
    assert verdict.severity == "bad"
    assert verdict.headline.endswith(
        "asks for 00:05:00 but partition cpu allows at most 00:02:00: it will not start as it is"
    )


def test_an_unknown_reason_is_shown_as_slurm_says_it(fake_slurm: FakeSlurm) -> None:
    text = (
        (folder("24.11") / "held-job.out")
        .read_text()
        .replace("Reason=JobHeldUser", "Reason=FrontEndDown")
    )
    fake_slurm.on("scontrol --details show job *", text)
    fake_slurm.on(["squeue", "**"], "")
    verdict = pending.explain(query.job("1"))
    assert verdict.headline.endswith("is pending: FrontEndDown")


def test_a_failing_queue_read_is_a_note_not_a_traceback(fake_slurm: FakeSlurm) -> None:
    job_id = replay(fake_slurm, "22.05", "begin")
    fake_slurm.on(
        ["squeue", "**"], rc=1, stderr="squeue: error: Unable to contact slurm controller"
    )
    verdict = pending.explain(query.job(job_id), now=recorded_now("22.05"))
    assert any(n.startswith("the partition's queue could not be read: ") for n in verdict.notes)
    assert "may not start before" in verdict.headline


def test_what_if_is_not_asked_for_another_users_job(fake_slurm: FakeSlurm) -> None:
    verdict, calls = explain(fake_slurm, "22.05", "resources", caller="alice")
    assert "what_if" not in verdict.data
    assert calls == 2


def _variant(fake: FakeSlurm, version: str, role: str, old: str, new: str) -> str:
    """A recorded job record with one field changed: for reasons no recording holds."""
    text = (folder(version) / f"{role}-job.out").read_text()
    assert old in text
    job_id = meta(version)["ids"][role]
    fake.on(["scontrol", "--details", "show", "job", job_id], text.replace(old, new))
    fake.on(["squeue", "**"], "")
    return job_id


def test_launch_failure_requeued_held_names_the_node(fake_slurm: FakeSlurm) -> None:
    job_id = _variant(
        fake_slurm, "24.11", "held", "Reason=JobHeldUser", "Reason=launch_failed_requeued_held"
    )
    verdict = pending.explain(query.job(job_id))
    assert verdict.headline == f"job {job_id} failed to launch and was requeued held"
    assert verdict.severity == "bad"
    assert verdict.advice[0].endswith(f"then scontrol release {job_id}")


def test_a_dependency_that_can_never_be_satisfied_says_so(fake_slurm: FakeSlurm) -> None:
    job_id = _variant(
        fake_slurm, "22.05", "dependency", "Reason=Dependency", "Reason=DependencyNeverSatisfied"
    )
    verdict = pending.explain(query.job(job_id))
    hang = meta("22.05")["ids"]["hang"]
    assert verdict.headline == (
        f"job {job_id} can never start: its dependency failed "
        f"({hang} (afterok): ended and forgotten by slurmctld)"
    )
    assert verdict.severity == "bad"


def test_a_reservation_is_named(fake_slurm: FakeSlurm) -> None:
    job_id = _variant(
        fake_slurm, "26.05", "held", "Reason=JobHeldUser", "Reason=Reservation Reservation=maint"
    )
    verdict = pending.explain(query.job(job_id))
    assert verdict.headline == f"job {job_id} waits for its reservation maint"


@pytest.mark.parametrize(
    ("role", "owner", "limit"),
    [
        ("qos", "QOS skwhyq's limit on jobs per user", "QOS skwhyq: MaxJobsPU=1"),
        ("assoc", "association root/root's limit on jobs", "association root/root: MaxJobs=1"),
    ],
)
def test_a_limit_names_its_maximum_and_usage(
    fake_slurm: FakeSlurm, role: str, owner: str, limit: str
) -> None:
    """Recorded on 22.05 only, with limits enforced (see SOURCES.md): a QOS of
    MaxJobsPerUser=1 and root's association root/root with MaxJobs=1, one job running."""
    verdict, calls = explain(fake_slurm, "22.05", role)
    job = meta("22.05")["ids"][role]
    assert verdict.headline == (
        f"job {job} is held back by its {owner}: max 1 (1 of root's jobs run under it now)"
    )
    assert [(e.label, e.text) for e in verdict.evidence[:2]] == [
        ("limit", limit),
        ("usage", "1 of root's jobs run under it now"),
    ]
    assert calls == 3


@pytest.mark.parametrize(
    ("reason", "field", "counted"),
    [
        ("QOSMaxJobsPerUserLimit", "MaxJobsPU", "running"),
        ("QOSMaxSubmitJobPerUserLimit", "MaxSubmitPU", "submitted"),
        ("QOSMaxCpuPerUserLimit", "MaxTRESPU", "cpu"),
        ("QOSMaxNodePerUserLimit", "MaxTRESPU", "node"),
        ("QOSGrpCpuLimit", "GrpTRES", "cpu"),
        ("QOSMaxJobsPerAccount", "MaxJobsPA", "running"),
        ("QOSMaxWallDurationPerJobLimit", "MaxWall", ""),
        ("AssocGrpJobsLimit", "GrpJobs", "running"),
    ],
)
def test_each_limit_reason_names_its_field(reason: str, field: str, counted: str) -> None:
    """Slurm's reason names (slurm.h's job_state_reason strings) to the sacctmgr field."""
    match = pending._LIMIT.match(reason)
    assert match is not None
    assert pending._limit_field(match["kind"], match["what"]) == (field, counted)
