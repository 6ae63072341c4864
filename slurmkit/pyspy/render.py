"""What ``slurmkit pyspy`` prints: groups for people, every stack for scripts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from slurmkit.hostlist import fold
from slurmkit.printable import printable
from slurmkit.pyspy.collect import Collection
from slurmkit.pyspy.grouping import StackGroup
from slurmkit.pyspy.records import CHILD, LAUNCHER, ProcessStack

MAX_FRAMES = 12
MAX_PIDS = 8
_INDENT = "    "


def summary_line(collection: Collection, directory: Path) -> str:
    dumped = [p for p in collection.processes if p.ok]
    stacks = len(collection.groups)
    return (
        f"job {collection.jobid}: {len(dumped)} Python process{'es' if len(dumped) != 1 else ''} "
        f"dumped on {fold(collection.nodes)} via {collection.transport}, "
        f"{stacks} distinct stack{'s' if stacks != 1 else ''}; traces in {directory}/"
    )


def render(collection: Collection, directory: Path, max_frames: int = MAX_FRAMES) -> str:
    """The human report: a header, the groups (outliers marked), then one line per problem.

    Frames, commands and errors are text of the target processes and the nodes, so
    control characters in them are shown escaped, never sent to the terminal.
    """
    lines = [summary_line(collection, directory)]
    for group in collection.groups:
        lines += ["", *group_lines(group, max_frames)]
    problems = collection.problems
    if collection.no_python:
        lines += ["", f"job {collection.jobid} has no Python processes"]
    elif problems:
        lines += ["", f"problems ({len(problems)}):", *(p.message for p in problems)]
    return "\n".join(printable(line) for line in lines) + "\n"


def group_lines(group: StackGroup, max_frames: int = MAX_FRAMES) -> list[str]:
    noun = "process" if group.count == 1 else "processes"
    label = {LAUNCHER: "launcher ", CHILD: "child "}.get(group.role, "")
    mark = "OUTLIER: " if group.outlier else ""
    head = f"{mark}{group.count} {label}{noun} on {group.folded_nodes}: {_pids(group.members)}"
    frames = [f"{_INDENT}{frame}" for frame in group.frames[:max_frames]]
    hidden = len(group.frames) - max_frames
    if hidden > 0:
        frames.append(f"{_INDENT}... {hidden} outer frames (see the trace files)")
    if not group.frames:
        frames.append(f"{_INDENT}(no Python frames: the main thread is outside Python)")
    dump = group.members[0].dump
    others = [t.name or t.thread_id for t in dump.threads if t is not dump.main_thread]
    if others:
        frames.append(
            f"{_INDENT}(+{len(others)} other threads: {', '.join(others[:5])}"
            f"{', ...' if len(others) > 5 else ''}; see the trace files)"
        )
    return [head, *frames]


def _pids(members: tuple[ProcessStack, ...]) -> str:
    shown = " ".join(f"{m.node}:{m.pid}" for m in members[:MAX_PIDS])
    more = len(members) - MAX_PIDS
    return shown + (f" ... and {more} more" if more > 0 else "")


def as_json(collection: Collection, directory: Path) -> dict[str, Any]:
    """Every process's stack (all threads), the groups and the problems."""
    return {
        "job": collection.jobid,
        "job_id": collection.job.job_id,
        "transport": collection.transport,
        "nodes": fold(collection.nodes),
        "output_dir": str(directory),
        "exit_code": collection.exit_code,
        "no_python": collection.no_python,
        "groups": [_group_json(g) for g in collection.groups],
        "processes": [_process_json(p) for p in collection.processes],
        "problems": [
            {"node": p.node, "kind": p.kind, "message": p.message, "pids": list(p.pids)}
            for p in collection.problems
        ],
    }


def _frame_json(frame: Any) -> dict[str, Any]:
    return {"function": frame.function, "file": frame.file, "line": frame.line}


def _group_json(group: StackGroup) -> dict[str, Any]:
    return {
        "role": group.role,
        "count": group.count,
        "nodes": group.folded_nodes,
        "outlier": group.outlier,
        "processes": [{"node": m.node, "pid": m.pid} for m in group.members],
        "frames": [_frame_json(f) for f in group.frames],
    }


def _process_json(proc: ProcessStack) -> dict[str, Any]:
    return {
        "node": proc.node,
        "pid": proc.pid,
        "ppid": proc.ppid,
        "role": proc.role,
        "command": proc.command,
        "status": proc.status,
        "error": proc.error,
        "python_version": proc.dump.python_version,
        "threads": [
            {
                "id": t.thread_id,
                "name": t.name,
                "state": t.state,
                "frames": [_frame_json(f) for f in t.frames],
            }
            for t in proc.dump.threads
        ],
        "text": proc.text,
    }
