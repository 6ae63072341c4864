"""The one audit log of node changes (issue 30): one format, old lines still read, log show.

Every node command and undrain write JSON-lines records through the change core; an old
``undrain --log`` file in ``key=value`` form keeps its open intents, which the next run of
any node command settles; ``slurmkit log show`` reads both for an admin.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path

from slurmkit import journal
from slurmkit.nodechange import auditlog
from tests.unit.nodelog_lines import actions, new_line, old_line
from tests.unit.test_node import Nodes, _lock, fake  # noqa: F401


def _old_log(path: Path) -> None:
    """A log as undrain wrote it before: a finished undrain, and a drain killed mid-change."""
    path.write_text(
        old_line("node-3", "will-undrain", before="IDLE+DRAIN", token="u1")
        + old_line("node-3", "undrain", before="IDLE+DRAIN", after="IDLE", token="u1")
        + old_line("node-1", "skip", before="IDLE", why="leftovers found")
        + old_line("node-1", "will-drain", before="IDLE", token="d1", reason="bad fan")
    )
    path.chmod(0o600)


def test_an_old_key_value_log_is_read_and_its_open_drain_settled_by_a_resume(
    fake: Nodes,  # noqa: F811
    run_cli,
    tmp_path: Path,
) -> None:
    log = tmp_path / "actions.log"
    _old_log(log)
    (intent,) = auditlog.open_intents(log)
    assert (intent.action, intent.nodes, intent.fields["reason"]) == (
        "will-drain",
        ("node-1",),
        "bad fan",
    )
    fake.nodes["node-1"] = ("IDLE+DRAIN", "bad fan")  # the killed drain had gone through
    fake.nodes["node-2"] = ("IDLE+DRAIN", "other")
    result = run_cli(
        "node", "resume", "node-2", "--no-check", "--yes", "--log", str(log), *_lock(tmp_path)
    )
    assert "node-1 drain done" in result.stderr  # a resume settled the drain
    assert auditlog.open_intents(log) == []
    new = log.read_text().splitlines()[4:]
    assert new and all(journal.parse_line(ln) is not None for ln in new)  # one format: JSON
    assert actions(log)[4:] == ["drain", "will-resume", "resume"]


def test_log_show_lists_old_and_new_records_marks_open_intents_and_filters(
    fake: Nodes,  # noqa: F811
    run_cli,
    tmp_path: Path,
) -> None:
    log = tmp_path / "actions.log"
    _old_log(log)
    before = run_cli("log", "show", "--log", str(log), exit_code=0).stdout
    assert "will-drain (open)" in before  # node-1's: a drain killed mid-change
    assert "node-3" in before and "undrain" in before and "reason=bad fan" in before
    run_cli(
        "node", "drain", "node-2", "--reason", "disk", "--yes", "--log", str(log), *_lock(tmp_path)
    )
    after = run_cli("log", "show", "--log", str(log), exit_code=0).stdout
    assert "(open)" not in after and "reconciled=yes" in after  # the drain run settled it
    one = json.loads(run_cli("log", "show", "--log", str(log), "--node", "node-2", "--json").stdout)
    assert [(r["node"], r["action"], r["open"]) for r in one["records"]] == [
        ("node-2", "will-drain", False),
        ("node-2", "drain", False),
    ]
    # the old lines are a day old: --since 1h keeps only this run's two
    day_old = (datetime.now().astimezone() - timedelta(days=1)).replace(microsecond=0)
    log.write_text(
        "".join(
            f"{day_old.isoformat()} {ln.split(' ', 1)[1]}\n"
            if not ln.startswith("{")
            else ln + "\n"
            for ln in log.read_text().splitlines()
        )
    )
    recent = json.loads(run_cli("log", "show", "--log", str(log), "--since", "1h", "--json").stdout)
    assert [r["action"] for r in recent["records"]] == ["drain-failed", "will-drain", "drain"]
    run_cli("log", "show", "--log", str(log), "--node", "node-4", exit_code=1)


def test_log_show_refuses_bad_input_with_one_line(run_cli, tmp_path: Path) -> None:
    assert run_cli("log", "show", "--log", str(tmp_path / "none"), exit_code=1).stderr.endswith(
        "no log yet\n"
    )
    for args in (["--since", "7"], ["--node", "n[1-"]):
        result = run_cli("log", "show", "--log", str(tmp_path / "none"), *args, exit_code=2)
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = run_cli("log", "show", "--log", str(fifo), exit_code=2)
    assert "not a regular file" in result.stderr and len(result.stderr.splitlines()) == 1


def test_an_undrain_killed_half_way_is_settled_by_a_node_command(
    fake: Nodes,  # noqa: F811
    run_cli,
    tmp_path: Path,
) -> None:
    """One core settles every open intent, whichever command wrote it (before, the node
    commands settled only their own will-drain/resume/reboot and left undrain's open)."""
    log = tmp_path / "actions.log"
    log.write_text(
        old_line("node-1", "will-undrain", before="IDLE+DRAIN", token="u9")
        + new_line("node-2", "will-kill", before="IDLE+DRAIN", token="k9", pids="300")
    )
    log.chmod(0o600)
    result = run_cli(
        "node", "drain", "node-4", "--reason", "x", "--yes", "--log", str(log), *_lock(tmp_path)
    )
    assert "node-1 undrain done: not drained" in result.stderr
    assert "node-2 kill interrupted" in result.stderr
    assert auditlog.open_intents(log) == []
    assert actions(log)[2:4] == ["kill-interrupted", "undrain"]
