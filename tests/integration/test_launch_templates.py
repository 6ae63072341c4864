"""The srun-launcher and preprocess-array templates, submitted to the sandbox, run to their end.

srun-launcher: every task prints the RANK/LOCAL_RANK/WORLD_SIZE it was given and what
``slurmkit launch-env --launcher srun`` says inside it; both must be Slurm's ranks.
preprocess-array: every input is processed exactly once across chunks, a failed chunk
is the only one redone on a rerun, a finished run's rerun skips every chunk, and an
empty list fails with exit 2. mpirun: the template's hostfile (``slurmkit hostfile
--format openmpi``) places gpus_per_node ranks on each node, with the host's Open MPI
(``openmpi-bin``, from scripts/bootstrap); inside another Slurm version's root the host's
/usr is not there, so that test runs on the host's 22.05 only.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from slurmkit import sandbox
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll
from tests.integration.test_templates import FINAL, Templates, templates, wait_final

__all__ = ["templates"]  # the fixture, imported for this module

RANKS_PY = """import os, subprocess, sys
env = {k: os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURMD_NODENAME")}
out = subprocess.run([sys.executable, "-m", "slurmkit", "launch-env", "--launcher", "srun"],
                     capture_output=True, text=True, check=True).stdout
got = dict(line[len("export "):].split("=", 1) for line in out.splitlines())
line = "RANKS rank={RANK} local={LOCAL_RANK} world={WORLD_SIZE} node={SLURMD_NODENAME}"
ours = "launch-env={}/{}/{}".format(got["RANK"], got["LOCAL_RANK"], got["WORLD_SIZE"])
print(line.format(**env), ours, flush=True)
"""

PROCESS_SH = """#!/bin/bash
# LIST START END: append each input of lines START..END-1 to processed.txt; fail once on demand
set -eo pipefail
if [[ -e fail-chunk-$SLURM_ARRAY_TASK_ID ]]; then rm "fail-chunk-$SLURM_ARRAY_TASK_ID"; exit 5; fi
sed -n "$(($2 + 1)),$3p" "$1" | while read -r item; do
  echo "$item task=$SLURM_ARRAY_TASK_ID" >> processed.txt
done
"""


@pytest.mark.smoke
def test_srun_launcher_gives_every_task_its_rank(templates: Templates) -> None:
    (templates.root / "ranks.py").write_text(RANKS_PY)
    job_id, name = templates.submit(
        "srun-launcher",
        "nodes=2",
        "gpus_per_node=2",
        "cpus_per_task=1",
        "time=10",  # > signal_time (300 s): no graceful-exit signal at the first check
        f"python={sys.executable}",
        "script=ranks.py",
    )
    assert wait_final(job_id, name) == "COMPLETED", templates.log(name, job_id)
    rows = []
    for line in templates.log(name, job_id).splitlines():
        if "RANKS " in line:
            label, _, rest = line.partition(": ")
            fields = dict(w.split("=", 1) for w in rest.split()[1:])
            rows.append((int(label), fields))
    assert sorted(int(f["rank"]) for _, f in rows) == [0, 1, 2, 3]
    for label, fields in rows:
        assert int(fields["rank"]) == label  # srun --label is SLURM_PROCID
        assert fields["world"] == "4"
        assert fields["launch-env"] == f"{fields['rank']}/{fields['local']}/4"
    by_node: dict[str, list[str]] = {}
    for _, fields in rows:
        by_node.setdefault(fields["node"], []).append(fields["local"])
    assert len(by_node) == 2 and all(sorted(v) == ["0", "1"] for v in by_node.values())


def _array_states(job_id: str, name: str) -> dict[str, tuple[str, str]]:
    argv = ["sacct", "-X", "-n", "-P", "-j", job_id, f"--name={name}", "-o", "JobID,State,ExitCode"]
    rows = [line.split("|") for line in run_slurm(argv).stdout.splitlines() if line]
    return {r[0]: (r[1].split(" ")[0], r[2]) for r in rows}


def _wait_array(job_id: str, name: str, tasks: int) -> dict[str, tuple[str, str]]:
    def done() -> dict[str, tuple[str, str]] | None:
        states = _array_states(job_id, name)
        finished = {k: v for k, v in states.items() if "[" not in k and v[0] in FINAL}
        return states if len(finished) == tasks else None

    return poll(done, 180, f"array {job_id} to end")  # type: ignore[return-value]


def _submit_chunks(templates: Templates, listing: Path, chunks: int) -> tuple[str, str]:
    return templates.submit(
        "preprocess-array",
        f"input_list={listing}",
        f"chunks={chunks}",
        "concurrency=2",
        f"command={templates.root / 'process.sh'}",
        "done_dir=done",
        "cpus_per_task=1",
        "time=10",  # > signal_time (300 s): no graceful-exit signal at the first check
    )


def test_preprocess_array_processes_each_input_once_and_resumes(templates: Templates) -> None:
    root = templates.root
    (root / "process.sh").write_text(PROCESS_SH)
    (root / "process.sh").chmod(0o755)
    inputs = [f"file-{i:02d}.wav" for i in range(10)]
    listing = root / "files.txt"
    listing.write_text("".join(f"{x}\n" for x in inputs))
    (root / "fail-chunk-1").touch()  # chunk 1 fails on the first run only

    job_id, name = _submit_chunks(templates, listing, 3)
    states = _wait_array(job_id, name, 3)
    assert {k: v[0] for k, v in states.items()} == {
        f"{job_id}_0": "COMPLETED",
        f"{job_id}_1": "FAILED",
        f"{job_id}_2": "COMPLETED",
    }
    first = (root / "processed.txt").read_text().splitlines()
    assert sorted(x.split()[0] for x in first) == inputs[:4] + inputs[8:]  # chunks 0 and 2
    assert sorted(p.name for p in (root / "done").iterdir()) == [
        "chunk-0.done",
        "chunk-2.done",
    ]

    again, name2 = _submit_chunks(templates, listing, 3)  # the rerun redoes chunk 1 only
    assert all(v[0] == "COMPLETED" for v in _wait_array(again, name2, 3).values())
    lines = (root / "processed.txt").read_text().splitlines()
    assert sorted(x.split()[0] for x in lines) == inputs  # each input exactly once
    assert [x for x in lines[len(first) :] if not x.endswith("task=1")] == []
    skipped = (root / "logs" / f"{name2}-{again}_0.out").read_text()
    assert "chunk 0 of 3 skipped: done already" in skipped

    third, name3 = _submit_chunks(templates, listing, 3)  # everything done: all skipped
    assert all(v[0] == "COMPLETED" for v in _wait_array(third, name3, 3).values())
    assert (root / "processed.txt").read_text().splitlines() == lines


def test_preprocess_array_with_an_empty_list_exits_2(templates: Templates) -> None:
    (templates.root / "process.sh").write_text(PROCESS_SH)
    (templates.root / "process.sh").chmod(0o755)
    listing = templates.root / "empty.txt"
    listing.write_text("")
    job_id, name = _submit_chunks(templates, listing, 2)
    states = _wait_array(job_id, name, 2)
    assert sorted(states.values()) == [("FAILED", "2:0"), ("FAILED", "2:0")]
    assert not (templates.root / "processed.txt").exists()
    log = (templates.root / "logs" / f"{name}-{job_id}_0.out").read_text()
    assert "is missing or empty: nothing to split" in log


MPI_PY = """import os, socket
e = os.environ
line = "MPI rank={} local={} size={} node={} master={}".format(
    e["OMPI_COMM_WORLD_RANK"], e["OMPI_COMM_WORLD_LOCAL_RANK"], e["OMPI_COMM_WORLD_SIZE"],
    socket.gethostname(), e["MASTER_ADDR"])
print(line, flush=True)
with open("mpi-rank-" + e["OMPI_COMM_WORLD_RANK"] + ".txt", "w") as out:
    out.write(line + "\\n")
"""


def test_mpirun_places_gpus_per_node_ranks_on_each_node(
    cluster: sandbox.SandboxSpec, templates: Templates
) -> None:
    if cluster.root:
        import pytest

        pytest.skip("mpirun is the host's Open MPI: not inside another Slurm version's root")
    (templates.root / "mpi.py").write_text(MPI_PY)
    venv_bin = Path(sys.executable).parent
    job_id, name = templates.submit(
        "mpirun",
        "nodes=2",
        "gpus_per_node=2",
        "cpus_per_task=1",
        "time=10",  # > signal_time (300 s): no graceful-exit signal at the first check
        f"python={sys.executable}",
        "script=mpi.py",
        "mpirun_args=--allow-run-as-root",
        f"setup=export PATH={venv_bin}:$PATH",
    )
    assert wait_final(job_id, name) == "COMPLETED", templates.log(name, job_id)
    log = templates.log(name, job_id)
    # each rank also writes its line to its own file (the job's folder is shared)
    text = "".join(p.read_text() for p in sorted(templates.root.glob("mpi-rank-*.txt")))
    found = re.findall(r"MPI rank=(\d+) local=(\d+) size=(\d+) node=(\S+) master=(\S+)", text)
    keys = ("rank", "local", "size", "node", "master")
    rows = [dict(zip(keys, match, strict=True)) for match in found]
    assert sorted(int(r["rank"]) for r in rows) == [0, 1, 2, 3], log
    assert {r["size"] for r in rows} == {"4"}
    nodes = sorted({r["node"] for r in rows})
    assert len(nodes) == 2
    first = min(rows, key=lambda r: int(r["rank"]))["node"]
    for row in rows:  # ranks 0-1 on the first node (MASTER_ADDR), 2-3 on the second
        assert (row["node"] == first) == (int(row["rank"]) < 2), rows
        assert row["master"] == first
    assert f"{first} slots=2" in log
