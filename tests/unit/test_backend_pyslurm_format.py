"""The pyslurm backend's rewriting of C fields into Slurm's own spellings (issue 18), checked
without a cluster: in a child process whose libslurm reads a two-line slurm.conf (importing
pyslurm without one ends the process). Skipped where pyslurm is not installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from slurmkit.slurm import backend

pytestmark = pytest.mark.skipif(
    backend.pyslurm_version() is None, reason="pyslurm is not installed (scripts/test installs it)"
)

_PROGRAM = r"""
import json
from slurmkit.slurm import backend_pyslurm as b
from slurmkit.slurm.records import Job, Node
node = lambda state, *flags: Node(name="n", state=state, flags=frozenset(flags))
job = lambda i, array=None: Job(job_id=str(i), array_job_id=array)
print(json.dumps({
    "words": [b.state_word(node("IDLE", "DRAIN")), b.state_word(node("MIXED", "DRAIN")),
              b.state_word(node("DOWN", "NOT_RESPONDING")), b.state_word(node("IDLE", "DRAIN",
              "NOT_RESPONDING")), b.state_word(node("ALLOCATED", "FAIL")),
              b.state_word(node("IDLE", "DRAIN", "MAINTENANCE"))],
    "cpu_ids": [b._cpu_ids("1", 2), b._cpu_ids("0,2-3", 2), b._cpu_ids("0-1", 1)],
    "mem": [b._mem_text(1000), b._mem_text(2048), b._mem_text(1048576)],
    "gres": [b._gres_text({"gpu": 4}), b._gres_text({"gpu:a100": {"count": 2, "indexes": "0-1"}})],
    "order": [j.job_id for j in b._one_job_order(
        [job(1), job(5, "5"), job(6, "5"), job(7, "5")], "5")],
    "minutes": [b._minutes(5), b._minutes("UNLIMITED"), b._minutes(None)],
}))
"""


def test_slurm_spellings_are_rebuilt_exactly(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=probe\nSlurmctldHost=localhost\n")
    out = subprocess.run(
        [sys.executable, "-c", _PROGRAM],
        capture_output=True,
        text=True,
        check=True,
        env={"SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin"},
        timeout=60,
    ).stdout
    got = json.loads(out)
    # sinfo's long words: node_state_string() lower-cased, suffix of the first flag present
    assert got["words"] == ["drained", "draining", "down*", "drained*", "failing", "drained$"]
    # pyslurm gives core indices; scontrol prints the CPU ids of those cores
    assert got["cpu_ids"] == ["2-3", "0-1,4-7", "0-1"]
    assert got["mem"] == ["1000M", "2G", "1T"]
    assert got["gres"] == ["gpu:4", "gpu:a100:2(IDX:0-1)"]
    # a one-id squeue request: the job itself, then its array's tasks newest first
    assert got["order"] == ["5", "7", "6", "1"]
    assert got["minutes"] == [300, None, None]
