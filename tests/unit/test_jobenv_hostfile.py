"""Hostfile formats (golden text, read back with each launcher's grammar) and atomic writes."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from slurmkit import files
from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.jobenv import hostfile

HOSTS = ("node-42", "node-49", "gpu1")
SLOTS = (8, 8, 4)

GOLDEN = {
    "deepspeed": "node-42 slots=8\nnode-49 slots=8\ngpu1 slots=4\n",
    "openmpi": "node-42 slots=8\nnode-49 slots=8\ngpu1 slots=4\n",
    "mpich": "node-42:8\nnode-49:8\ngpu1:4\n",
    "plain": "node-42\nnode-49\ngpu1\n",
}


@pytest.mark.parametrize("fmt", sorted(GOLDEN))
def test_golden(fmt: str) -> None:
    assert hostfile.render(HOSTS, SLOTS, fmt) == GOLDEN[fmt]


def test_golden_json() -> None:
    text = hostfile.render(HOSTS, SLOTS, "json")
    assert json.loads(text) == [
        {"host": "node-42", "slots": 8},
        {"host": "node-49", "slots": 8},
        {"host": "gpu1", "slots": 4},
    ]
    assert text.endswith("]\n")


def _deepspeed_reads(text: str) -> dict[str, int]:
    """DeepSpeed's runner grammar (``_parse_hostfile``): ``^(\\S+)\\s+slots=(\\d+)``, no repeats."""
    pool: dict[str, int] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.search(r"^(\S+)\s+slots=(\d+)", line)
        assert match, f"DeepSpeed would reject {line!r}"
        assert match.group(1) not in pool, "DeepSpeed rejects a host listed twice"
        pool[match.group(1)] = int(match.group(2))
    return pool


def _openmpi_reads(text: str) -> dict[str, int]:
    """Open MPI hostfile: ``host [slots=N] [max_slots=M]``, one host per line."""
    pool: dict[str, int] = {}
    for line in text.splitlines():
        match = re.fullmatch(r"(\S+)(?:\s+slots\s*=\s*(\d+))?(?:\s+max_slots\s*=\s*\d+)?", line)
        assert match, f"Open MPI would reject {line!r}"
        pool[match.group(1)] = int(match.group(2) or 1)
    return pool


def _hydra_reads(text: str) -> dict[str, int]:
    """MPICH Hydra (``mpiexec -f``): ``host[:N]`` per line."""
    pool: dict[str, int] = {}
    for line in text.splitlines():
        match = re.fullmatch(r"([^\s:]+)(?::(\d+))?", line)
        assert match, f"Hydra would reject {line!r}"
        pool[match.group(1)] = int(match.group(2) or 1)
    return pool


@pytest.mark.parametrize(
    ("fmt", "reader"),
    [("deepspeed", _deepspeed_reads), ("openmpi", _openmpi_reads), ("mpich", _hydra_reads)],
)
def test_each_launcher_reads_back_hosts_and_slots_in_order(fmt: str, reader) -> None:
    pool = reader(hostfile.render(HOSTS, SLOTS, fmt))
    assert list(pool) == list(HOSTS)
    assert list(pool.values()) == list(SLOTS)


def test_plain_is_hydra_one_process_per_host() -> None:
    assert _hydra_reads(hostfile.render(HOSTS, SLOTS, "plain")) == dict.fromkeys(HOSTS, 1)


def test_unknown_format_and_length_mismatch() -> None:
    with pytest.raises(UsageError, match="unknown hostfile format 'slurm'"):
        hostfile.render(HOSTS, SLOTS, "slurm")
    with pytest.raises(ValueError, match="3 hosts but 2 slot counts"):
        hostfile.render(HOSTS, (1, 2), "plain")


# ---------------------------------------------------------------- atomic write


def test_write_creates_file_with_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        path = files.write_atomic(tmp_path / "hostfile", "a slots=1\n")
    finally:
        os.umask(old)
    assert path.read_text() == "a slots=1\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["hostfile"]


def test_write_replaces_by_rename_so_readers_never_see_half(tmp_path: Path) -> None:
    target = tmp_path / "hostfile"
    target.write_text("old\n")
    reader = target.open()  # a launcher that opened the old file keeps reading it whole
    files.write_atomic(target, "new\n")
    assert reader.read() == "old\n"
    reader.close()
    assert target.read_text() == "new\n"


def test_failed_write_leaves_target_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "hostfile"
    target.write_text("old\n")

    def broken_replace(src: str, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(EnvironmentProblem, match=r"cannot write .*hostfile: No space left"):
        files.write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["hostfile"]


def test_missing_directory_and_directory_target(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        files.write_atomic(tmp_path / "nope" / "hostfile", "x\n")
    (tmp_path / "dir").mkdir()
    with pytest.raises(UsageError, match="it is a directory"):
        files.write_atomic(tmp_path / "dir", "x\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]


def test_unwritable_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mkstemp refused (root ignores modes, so the refusal is simulated)."""

    def refuse(**kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files.tempfile, "mkstemp", refuse)
    with pytest.raises(EnvironmentProblem, match="Permission denied"):
        files.write_atomic(tmp_path / "hostfile", "x\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "bad", ["-oProxyCommand=touch /tmp/x", "-n1", "", "a b", "n1\tn2", "n\x1b[2J"]
)
def test_a_name_a_launcher_would_misread_is_refused(bad: str) -> None:
    """Issue 14: hostfile wrote '-oProxyCommand=...' as a host, which ssh takes as an option."""
    with pytest.raises(UsageError, match="refusing node name"):
        hostfile.render(["node-1", bad], [1, 1], "deepspeed")


def test_the_cli_refuses_a_nodelist_with_a_dash_name_in_one_line() -> None:
    import subprocess
    import sys

    argv = [sys.executable, "-m", "slurmkit", "hostfile", "--nodelist", "-oProxyCommand=x"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "refusing node name" in done.stderr
