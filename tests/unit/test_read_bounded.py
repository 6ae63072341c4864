"""The one bounded reader: FIFOs, device links, huge files, bad UTF-8 and foreign owners."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.files import read_bounded, read_text_bounded


def test_a_small_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc\n")
    assert read_bounded(path) == b"abc\n"
    assert read_text_bounded(path) == "abc\n"


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        read_bounded(fifo, what="config")


def test_a_link_to_dev_zero_is_refused_even_when_links_are_followed(tmp_path: Path) -> None:
    link = tmp_path / "zero"
    link.symlink_to("/dev/zero")
    with pytest.raises(UsageError, match="not a regular file"):
        read_bounded(link, follow_links=True)
    with pytest.raises(UsageError, match="symbolic link"):
        read_bounded(link)


def test_a_link_to_a_file_is_read_only_when_links_are_followed(tmp_path: Path) -> None:
    (tmp_path / "real").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_bounded(tmp_path / "link", follow_links=True) == b"x"
    with pytest.raises(UsageError):
        read_bounded(tmp_path / "link")


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * 101)
    with pytest.raises(UsageError, match="larger than 100 bytes"):
        read_bounded(path, max_bytes=100)
    assert read_bounded(path, max_bytes=101) == b"x" * 101


def test_bad_utf8_is_one_usage_error_or_replaced_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "latin1"
    path.write_bytes(b"caf\xe9\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        read_text_bounded(path, what="health config")
    assert read_text_bounded(path, errors="replace") == "caf\ufffd\n"


def test_a_directory_and_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="directory"):
        read_bounded(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "absent")


def test_the_error_type_is_the_callers(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(EnvironmentProblem):
        read_bounded(tmp_path / "fifo", error=EnvironmentProblem)


def test_a_group_writable_file_is_refused_when_its_owner_must_be_trusted(tmp_path: Path) -> None:
    path = tmp_path / "state"
    path.write_text("{}")
    path.chmod(0o664)
    assert read_bounded(path) == b"{}"
    with pytest.raises(UsageError, match="writable by group or others"):
        read_bounded(path, trusted_owner=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the file away")
def test_a_file_of_another_user_is_refused_when_its_owner_must_be_trusted(tmp_path: Path) -> None:
    path = tmp_path / "state"
    path.write_text("{}")
    os.chown(path, 2001, 2001)
    with pytest.raises(UsageError, match="owned by uid 2001"):
        read_bounded(path, trusted_owner=True)
