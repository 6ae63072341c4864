"""Adoption only on proof, and plans made under the lock (issue 29, items 1 and 2).

An interrupted ``train start``/``extend`` leaves an intent with a token; the array it may
have queued is adopted only when that token is read back: squeue's comment while the
controller knows the job, accounting's comment (``AccountingStoreFlags=job_comment``) or
the ``--comment=`` word of accounting's submit line after that. A job name proves
nothing: another folder's train of the same name was adopted, and then cancelled.

Slurm is faked at the argv seam (``test_train_faults.TokenCluster``); accounting answers
with the fields the caller asks for, so the same test drives the code before the fix.
"""

from __future__ import annotations

import fcntl
import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from slurmkit import _proc
from slurmkit.locks import LockBusy
from slurmkit.slurm.parse_text import DELIMITER
from slurmkit.train import control, reconcile
from slurmkit.train.state import ArrayRecord, TrainDir, now_text
from tests.fakes import Call, FakeSlurm
from tests.unit.test_train_faults import (
    FOLDER,
    clock,  # noqa: F401  (autouse: the re-check window on a fake clock)
    journal,
    kill_at,
    open_intents,
    start,
)
from tests.unit.train_fakes import (
    Killed,
    Run,
    TokenCluster,
    cluster_fixture,
    running_and_pending,
    squeue_row,
)

_SACCT_FIELDS = {
    "JobIDRaw": "job_id",
    "JobID": "display_id",
    "JobName": "name",
    "State": "state",
    "Submit": "submit",
    "Comment": "comment",
    "SubmitLine": "submit_line",
}


class Accounting(TokenCluster):
    """The token cluster, with accounting that keeps the jobs Slurm's controller forgot.

    ``history``: one dict per accounting record (``job_id``, ``comment``,
    ``submit_line``, ...); sacct answers with exactly the fields its ``--format`` asks
    for, so code that asks for fewer fields gets a well-formed answer too. ``forgotten``:
    arrays squeue no longer lists (finished longer than MinJobAge ago).
    """

    def __init__(self, slurm: FakeSlurm) -> None:
        super().__init__(slurm)
        self.history: list[dict[str, str]] = []
        self.forgotten: set[str] = set()
        self.stores_comments = False  # AccountingStoreFlags=job_comment

    def _answer(self, call: Call) -> _proc.Completed:
        key = call.argv
        if key[0] == "sacct" and any("Comment" in word for word in key):
            for watch in self.watch:
                watch(call)
            fields = next(w.split("=", 1)[1] for w in key if w.startswith("--format="))
            rows = "".join(
                DELIMITER.join(self._field(record, name) for name in fields.split(",")) + "\n"
                for record in self.history
            )
            return _proc.Completed(key, 0, rows, "", 0.0)
        if key[0] == "squeue" and any("%k" in w for w in key) and self.forgotten:
            kept = list(self.commented)
            self.commented = [(j, c) for j, c in kept if j not in self.forgotten]
            try:
                return super()._answer(call)
            finally:
                self.commented = kept
        return super()._answer(call)

    def _field(self, record: dict[str, str], name: str) -> str:
        key = _SACCT_FIELDS[name]
        if key == "comment" and not self.stores_comments:
            return ""
        return record.get(key, "")

    def submitted(self, job_id: str, comment: str = "", state: str = "COMPLETED") -> None:
        """Accounting's record of array ``job_id`` as sbatch submitted it with ``comment``."""
        line = f"sbatch --parsable --comment={comment}" if comment else ""
        self.history.append(
            {
                "job_id": job_id,
                "display_id": f"{job_id}_1",
                "name": "tr",
                "state": state,
                "submit": datetime.now().isoformat(timespec="seconds"),
                "comment": comment,
                "submit_line": line,
            }
        )


cluster = cluster_fixture(Accounting)


@pytest.fixture
def old_intents(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every intent counts as older than squeue's memory: accounting is asked too (the
    issue's "a minute later")."""
    monkeypatch.setattr(reconcile, "SQUEUE_REMEMBERS", -1.0)


def comment_of(cluster: Accounting, job_id: str) -> str:
    return next(c for j, c in cluster.commented if j == job_id)


def start_in(
    run_cli: Run, monkeypatch: pytest.MonkeyPatch, folder: Path, exit_code: int = 0
) -> object:
    """`train start --name tr` in project ``folder`` (its own ./.slurmkit/trains)."""
    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    return start(run_cli, folder, exit_code=exit_code)


def pending_row(array: str) -> str:
    return squeue_row(
        job_id=array, array_job_id=array, array_task_id="1-5%1", name="tr", user="root",
        state="PENDING", reason="JobArrayTaskLimit", time_limit="5:00",
    )  # fmt: skip


# ---------------------------------------------------------------- 1. adoption only on proof


def test_another_projects_train_of_the_same_name_is_never_adopted_nor_cancelled(
    run_cli: Run,
    cluster: Accounting,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    old_intents: None,
) -> None:
    """The issue's first finding: A's start queued nothing (its sbatch never reached
    Slurm); B, in another folder, started a train of the same name; accounting stores no
    comments (Slurm's default). A's `status` adopted B's array by its name, and A's
    `stop --now --yes` cancelled B's training. squeue shows B's own token on it."""
    a, b = tmp_path / "A", tmp_path / "B"
    cluster.sbatch_lost = cluster.squeue_down = True
    start_in(run_cli, monkeypatch, a, exit_code=2)  # A: interrupted, intent open
    cluster.sbatch_lost = cluster.squeue_down = False
    start_in(run_cli, monkeypatch, b)  # B: array 115, B's token in its comment
    cluster.submitted("115", comment_of(cluster, "115"))
    cluster.queue = pending_row("115")

    monkeypatch.chdir(a)
    status = run_cli("train", "status", "tr", exit_code=2)
    assert "adopted" not in status.stderr and "queued nothing" in status.stderr
    assert not (a / FOLDER / "train.json").exists() and open_intents(a) == []
    stop = run_cli("train", "stop", "tr", "--now", "--yes", exit_code=2)
    assert "never started" in stop.stderr and "Traceback" not in stop.stderr
    assert cluster.slurm_calls("scancel") == []
    record = json.loads((b / FOLDER / "train.json").read_text())
    assert [x["job_id"] for x in record["arrays"]] == ["115"]


def test_an_array_whose_submit_line_carries_another_token_is_not_adopted(
    run_cli: Run,
    cluster: Accounting,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    old_intents: None,
) -> None:
    """Slurm has forgotten B's finished array too (past MinJobAge): only accounting knows
    it, without a comment; its submit line still carries B's token."""
    a, b = tmp_path / "A", tmp_path / "B"
    kill_at(monkeypatch, "train.start.before-sbatch")
    with pytest.raises(Killed):
        start_in(run_cli, monkeypatch, a)
    kill_at(monkeypatch, "none")
    assert cluster.slurm_calls("sbatch") == []  # killed after its intent, before sbatch
    start_in(run_cli, monkeypatch, b)
    cluster.submitted("115", comment_of(cluster, "115"))
    cluster.forgotten = {"115"}
    monkeypatch.chdir(a)
    status = run_cli("train", "status", "tr", exit_code=2)
    assert "queued nothing" in status.stderr and "adopted" not in status.stderr
    assert not (a / FOLDER / "train.json").exists()


@pytest.mark.parametrize("stored", ["comment", "submit line"])
def test_a_killed_extend_forgotten_by_the_controller_is_adopted_by_its_token(
    run_cli: Run,
    cluster: Accounting,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    old_intents: None,
    stored: str,
) -> None:
    """The proof read back from accounting: its comment (job_comment stored) or, without
    that flag, the --comment= word of its submit line."""
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    kill_at(monkeypatch, "train.extend.submitted")
    with pytest.raises(Killed):
        run_cli("train", "extend", "--runs", "2", "--yes")
    kill_at(monkeypatch, "none")
    orphan, comment = cluster.commented[-1]
    cluster.forgotten = {orphan}
    cluster.stores_comments = stored == "comment"
    cluster.submitted(orphan, comment)
    if stored == "comment":
        cluster.history[-1]["submit_line"] = ""
    result = run_cli("train", "status", "tr")
    assert f"array {orphan}" in result.stderr and "adopted" in result.stderr
    record = json.loads((tmp_path / FOLDER / "train.json").read_text())
    assert [x["job_id"] for x in record["arrays"]] == ["115", orphan]
    assert open_intents(tmp_path) == []


def _killed_extend(cluster: Accounting) -> str:
    """The killed extend's array: gone from the controller, and accounting keeps neither
    its comment nor its submit line."""
    orphan, _ = cluster.commented[-1]
    cluster.forgotten = {orphan}
    cluster.submitted(orphan)  # no comment stored, no submit line
    return orphan


@pytest.fixture
def unprovable(
    run_cli: Run,
    cluster: Accounting,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    old_intents: None,
) -> str:
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    kill_at(monkeypatch, "train.extend.submitted")
    with pytest.raises(Killed):
        run_cli("train", "extend", "--runs", "2", "--yes")
    kill_at(monkeypatch, "none")
    return _killed_extend(cluster)


def test_an_array_whose_token_cannot_be_read_back_is_unknown_never_adopted(
    run_cli: Run, cluster: Accounting, tmp_path: Path, unprovable: str
) -> None:
    """Without proof the intent stays open, and status says which array may be the
    train's and how to settle it; before, an array of the name was adopted."""
    result = run_cli("train", "status", "tr")
    assert f"unknown: array {unprovable} may be this train's" in result.stderr
    assert f"slurmkit train settle tr --adopt {unprovable}" in result.stderr
    record = json.loads((tmp_path / FOLDER / "train.json").read_text())
    assert [x["job_id"] for x in record["arrays"]] == ["115"]
    assert [e["action"] for e in open_intents(tmp_path)] == ["extend"]
    refused = run_cli("train", "extend", "--runs", "2", "--yes", exit_code=2)
    assert "not settled" in refused.stderr and len(cluster.slurm_calls("sbatch")) == 2


def test_settle_adopt_records_the_array_a_person_vouches_for(
    run_cli: Run, cluster: Accounting, tmp_path: Path, unprovable: str
) -> None:
    dry = run_cli("train", "settle", "tr", "--adopt", unprovable, exit_code=1)  # no --yes
    assert "would adopt" in dry.stdout and open_intents(tmp_path) != []
    run_cli("train", "settle", "tr", "--adopt", unprovable, "--yes")
    record = json.loads((tmp_path / FOLDER / "train.json").read_text())
    assert [x["job_id"] for x in record["arrays"]] == ["115", unprovable]
    assert open_intents(tmp_path) == []
    wrong = run_cli("train", "settle", "tr", "--adopt", "999", "--yes", exit_code=2)
    assert "nothing to settle" in wrong.stderr


def test_settle_none_closes_the_intent_and_extend_works_again(
    run_cli: Run, cluster: Accounting, tmp_path: Path, unprovable: str
) -> None:
    wrong = run_cli("train", "settle", "tr", "--adopt", "999", "--yes", exit_code=2)
    assert "999 is not an array" in wrong.stderr and open_intents(tmp_path) != []
    run_cli("train", "settle", "tr", "--none", "--yes")
    assert open_intents(tmp_path) == []
    record = json.loads((tmp_path / FOLDER / "train.json").read_text())
    assert [x["job_id"] for x in record["arrays"]] == ["115"]
    run_cli("train", "extend", "--runs", "2", "--yes")
    assert len(cluster.slurm_calls("sbatch")) == 3


def test_settle_says_how_to_use_it(run_cli: Run, cluster: Accounting, tmp_path: Path) -> None:
    start(run_cli, tmp_path)
    for args in ((), ("--none", "--adopt", "115")):
        result = run_cli("train", "settle", "tr", *args, "--yes", exit_code=2)
        assert "--adopt ARRAY or --none" in result.stderr and "Traceback" not in result.stderr


def open_unprovable_extend(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For the confirm-rule walk: an open extend in ``folder``'s journal whose only
    candidate, array 150, cannot be proven (the lookups faked at the query layer)."""
    from slurmkit.slurm import query, recheck

    reconcile.begin(TrainDir(folder), "extend", runs=2, after="115")
    monkeypatch.setattr(recheck, "window", lambda: 0.0)
    found = query.Commented("150", "tr", "COMPLETED", "", datetime.now().astimezone())
    monkeypatch.setattr(reconcile, "SQUEUE_REMEMBERS", -1.0)
    monkeypatch.setattr(query, "commented_jobs", lambda name, user: [])
    monkeypatch.setattr(query, "commented_history", lambda name, user, since: [found])


# ---------------------------------------------------------------- 2. plans made under the lock


def _queue_read(call: Call) -> bool:
    """A read of the train's queue (not the token lookup, not the start estimate)."""
    argv = call.argv
    return argv[0] == "squeue" and not any("%k" in w for w in argv) and "--start" not in argv


def _lock_is_held(folder: Path) -> bool:
    fd = os.open(folder / ".lock", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.mark.parametrize(
    "args",
    [
        ("hold",),
        ("release",),
        ("stop", "--now"),
        ("extend", "--runs", "1"),
        ("switch", "b.slurm"),
        ("restart-run",),
    ],
)
def test_every_change_reads_the_queue_it_acts_on_under_the_lock(
    run_cli: Run, cluster: Accounting, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """The plan (which arrays, after which one) comes from the queue read while the lock
    is held; before, it was read first and acted on under the lock later."""
    start(run_cli, tmp_path)
    (tmp_path / "b.slurm").write_text((tmp_path / "a.slurm").read_text() + "echo two\n")
    cluster.queue = running_and_pending(held=args[0] == "release")
    unlocked: list[tuple[str, ...]] = []
    cluster.watch.append(
        lambda call: (
            unlocked.append(call.argv)
            if _queue_read(call) and not _lock_is_held(tmp_path / FOLDER)
            else None
        )
    )
    run_cli("train", *args, "--yes")
    assert unlocked == []


def _teammate_extends(cluster: Accounting, folder: Path, seen: list[object]) -> None:
    """At the first queue read of the command under test, a second `train extend` runs
    (without waiting for the lock): the race of the issue, made exact."""

    def watch(call: Call) -> None:
        if seen or not _queue_read(call):
            return
        seen.append("running")
        try:
            report = control.extend(TrainDir(folder, lock_wait=0), 1)
        except LockBusy as exc:
            seen[0] = exc
            return
        seen[0] = report
        new = report.lines[-1].split()[2].rstrip(":")  # "submitted array N: ..."
        cluster.queue += pending_row(new)

    cluster.watch.append(watch)


def test_two_extends_at_once_chain_never_wait_on_the_same_array(
    run_cli: Run, cluster: Accounting, tmp_path: Path
) -> None:
    """Issue 29, finding 2: two `train extend --runs 1` at once both queued an array
    waiting on the same one, and both ran the training at the same second."""
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    seen: list[object] = []
    _teammate_extends(cluster, tmp_path / FOLDER, seen)
    run_cli("train", "extend", "--runs", "1", "--yes")
    assert isinstance(seen[0], LockBusy)  # the teammate waited for the lock (here: 0 s)
    cluster.queue += pending_row("130")
    run_cli("train", "extend", "--runs", "1", "--yes")
    deps = [w for c in cluster.slurm_calls("sbatch") for w in c if w.startswith("--dependency")]
    assert deps == ["--dependency=afterany:115", "--dependency=afterany:130"]


def test_stop_plans_under_its_lock_so_an_extend_cannot_slip_in_between(
    run_cli: Run, cluster: Accounting, tmp_path: Path
) -> None:
    """The issue: `train stop --now` started 0.3 s after a teammate's extend, and the new
    array then ran all its runs: stop's plan was made before it took the lock."""
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    seen: list[object] = []
    _teammate_extends(cluster, tmp_path / FOLDER, seen)
    run_cli("train", "stop", "--now", "--yes")
    record = json.loads((tmp_path / FOLDER / "train.json").read_text())
    cancelled = {w for c in cluster.slurm_calls("scancel") for w in c}
    assert {a["job_id"] for a in record["arrays"]} <= cancelled


def test_stop_reads_the_record_again_and_cancels_an_array_added_meanwhile(
    run_cli: Run, cluster: Accounting, tmp_path: Path
) -> None:
    """An array recorded while stop cancels (a command on another host, where the file
    system's locks do not hold) is cancelled too, not left to run."""
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    folder = tmp_path / FOLDER

    def added_meanwhile(call: Call) -> None:
        if call.argv[0] != "scancel" or len(cluster.slurm_calls("scancel")) > 1:
            return
        train = TrainDir(folder)
        state = train.load_trusted()
        state.arrays.append(ArrayRecord("130", 2, now_text(), "115"))
        train.save(state)
        cluster.queue += pending_row("130")

    cluster.watch.append(added_meanwhile)
    result = run_cli("train", "stop", "--now", "--yes")
    first, second = cluster.slurm_calls("scancel")
    assert "115" in first and "130" in second and "130" not in first
    assert "130" in result.stdout and "added while stopping" in result.stdout
    outcomes = [e for e in journal(tmp_path) if e["kind"] == "outcome" and e["action"] == "stop"]
    assert [e["result"] for e in outcomes] == ["done", "done"]
