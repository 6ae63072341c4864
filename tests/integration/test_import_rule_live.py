"""Issue 28 items 1 and 2 on the sandbox: root's faulty scan and a train's runs import no
module a user left in the job's folder, ``$TMPDIR`` or the train folder.

``json.py``, ``datetime.py`` and ``torch.py`` are planted in each of those folders; each
leaves a marker file when imported, and any marker fails the test. The nodes have no
GPU: a fake ``nvidia-smi`` on the job's PATH makes the GPU checks go on to ask the
node's python3 for torch, which is where the planted ``torch.py`` was imported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from slurmkit.faulty import excluded
from tests.integration.test_train import (
    Train,
    start,
    train_factory,  # noqa: F401 (a fixture)
    training_script,
    wait_sourced,
    write,
)

MODULES = ("json", "datetime", "torch")
TORCH_CHECKS = ("cuda", "gpu-mem", "nccl")


def _plant(folder: Path, marks: Path, label: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in MODULES:
        mark = marks / f"{label}-{name}"
        (folder / f"{name}.py").write_text(f"open({str(mark)!r}, 'w').close()\n")
    return folder


def _marks(tmp_path: Path) -> Path:
    marks = tmp_path / "marks"
    marks.mkdir()
    marks.chmod(0o777)
    return marks


def test_import_rule_root_scan_imports_nothing_from_the_admins_folder_or_tmpdir(
    cluster, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    os.chmod(tmp_path, 0o755)
    marks = _marks(tmp_path)
    work = _plant(tmp_path / "work", marks, "cwd")
    work.chmod(0o777)  # the folder the admin scans from, a shared one
    tmpdir = _plant(tmp_path / "tmp", marks, "tmpdir")
    tmpdir.chmod(0o1777)
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    smi = fakebin / "nvidia-smi"
    smi.write_text('#!/bin/bash\nprintf "GPU 0: Fake (UUID: GPU-0)\\n"\n')
    smi.chmod(0o755)
    monkeypatch.chdir(work)
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    result = run_cli(
        "faulty", "scan", "-w", "node-[1-4]", "--checks", "python," + ",".join(TORCH_CHECKS),
        "--dir", str(tmp_path / "scan"), "--timeout", "300", "--set", "cpus_per_task=1",
        "--set", f"setup=export PATH={fakebin}:$PATH", "--json", exit_code=None,
    )  # fmt: skip
    report = json.loads(result.stdout)
    assert sorted(p.name for p in marks.iterdir()) == [], report
    ran = [n for n in report["nodes"] if n["result"] != "unavailable"]
    assert ran, report
    for node in ran:
        checks = {c["check"]: (c["status"], c["detail"]) for c in node["checks"]}
        assert checks["python"][0] == "pass", node
        for check in TORCH_CHECKS:  # the node's python3 looked for torch, and found none
            assert checks[check] == ("skipped", "torch is not importable by python3"), node


def test_import_rule_train_runs_import_nothing_from_the_train_folder(
    train_factory: Callable[[str], Train],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The wrapper's exclude-list step (python3 reading the list) ran in the folder the
    train was started from, which a team shares: a teammate's json.py ran as the owner."""
    marks = _marks(tmp_path)
    train = train_factory("imports")
    _plant(train.work, marks, "cwd")
    tmpdir = _plant(tmp_path / "tmp", marks, "tmpdir")
    tmpdir.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    state = Path(os.environ["XDG_STATE_HOME"]) / "slurmkit" / "excluded.json"
    excluded.record(state, [("node-3", "gpu-health", "row remap pending (test)")])
    script = write(tmp_path / "t.slurm", training_script(tmp_path, "v1"))
    array = start(train, script, 2)
    _plant(train.folder, marks, "train")
    train.go(1)
    wait_sourced(train, "v1 2")
    log = train.log(array, 2)
    assert sorted(p.name for p in marks.iterdir()) == [], log
    assert "slurmkit: the pending runs keep out node-3" in log, log
    assert "cannot read the exclude list" not in log, log
    train.go(2)
    train.cli("stop", train.name, "--now", "--yes")
