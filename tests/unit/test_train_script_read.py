"""The training script is read by the one bounded reader, once, after its owner is checked.

Issue 30: ``sbatch/header.py`` is read without lint's FIFO and size guards would hang on a
FIFO; ``train start`` read the script three times (header, lint, ``bash -n`` by path)
before ``trusted_script`` looked at whose it is, so what was checked and what was read
could be two files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurmkit.errors import UsageError
from slurmkit.sbatch.header import MAX_SCRIPT_BYTES, read_header
from slurmkit.train import submit
from tests.unit.train_fakes import GOOD, Run, TrainCluster, cluster_fixture, script, started

cluster = cluster_fixture(TrainCluster)


def _oversized(tmp_path: Path) -> Path:
    big = tmp_path / "big.slurm"
    big.write_bytes(GOOD.encode())
    os.truncate(big, MAX_SCRIPT_BYTES + 1)  # sparse: costs no disk
    return big


def test_an_oversized_script_is_one_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=f"larger than {MAX_SCRIPT_BYTES} bytes"):
        read_header(_oversized(tmp_path))


def _in_a_child(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child Python: a read that blocks on a FIFO ends at the timeout
    (an error of this test), never by hanging the suite."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )


def test_a_fifo_header_is_one_usage_error_never_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "train.slurm"
    os.mkfifo(fifo)
    child = _in_a_child(
        "import sys\n"
        "from slurmkit.errors import UsageError\n"
        "from slurmkit.sbatch.header import read_header\n"
        "try:\n"
        "    read_header(__import__('pathlib').Path(sys.argv[1]))\n"
        "except UsageError as exc:\n"
        "    print(exc)\n",
        str(fifo),
    )
    assert child.stdout.strip().endswith("not a regular file (a FIFO, device or socket)")


@pytest.mark.parametrize("kind", ["fifo", "oversized"])
def test_train_start_on_a_fifo_or_an_oversized_script_is_one_line_exit_2(
    tmp_path: Path, kind: str
) -> None:
    if kind == "fifo":
        path = tmp_path / "train.slurm"
        os.mkfifo(path)
    else:
        path = _oversized(tmp_path)
    child = _in_a_child(
        "from slurmkit.cli import main; main()",
        "train", "start", "--dry-run", "--name", "tr", "--dir", str(tmp_path), str(path),
    )  # fmt: skip
    assert child.returncode == 2, child.stderr
    assert child.stderr.count("\n") == 1 and "Traceback" not in child.stderr
    why = "not a regular file" if kind == "fifo" else "larger than"
    assert f"script {path}: {why}" in child.stderr


def test_start_checks_the_owner_first_then_reads_the_script_once(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every open of the script is recorded beside the owner check: one open, after it;
    ``bash -n`` and lint get the bytes read, never the path."""
    path = Path(script(tmp_path)).resolve()
    events: list[str] = []
    check, real_open = submit.check_trusted, os.open

    def checking(target: Path, **kw: object) -> Path:
        events.append("check")
        return check(target, **kw)  # type: ignore[arg-type]

    def opening(target: object, *args: object, **kw: object) -> int:
        if isinstance(target, (str, Path)) and os.path.realpath(target) == str(path):
            events.append("read")
        return real_open(target, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(submit, "check_trusted", checking)
    monkeypatch.setattr(os, "open", opening)
    started(run_cli, tmp_path)
    monkeypatch.undo()
    assert events == ["check", "read"]
    bash = [c for c in cluster.slurm.calls if c[0] == "bash"]
    assert bash and all(str(path) not in word for c in bash for word in c)


def test_a_script_swapped_after_the_check_for_one_others_can_write_is_refused(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read's own descriptor is checked: a file put in place after the path was
    checked (here one group and others can write) is refused, never read into the train."""
    path = Path(script(tmp_path))
    check = submit.check_trusted

    def swapped(target: Path, **kw: object) -> Path:
        checked = check(target, **kw)  # type: ignore[arg-type]
        other = tmp_path / "other.slurm"
        other.write_text(GOOD.replace("--nodes=1", "--nodes=2"))
        other.chmod(0o666)
        other.replace(path)
        return checked

    monkeypatch.setattr(submit, "check_trusted", swapped)
    out = run_cli("train", "start", str(path), "--name", "tr", exit_code=2)
    assert "writable by group or others" in out.stderr
    assert not cluster.slurm_calls("sbatch")
