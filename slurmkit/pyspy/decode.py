"""One node's transport result read back into process stacks and one-line problems.

The node side prints JSON lines (see :mod:`.node_script`); anything else on
stdout (a login banner, a shell's chatter) is ignored. A node that never
printed its final ``node`` record did not finish: the transport's status says
why (unreachable, timed out, the step or the script failed), and whatever
processes it reported before are kept.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from slurmkit.pyspy.nodecmd import REFUSED
from slurmkit.pyspy.records import OK, NodeStacks, Problem, ProcessStack
from slurmkit.pyspy.stack import parse_dump
from slurmkit.remote.result import TIMEOUT, UNREACHABLE, NodeResult

INSTALL_HINT = "pip install py-spy"
PTRACE_HINT = (
    "run as root, or allow ptrace with `sudo sysctl kernel.yama.ptrace_scope=0` "
    "(in a container: --cap-add SYS_PTRACE)"
)
_MISSING_PYTHON_RC = 127
SSH_TRANSPORTS = ("pdsh", "ssh")


def decode(result: NodeResult, jobid: str, timeout: float, transport: str) -> NodeStacks:
    records = list(_records(result.stdout))
    processes = tuple(_process(result.node, r) for r in records if r.get("type") == "process")
    summary = next((r for r in records if r.get("type") == "node"), None)
    problems: list[Problem] = []
    if summary is None:
        problems.append(_unfinished(result, timeout, transport, len(processes)))
    else:
        problems += _node_problems(result.node, summary, jobid)
    problems += process_problems(processes)
    python = summary.get("python") if summary else None
    return NodeStacks(result.node, processes, tuple(problems), python)


def _records(stdout: str) -> Iterable[dict[str, Any]]:
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def _process(node: str, record: dict[str, Any]) -> ProcessStack:
    text = str(record.get("dump") or "")
    status = str(record.get("status") or "error")
    return ProcessStack(
        node=node,
        pid=int(record.get("pid") or 0),
        role=str(record.get("role") or "rank"),
        status=status,
        command=str(record.get("command") or ""),
        ppid=record.get("ppid"),
        error=str(record.get("error") or ""),
        text=text,
        dump=parse_dump(text) if status == OK else parse_dump(""),
    )


def _unfinished(result: NodeResult, timeout: float, transport: str, dumped: int) -> Problem:
    node = result.node
    if result.status == UNREACHABLE:
        return Problem(node, "unreachable", f"{node}: unreachable: {result.error}")
    if result.status == TIMEOUT:
        return _no_answer(node, timeout, transport, dumped)
    stderr = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    refused = next((line.split(REFUSED, 1)[1].strip() for line in stderr if REFUSED in line), None)
    if refused is not None:  # the shell line's check of the interpreter, before running it
        return Problem(node, "untrusted_python", f"{node}: refusing to run {refused}")
    if result.exit_code == _MISSING_PYTHON_RC and any("python3" in line for line in stderr):
        return Problem(
            node, "python_missing", f"{node}: no python3 on the node to run the node-side script"
        )
    if transport == "srun" and result.exit_code is None:
        return Problem(
            node,
            "step_failed",
            f"{node}: {result.error} (when no step can start in the job, try --via ssh)",
        )
    detail = stderr[-1] if stderr else result.error or f"exit code {result.exit_code}"
    return Problem(node, "script_failed", f"{node}: the node-side script failed: {detail}")


def _no_answer(node: str, timeout: float, transport: str, dumped: int) -> Problem:
    """A node silent until the limit; over ssh, say how to tell a hung node from a slow one.

    The node side reports within its budget, before the limit, so silence over
    ssh usually means the connection never got going (a hung node or sshd).
    """
    message = f"{node}: no answer within {timeout:g} s"
    if dumped:
        plural = "es" if dumped != 1 else ""
        message += f" ({dumped} process{plural} reported before)"
    elif transport in SSH_TRANSPORTS:
        message += (
            f": nothing came back over ssh; `ssh {node} true` tells a hung node or sshd "
            "from a slow one (give that a longer --timeout)"
        )
    return Problem(node, "no_answer", message)


def _node_problems(node: str, summary: dict[str, Any], jobid: str) -> list[Problem]:
    problem = summary.get("problem")
    if problem == "listpids_failed":
        message = summary.get("message") or "no message"
        return [Problem(node, problem, f"{node}: scontrol listpids failed: {message}")]
    if problem == "py_spy_untrusted":
        message = summary.get("message") or "no reason given"
        return [Problem(node, problem, f"{node}: refusing py-spy: {message}")]
    if problem == "py_spy_missing":
        looked = ", ".join(summary.get("looked_for") or [])
        where = f"; looked for {looked}" if looked else ""
        return [Problem(node, problem, f"py-spy not installed on {node} ({INSTALL_HINT}{where})")]
    if not summary.get("python"):
        return [Problem(node, "no_python", f"{node}: no Python processes of job {jobid}")]
    return []


def process_problems(processes: Iterable[ProcessStack]) -> list[Problem]:
    """One line per node and kind of failure, naming the pids."""
    by_kind: dict[tuple[str, str], list[ProcessStack]] = defaultdict(list)
    for proc in processes:
        if not proc.ok:
            by_kind[(proc.node, proc.status)].append(proc)
    return [_process_problem(node, status, procs) for (node, status), procs in by_kind.items()]


def _process_problem(node: str, status: str, procs: list[ProcessStack]) -> Problem:
    pids = tuple(p.pid for p in procs)
    which = f"pid{'s' if len(pids) > 1 else ''} {','.join(map(str, pids))}"
    error = procs[0].error
    if status == "ptrace_denied":
        return Problem(node, status, f"{node}: ptrace denied for {which}: {PTRACE_HINT}", pids)
    if status == "gone":
        return Problem(node, status, f"{node}: {which} exited before the dump", pids)
    if status == "timeout":
        return Problem(node, "dump_timeout", f"{node}: py-spy dump of {which}: {error}", pids)
    if status == "not_python":
        message = f"{node}: {which}: py-spy found no Python interpreter ({error})"
        return Problem(node, status, message, pids)
    return Problem(node, "dump_failed", f"{node}: py-spy failed on {which}: {error}", pids)
