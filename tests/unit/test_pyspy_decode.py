"""Node results (any transport) read back into stacks and one-line problems."""

from __future__ import annotations

import json

import pytest
from test_pyspy_samples import DUMP

from slurmkit.pyspy.decode import decode
from slurmkit.remote.result import NodeResult


def _process(pid: int, status: str = "ok", error: str = "", role: str = "rank") -> str:
    record = {
        "type": "process",
        "pid": pid,
        "ppid": 1,
        "role": role,
        "command": "python3 prog.py",
        "status": status,
        "dump": DUMP if status == "ok" else "",
        "error": error,
    }
    return json.dumps(record)


def _node(python: int = 1, problem: str | None = None, **extra: object) -> str:
    record = {"type": "node", "node": "node-1", "python": python, "problem": problem, **extra}
    return json.dumps(record)


def _ok(node: str, *lines: str) -> NodeResult:
    return NodeResult(node, "ok", "\n".join(lines) + "\n", "", 0, 0.5)


def test_dumped_processes_are_parsed_and_noise_ignored() -> None:
    stdout = ["Welcome to node-1!", _process(14340), "{not json", _node()]
    report = decode(_ok("node-1", *stdout), "7", 30, "srun")
    (proc,) = report.processes
    assert (proc.node, proc.pid, proc.role, proc.ok) == ("node-1", 14340, "rank", True)
    assert proc.main_frames[0].function == "allreduce"
    assert proc.text == DUMP
    assert report.problems == () and report.python == 1


def test_missing_py_spy_gives_the_install_hint() -> None:
    stdout = _node(problem="py_spy_missing", looked_for=["py-spy on PATH", "/venv/bin/py-spy"])
    (problem,) = decode(_ok("node-3", stdout), "7", 30, "srun").problems
    assert problem.kind == "py_spy_missing"
    assert problem.message == (
        "py-spy not installed on node-3 (pip install py-spy; "
        "looked for py-spy on PATH, /venv/bin/py-spy)"
    )


def test_process_failures_are_one_line_per_node_and_kind() -> None:
    stdout = [
        _process(1, "ptrace_denied", "Permission Denied: Try running again"),
        _process(2, "ptrace_denied", "Permission Denied: Try running again"),
        _process(3, "gone", "exited before the dump"),
        _process(4, "timeout", "py-spy did not finish within 20.0 s"),
        _process(5),
        _node(python=5),
    ]
    problems = decode(_ok("node-2", *stdout), "7", 30, "ssh").problems
    assert [(p.kind, p.pids) for p in problems] == [
        ("ptrace_denied", (1, 2)),
        ("gone", (3,)),
        ("dump_timeout", (4,)),
    ]
    assert problems[0].message.startswith("node-2: ptrace denied for pids 1,2: run as root")
    assert "kernel.yama.ptrace_scope=0" in problems[0].message
    assert "SYS_PTRACE" in problems[0].message
    assert problems[1].message == "node-2: pid 3 exited before the dump"


def test_a_node_without_python_says_so() -> None:
    (problem,) = decode(_ok("node-4", _node(python=0)), "77", 30, "srun").problems
    assert (problem.kind, problem.message) == ("no_python", "node-4: no Python processes of job 77")


def test_a_node_that_timed_out_keeps_what_it_reported() -> None:
    result = NodeResult("node-2", "timeout", _process(9) + "\n", "", None, 30, "no answer")
    report = decode(result, "7", 30, "srun")
    assert [p.pid for p in report.processes] == [9]
    assert [(p.kind, p.message) for p in report.problems] == [
        ("no_answer", "node-2: no answer within 30 s (1 process reported before)")
    ]
    assert report.python is None


@pytest.mark.parametrize(
    ("transport", "hint"),
    [
        ("pdsh", ": nothing came back over ssh; `ssh node-2 true` tells a hung node or sshd"),
        ("ssh", ": nothing came back over ssh; `ssh node-2 true` tells a hung node or sshd"),
        ("srun", ""),  # a step has no sshd to blame
    ],
)
def test_a_silent_node_over_ssh_gets_the_ssh_hint(transport: str, hint: str) -> None:
    result = NodeResult("node-2", "timeout", "", "", None, 5, "no answer within 5 s")
    (problem,) = decode(result, "7", 5, transport).problems
    assert problem.kind == "no_answer"
    assert problem.message.startswith(f"node-2: no answer within 5 s{hint}")
    assert ("longer --timeout" in problem.message) == bool(hint)


def test_unreachable_node() -> None:
    result = NodeResult("node-5", "unreachable", "", "", None, 1, "connect to node-5: refused")
    (problem,) = decode(result, "7", 30, "pdsh").problems
    assert problem.message == "node-5: unreachable: connect to node-5: refused"


def test_no_python3_on_the_node() -> None:
    stderr = "sh: 1: exec: python3: not found\n"
    result = NodeResult("node-1", "failed", "", stderr, 127, 0.1, "exit code 127")
    (problem,) = decode(result, "7", 30, "ssh").problems
    assert problem.kind == "python_missing"


def test_a_step_that_could_not_start_suggests_ssh() -> None:
    error = "no end marker from this node: srun: error: Unable to create step for job 7"
    result = NodeResult("node-1", "failed", "", "", None, 0.1, error)
    (problem,) = decode(result, "7", 30, "srun").problems
    assert problem.kind == "step_failed"
    assert problem.message.startswith("node-1: no end marker from this node: srun: error")
    assert problem.message.endswith("try --via ssh)")


def test_a_crashed_node_script_shows_its_last_error_line() -> None:
    stderr = (
        "Traceback (most recent call last):\n  File x\nOSError: [Errno 24] Too many open files\n"
    )
    result = NodeResult("node-1", "failed", "", stderr, 1, 0.1, "exit code 1")
    (problem,) = decode(result, "7", 30, "ssh").problems
    assert problem.message == (
        "node-1: the node-side script failed: OSError: [Errno 24] Too many open files"
    )


def test_listpids_failure() -> None:
    stdout = _node(python=None, problem="listpids_failed", message="Invalid job id specified")
    (problem,) = decode(_ok("node-1", stdout), "7", 30, "srun").problems
    assert problem.message == "node-1: scontrol listpids failed: Invalid job id specified"
