"""Settling by evidence, per action (issue 29, items 4 and 8 of "Why").

The next run settles what a killed one left open by judging each intent against its own
stamp (slurmkit/nodechange/settle.py), not by the state at settle time:

- a reboot interrupted before its request (the node still IDLE, BootTime unchanged) was
  settled "reboot done (now IDLE)"; it is "not done" now, and done only on a REBOOT_* flag
  or a BootTime at or after the intent;
- a node the killed undrain had returned, drained again before the next run, was logged
  ``undrain-failed``; a drain newer than the intent is "returned, drained again since";
- what the state cannot tell is "unknown" (``-undetermined``, closing the intent), never
  "failed".

The tests through the commands failed before the fix (``reboot done``, ``undrain-failed``);
the table test holds the README's copy of the table to the code's.
"""

from __future__ import annotations

import json
import re
import shlex
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from slurmkit.nodechange import auditlog, settle
from slurmkit.slurm.records import Node
from slurmkit.undrain import undrain
from tests.fakes import FakeSlurm
from tests.unit.nodelog_lines import new_line, old_line
from tests.unit.test_node import Nodes, _lock
from tests.unit.test_undrain_flow import Cluster, _opts, _yes

README = Path(__file__).parents[2] / "README.md"
# what the fakes print: test_node's BootTime, and the reason stamp of both fakes (local time)
FAKE_BOOT = datetime.fromisoformat("2026-11-20T23:44:16").astimezone()
FAKE_REASON_TIME = datetime.fromisoformat("2026-11-21T00:03:40").astimezone()
INTENT = datetime(2026, 11, 21, 12, 0, 0).astimezone()


def _node(state: str, reason_time: datetime | None = None, boot: datetime | None = None,
          reason: str | None = None) -> Node:  # fmt: skip
    base, *flags = state.split("+")
    return Node(
        name="node-1",
        state=base,
        flags=frozenset(flags),
        reason=reason,
        reason_time=reason_time,
        boot_time=boot,
    )


def _asked(**fields: str) -> settle.Asked:
    return settle.Asked(INTENT, fields)


SECOND = timedelta(seconds=1)
SEEN = (INTENT - timedelta(hours=1)).isoformat()


@pytest.mark.parametrize(
    ("action", "node", "fields", "result"),
    [
        # reboot: a flag, or a boot at/after the intent; IDLE alone proves nothing
        ("will-reboot", _node("IDLE", boot=INTENT - timedelta(days=1)), {}, settle.NOT_DONE),
        ("will-reboot", _node("IDLE+REBOOT_REQUESTED", boot=INTENT - SECOND), {}, settle.DONE),
        ("will-reboot", _node("DOWN+REBOOT_ISSUED", boot=INTENT - SECOND), {}, settle.DONE),
        ("will-reboot", _node("IDLE", boot=INTENT + 3 * SECOND), {}, settle.DONE),
        ("will-reboot", _node("IDLE", boot=INTENT), {}, settle.DONE),
        ("will-reboot", _node("DOWN", boot=INTENT - SECOND), {}, settle.UNKNOWN),
        ("will-reboot", _node("IDLE"), {}, settle.UNKNOWN),
        ("will-reboot", None, {}, settle.UNKNOWN),
        # undrain: against the drain's own date
        ("will-undrain", _node("IDLE"), {"drained_at": SEEN}, settle.DONE),
        ("will-undrain", _node("IDLE+DRAIN", INTENT - timedelta(hours=1)), {"drained_at": SEEN},
         settle.NOT_DONE),
        ("will-undrain", _node("IDLE+DRAIN", INTENT + 5 * SECOND), {"drained_at": SEEN},
         settle.DONE),
        ("will-undrain", _node("IDLE+DRAIN", INTENT), {"drained_at": SEEN}, settle.DONE),
        ("will-undrain", _node("IDLE+DRAIN", INTENT - 2 * SECOND), {"drained_at": SEEN},
         settle.UNKNOWN),
        ("will-undrain", _node("IDLE+DRAIN"), {"drained_at": SEEN}, settle.UNKNOWN),
        ("will-undrain", None, {}, settle.UNKNOWN),
        # a log from before drained_at: the intent's own second cannot be placed
        ("will-undrain", _node("IDLE+DRAIN", INTENT - SECOND), {}, settle.NOT_DONE),
        ("will-undrain", _node("IDLE+DRAIN", INTENT), {}, settle.UNKNOWN),
        ("will-undrain", _node("IDLE+DRAIN", INTENT + SECOND), {}, settle.DONE),
        # resume: as undrain, and a DOWN node counts as not returned
        ("will-resume", _node("IDLE"), {}, settle.DONE),
        ("will-resume", _node("DOWN", INTENT + SECOND), {"drained_at": SEEN}, settle.DONE),
        ("will-resume", _node("DOWN", INTENT - timedelta(hours=1)), {"drained_at": SEEN},
         settle.NOT_DONE),
        # drain: by its reason
        ("will-drain", _node("IDLE+DRAIN", reason="fan"), {"reason": "fan"}, settle.DONE),
        ("will-drain", _node("IDLE"), {"reason": "fan"}, settle.NOT_DONE),
        ("will-drain", _node("IDLE+DRAIN", reason="other"), {"reason": "fan"}, settle.UNKNOWN),
    ],
)  # fmt: skip
def test_each_judge_weighs_the_evidence(
    action: str, node: Node | None, fields: dict[str, str], result: str
) -> None:
    verdict = settle.judge(action, node, _asked(**fields))
    assert verdict.result == result, verdict
    assert verdict.why  # every verdict says on what evidence


def test_an_intent_stamp_that_does_not_parse_is_unknown_where_time_decides() -> None:
    asked = settle.Asked.of("not-a-time", {})
    assert asked.when is None
    verdict = settle.judge("will-reboot", _node("IDLE", boot=INTENT), asked)
    assert verdict.result == settle.UNKNOWN


# ---------------------------------------------------------------- through the commands


def _stamped(line: str, when: datetime) -> str:
    """An action-log line as a run at ``when`` wrote it."""
    return f"{when.isoformat(timespec='seconds')} {line.split(' ', 1)[1].rstrip()}\n"


def _fields(line: str) -> dict[str, str]:
    """A log line's fields, JSON (as written now) or key=value (as written before)."""
    if line.startswith("{"):
        return {k: str(v) for k, v in json.loads(line).items()}
    return dict(w.split("=", 1) for w in shlex.split(line)[1:])


@pytest.fixture
def nodes(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Nodes:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return Nodes(fake_slurm, {"node-1": ("IDLE", None), "node-2": ("IDLE", None)})


def test_a_reboot_interrupted_before_its_request_is_settled_not_done(
    nodes: Nodes, run_cli, tmp_path: Path
) -> None:
    """Ctrl-C after the will-reboot intent, before ``scontrol reboot`` left: BootTime is
    the fake's, from before the intent, and no reboot flag. Was: "reboot done (now IDLE)"."""
    log = tmp_path / "node.log"
    log.write_text(new_line("node-1", "will-reboot", before="IDLE", token="r1"))
    result = run_cli("node", "drain", "node-2", "--reason", "y", "--yes", "--log", str(log),
                     *_lock(tmp_path))  # fmt: skip
    assert "node-1 reboot not done: no reboot flag, booted" in result.stderr, result.stderr
    settled = _fields(log.read_text().splitlines()[1])
    assert (settled["node"], settled["action"], settled["reconciled"]) == (
        "node-1", "reboot-failed", "yes",
    )  # fmt: skip
    assert "before the intent" in settled["evidence"]
    assert auditlog.open_intents(log) == []


def test_a_reboot_whose_node_went_down_without_a_flag_is_unknown_not_failed(
    nodes: Nodes, run_cli, tmp_path: Path
) -> None:
    nodes.nodes["node-1"] = ("DOWN", "Not responding")
    log = tmp_path / "node.log"
    log.write_text(old_line("node-1", "will-reboot", before="IDLE", token="r2"))
    result = run_cli("node", "drain", "node-2", "--reason", "y", "--yes", "--log", str(log),
                     *_lock(tmp_path))  # fmt: skip
    assert "node-1 reboot unknown" in result.stderr, result.stderr
    assert _fields(log.read_text().splitlines()[1])["action"] == "reboot-undetermined"
    assert auditlog.open_intents(log) == []  # settled as far as it can be: closed


def test_a_reboot_request_slurm_accepted_but_did_not_keep_is_not_read_as_done(
    nodes: Nodes, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read-back right after the call uses the same judge: IDLE with the old BootTime
    and no flag is not a reboot (it was "done" because the node was IDLE)."""
    answer = nodes._answer

    def lost(argv: list[str]) -> tuple[int, str, str]:
        return (0, "", "") if argv[:2] == ["scontrol", "reboot"] else answer(argv)

    monkeypatch.setattr(nodes, "_answer", lost)  # the fake's route looks it up per call
    log = tmp_path / "node.log"
    result = run_cli("node", "reboot", "node-1", "--no-wait", "--yes", "--log", str(log),
                     *_lock(tmp_path), exit_code=1)  # fmt: skip
    assert "failed" in result.stdout and "rebooted" not in result.stdout
    assert [_fields(ln)["action"] for ln in log.read_text().splitlines()] == [
        "will-reboot", "reboot-failed",
    ]  # fmt: skip


@pytest.fixture
def drained(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cluster:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return Cluster(fake_slurm)


def test_a_node_returned_then_drained_again_is_settled_returned(
    drained: Cluster, tmp_path: Path
) -> None:
    """undrain killed after returning node-2; node-2 drained again (at the fakes' reason
    time, after the intent) before the next run. Was: ``undrain-failed``, "still drained"."""
    intent_at = FAKE_REASON_TIME - timedelta(minutes=3)
    seen = (intent_at - timedelta(hours=2)).isoformat(timespec="seconds")
    log = tmp_path / "actions.log"
    line = old_line("node-2", "will-undrain", before="IDLE+DRAIN", token="u1",
                           drained_at=seen)  # fmt: skip
    log.write_text(_stamped(line, intent_at))
    drained.nodes["node-2"] = ("IDLE+DRAIN", "Kill task failed")
    drained.leftovers["node-2"] = ["sleep 600"]  # not clean now: this run leaves it drained
    report = undrain(_opts(tmp_path, log=log), _yes)
    (text,) = report.reconciled
    stamp = FAKE_REASON_TIME.isoformat(timespec="seconds")
    assert text == (
        f"node-2 undrain done: returned, drained again since {stamp} (Kill task failed) "
        "(now IDLE+DRAIN)"
    )
    settled = _fields(log.read_text().splitlines()[1])
    assert (settled["action"], settled["reconciled"]) == ("undrain", "yes")
    assert auditlog.open_intents(log) == []


def test_the_same_drain_still_there_is_still_drained(drained: Cluster, tmp_path: Path) -> None:
    log = tmp_path / "actions.log"
    seen = FAKE_REASON_TIME.isoformat(timespec="seconds")
    line = old_line("node-2", "will-undrain", before="IDLE+DRAIN", token="u2",
                           drained_at=seen)  # fmt: skip
    log.write_text(_stamped(line, FAKE_REASON_TIME + timedelta(minutes=1)))
    drained.nodes["node-2"] = ("IDLE+DRAIN", "Kill task failed")
    drained.leftovers["node-2"] = ["sleep 600"]
    report = undrain(_opts(tmp_path, log=log), _yes)
    seen_at = FAKE_REASON_TIME.isoformat(timespec="seconds")
    assert report.reconciled == [
        f"node-2 undrain not done: the drain of {seen_at} is still there (now IDLE+DRAIN)"
    ]
    assert _fields(log.read_text().splitlines()[1])["action"] == "undrain-failed"


def test_an_undrain_intent_records_the_date_of_the_drain_it_clears(
    drained: Cluster, tmp_path: Path
) -> None:
    drained.nodes["node-1"] = ("IDLE+DRAIN", "Kill task failed")
    log = tmp_path / "actions.log"
    undrain(_opts(tmp_path, log=log), _yes)
    intent = _fields(log.read_text().splitlines()[0])
    assert intent["action"] == "will-undrain"
    assert intent["drained_at"] == FAKE_REASON_TIME.isoformat(timespec="seconds")


# ---------------------------------------------------------------- the table, written down


def _rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and re.fullmatch(r"`will-\w+`", cells[0]):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_the_readme_prints_the_code_s_table() -> None:
    start = README.read_text().index("### Settling by evidence")
    written = _rows(README.read_text()[start : start + 6000])
    assert written == {
        action: [judge.done, judge.not_done, judge.unknown]
        for action, judge in settle.JUDGES.items()
    }
