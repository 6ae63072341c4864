"""The intent journal: written before acting, readable after a crash, refusing when it can't."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slurmkit import journal


def test_intent_then_outcome_closes_it(tmp_path: Path) -> None:
    j = journal.Journal(tmp_path / "journal")
    token = j.intent("train-start", jobs=[], name="t1")
    assert [e.token for e in j.open_intents()] == [token]
    j.outcome(token, "train-start", "done", job_id="42")
    assert j.open_intents() == []
    lines = (tmp_path / "journal").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["intent", "outcome"]
    assert json.loads(lines[1])["job_id"] == "42"


def test_torn_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    j = journal.Journal(path)
    token = j.intent("undrain", nodes=["node-1"])
    with open(path, "a") as handle:
        handle.write('{"kind":"outcome","tok')  # a crash in the middle of a write
    contents = journal.read(path)
    assert contents.torn_lines == 1
    assert [e.token for e in j.open_intents()] == [token]


def test_unique_tokens_and_comment() -> None:
    tokens = {journal.new_token() for _ in range(1000)}
    assert len(tokens) == 1000
    assert journal.comment_for("abc") == "slurmkit:abc"


def test_symlinked_journal_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text("")
    os.symlink(tmp_path / "elsewhere", tmp_path / "journal")
    with pytest.raises(journal.JournalProblem, match="symbolic link"):
        journal.Journal(tmp_path / "journal").intent("x")
    assert (tmp_path / "elsewhere").read_text() == ""


def test_missing_directory_is_one_clear_problem(tmp_path: Path) -> None:
    with pytest.raises(journal.JournalProblem, match="cannot write journal"):
        journal.Journal(tmp_path / "gone" / "journal").intent("x")


def test_check_writable_refuses_a_full_file_system(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.statvfs(tmp_path)

    class Full:
        f_bavail, f_frsize, f_files, f_favail = 0, real.f_frsize, real.f_files, real.f_favail

    monkeypatch.setattr(journal.os, "statvfs", lambda _path: Full)
    with pytest.raises(journal.JournalProblem, match=r"no space left.*nothing was done"):
        journal.Journal(tmp_path / "journal").check_writable()
    assert not (tmp_path / "journal").exists()
