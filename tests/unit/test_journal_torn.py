"""A journal that survives torn writes (issue 29, item 3).

A crash mid-append, or a short write on a full disk, leaves a record without its end.
The next record must start on a line of its own (it was glued to the fragment and lost:
an extend killed after its sbatch left an array nobody adopted), a short write is cut
back, and a cut or glued line is caught by the record's checksum, never half-read.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurmkit.journal import Journal, JournalProblem, read
from tests.unit.test_train_cli import Run, running_and_pending
from tests.unit.test_train_faults import FOLDER, TokenCluster, clock, cluster, start

__all__ = ["clock", "cluster"]  # fixtures, used by name


def three_records(path: Path) -> tuple[bytes, bytes, list[str]]:
    """A journal of a hold (intent, outcome) and an extend's intent: (bytes before the
    last record, all bytes, the tokens in order)."""
    j = Journal(path)
    hold = j.intent("hold", arrays=["115"], user="me", pid=12, host="login1")
    j.outcome(hold, "hold", "done")
    before = path.read_bytes()
    extend = j.intent("extend", runs=2, after="115", user="me", pid=13, host="login1")
    return before, path.read_bytes(), [hold, hold, extend]


def test_a_record_cut_at_every_byte_offset_is_never_half_read_and_the_next_starts_afresh(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal"
    before, whole, tokens = three_records(path)
    for cut in range(len(before), len(whole)):
        path.write_bytes(whole[:cut])
        contents = read(path)
        if cut == len(whole) - 1:  # only the newline is missing: the record is whole
            assert [e.token for e in contents.entries] == tokens and contents.torn_lines == 0
        else:
            assert [e.token for e in contents.entries] == tokens[:2], cut
            assert contents.torn_lines == (1 if cut > len(before) else 0), cut
        # the next record (the extend's outcome) is read whole whatever the cut left
        Journal(path).outcome(tokens[2], "extend", "done", job_id="130")
        last = read(path).entries[-1]
        assert (last.kind, last.token, last.details.get("job_id")) == ("outcome", tokens[2], "130")


def test_a_changed_byte_is_caught_by_the_checksum_never_read(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    _, whole, tokens = three_records(path)
    path.write_bytes(whole.replace(b'"after":"115"', b'"after":"116"'))
    contents = read(path)
    assert [e.token for e in contents.entries] == tokens[:2]
    assert contents.torn_lines == 1


def test_a_line_glued_to_a_fragment_is_caught(tmp_path: Path) -> None:
    """What the old append made: a fragment, then a whole record on the same line."""
    path = tmp_path / "journal"
    _, whole, tokens = three_records(path)
    lines = whole.split(b"\n")
    path.write_bytes(b"\n".join([lines[0], lines[1][:40] + lines[2], b""]))
    contents = read(path)
    assert [e.token for e in contents.entries] == tokens[:1] and contents.torn_lines == 1


def test_a_journal_written_before_checksums_is_read_as_before(tmp_path: Path) -> None:
    """Records without a checksum (slurmkit before issue 29) are accepted as they were."""
    path = tmp_path / "journal"
    old = [
        {"kind": "intent", "token": "a1", "action": "hold", "time": "t", "arrays": ["115"]},
        {"kind": "outcome", "token": "a1", "action": "hold", "time": "t", "result": "done"},
        {"kind": "intent", "token": "b2", "action": "stop", "time": "t", "arrays": ["115"]},
    ]
    text = "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in old)
    path.write_text(text)
    contents = read(path)
    assert [(e.kind, e.token) for e in contents.entries] == [
        ("intent", "a1"),
        ("outcome", "a1"),
        ("intent", "b2"),
    ]
    assert contents.torn_lines == 0
    assert [e.token for e in Journal(path).open_intents()] == ["b2"]


def test_torn_lines_are_reported_on_stderr_with_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "journal"
    _, whole, _ = three_records(path)
    path.write_bytes(whole[:-30])
    read(path)
    read(path)  # read again by the same command: said once
    err = capsys.readouterr().err
    assert err.count(f"{path}:3:") == 1, err
    assert "torn" in err


# ---------------------------------------------------------------- real short writes


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs (root only; skipped otherwise): a file system that really fills up."""
    where = tmp_path / "mnt"
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    options = "size=256k,nr_inodes=64,mode=0755"
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> Path:
    """Fill the file system of ``folder`` to the last page."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 4096)
    return filler


def leave_in_last_page(path: Path, room: int) -> None:
    """Pad the journal with blank lines (skipped by readers) so ``room`` bytes remain in
    its last page: a record longer than that needs a page the full disk does not have."""
    page = os.statvfs(path.parent).f_frsize
    size = path.stat().st_size
    with path.open("ab") as handle:
        handle.write(b"\n" * ((-size - room) % page))


def test_a_real_short_write_on_a_full_tmpfs_is_cut_back(tiny_tmpfs: Path) -> None:
    path = tiny_tmpfs / "journal"
    j = Journal(path)
    token = j.intent("hold", arrays=["115"])
    leave_in_last_page(path, 40)
    filler = fill(tiny_tmpfs)
    before = path.read_bytes()
    with pytest.raises(JournalProblem, match="No space left"):
        j.outcome(token, "hold", "done")
    assert path.read_bytes() == before  # no fragment left behind
    filler.unlink()
    j.outcome(token, "hold", "done")
    contents = read(path)
    assert [e.kind for e in contents.entries] == ["intent", "outcome"]
    assert contents.torn_lines == 0


def test_after_a_crash_mid_write_the_next_record_starts_on_its_own_line(tmp_path: Path) -> None:
    """The issue's `action=resum`: a fragment without a newline (a crash, or a writer that
    did not cut back), then the next append."""
    path = tmp_path / "journal"
    j = Journal(path)
    token = j.intent("extend", runs=1)
    with path.open("ab") as handle:
        handle.write(b'{"action":"resum')
    j.outcome(token, "extend", "done", job_id="130")
    contents = read(path)
    assert [e.kind for e in contents.entries] == ["intent", "outcome"]
    assert contents.torn_lines == 1
    assert j.open_intents() == []


# ---------------------------------------------------------------- train status warns


def test_train_status_warns_that_an_intent_may_be_missing(
    run_cli: Run, cluster: TokenCluster, tmp_path: Path
) -> None:
    start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    with (tmp_path / FOLDER / "journal").open("ab") as handle:
        handle.write(b'{"action":"extend","kind":"int\n')
    result = run_cli("train", "status")
    assert f"{tmp_path / FOLDER / 'journal'}:3:" in result.stderr, result.stderr
    assert "intent may be missing" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
