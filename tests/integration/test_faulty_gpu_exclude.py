"""Issue 16 items 3 and 4 on the sandbox: the GPU health checks say "skipped" on nodes
without a GPU driver (never "pass"), and the exclude list keeps a bad node out of a train,
both at ``train start`` and, for a node listed later, from the next run on."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from slurmkit.faulty import excluded
from slurmkit.hostlist import expand
from slurmkit.slurm._exec import run_slurm
from tests.integration.conftest import poll, usable_nodes
from tests.integration.test_train import (
    Train,
    start,
    train_factory,  # noqa: F401 (a fixture)
    training_script,
    wait_running,
    wait_sourced,
    write,
)


def test_gpu_checks_on_nodes_without_gpus_are_skipped(run_cli, tmp_path: Path, cluster) -> None:
    usable_nodes()  # CI met node-1 IDLE+COMPLETING+DRAIN (Kill task failed) left by a test before
    result = run_cli(
        "faulty", "scan", "-w", "node-[1-4]", "--checks", "gpu-health,xid", "--dir",
        str(tmp_path), "--timeout", "300", "--json", exit_code=1,
    )  # fmt: skip
    report = json.loads(result.stdout)
    assert report["job_state"] == "COMPLETED" and report["exclude"] == ""
    for node in report["nodes"]:
        assert node["result"] == "skipped", node
        for check in node["checks"]:
            assert check["status"] == "skipped"
            assert check["detail"] == "no NVIDIA driver on this node (nvidia-smi not found)"
    assert report["recorded"] == []
    assert excluded.load(excluded.default_path()) == []


def _exc_node_list(array: str) -> dict[str, str]:
    """ArrayTaskId (e.g. ``1``, ``2-3%1``) -> ExcNodeList, from scontrol show job."""
    text = run_slurm(["scontrol", "show", "job", array]).stdout
    found = {}
    for record in text.split("\n\n"):
        task = re.search(r"ArrayTaskId=(\S+)", record)
        exc = re.search(r"ExcNodeList=(\S+)", record)
        if task and exc:
            found[task.group(1).split("%")[0]] = exc.group(1)  # 2-3%1: the throttle
    return found


def _node_of(array: str, task: str) -> str:
    text = run_slurm(["scontrol", "show", "job", f"{array}_{task}"]).stdout
    match = re.search(r"\n\s+NodeList=(\S+)", text)
    return match.group(1) if match else ""


def test_train_keeps_listed_nodes_out_at_start_and_from_the_next_run(
    train_factory: Callable[[str], Train],  # noqa: F811
    tmp_path: Path,
) -> None:
    state = Path(os.environ["XDG_STATE_HOME"]) / "slurmkit" / "excluded.json"
    excluded.record(state, [("node-3", "gpu-health", "row remap pending (test)")])
    train = train_factory("exclude")
    script = write(tmp_path / "t.slurm", training_script(tmp_path, "v1"))
    array = start(train, script, 3)
    tasks = _exc_node_list(array)
    assert tasks and set(tasks.values()) == {"node-3"}, tasks  # every run of the array
    wait_running(train, f"{array}_1")
    wait_sourced(train, "v1 1")
    assert _node_of(array, "1") != "node-3"

    # A scan finds node-4 bad while run 1 runs: run 2 (already updated by run 1's start)
    # adds it for the runs after it.
    excluded.record(state, [("node-4", "xid", "Xid 79 (test)")])
    train.go(1)
    wait_running(train, f"{array}_2")
    wait_sourced(train, "v1 2")
    log = train.log(array, 2)
    assert "slurmkit: the pending runs keep out node-3,node-4" in log, log
    poll(
        lambda: expand(_exc_node_list(array).get("3", "")) == ["node-3", "node-4"],
        30,
        f"run 3 to exclude node-4 (scontrol: {_exc_node_list(array)})",
    )
    train.go(2)
    wait_running(train, f"{array}_3")
    assert _node_of(array, "3") not in ("node-3", "node-4")
    train.go(3)
    train.cli("stop", train.name, "--now", "--yes")
