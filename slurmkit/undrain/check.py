"""Look for what a job left behind on a node, and end it: the remote half of undrain.

The check prints a machine-readable report between lines that start with a
token unique to the run, and a final ``done`` line. A node counts as clean
only when that line arrived and every probe in it succeeded: a node whose
ssh failed, timed out, or whose ``ps``/``nvidia-smi`` failed is *unknown*,
never clean (the seed script read only stdout, so an unreachable node looked
empty to it and went back into service).

Leftovers are ``slurmstepd`` processes (of any user), processes of non-system
users (UID at or above a threshold; ``nobody`` excluded) and GPU compute
processes reported by ``nvidia-smi`` where it is installed. The check's own
processes (its session and its ancestors: sshd, the login shell) are not
leftovers.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from slurmkit.remote.result import NodeResult

CLEAN = "clean"
LEFTOVERS = "leftovers"
UNKNOWN = "unknown"
GPU_SKIPPED = "nvidia-smi absent: GPU check skipped"
DEFAULT_UID_MIN = 1000
# nobody/nfsnobody run daemons, not jobs.
_NOBODY_UIDS = frozenset({65534, 4294967294})


@dataclass(frozen=True)
class Process:
    """A leftover; ``kinds`` says why (``slurmstepd``, ``user``, ``gpu``)."""

    pid: int
    uid: int | None
    user: str
    args: str
    kinds: tuple[str, ...]
    state: str = ""  # ps STAT; "D..." is uninterruptible sleep, which SIGKILL cannot end

    @property
    def unkillable(self) -> bool:
        return self.state.startswith("D")

    def __str__(self) -> str:
        command = self.args if len(self.args) <= 40 else self.args[:37] + "..."
        stuck = " [D: in uninterruptible I/O]" if self.unkillable else ""
        return f"{self.pid} {self.user or '?'} {command}{stuck}"


@dataclass(frozen=True)
class CheckResult:
    """What one node's check found."""

    node: str
    verdict: str
    processes: tuple[Process, ...] = ()
    gpu_note: str = ""
    error: str = ""
    host: str = ""

    @property
    def summary(self) -> str:
        if self.verdict == UNKNOWN:
            text = f"unknown: {self.error}"
        elif self.verdict == CLEAN:
            text = "no leftovers"
        else:
            shown = "; ".join(str(p) for p in self.processes[:3])
            more = f" (+{len(self.processes) - 3} more)" if len(self.processes) > 3 else ""
            text = f"{len(self.processes)} leftover(s): {shown}{more}"
        return "; ".join([text, *([self.gpu_note] if self.gpu_note else [])])


def check_script(token: str) -> str:
    """The POSIX sh run on each node; every section ends with its own exit code."""
    t = shlex.quote(token)
    return "\n".join(
        [
            f"T={t}",
            'echo "$T self $$"',
            'echo "$T host $(hostname)"',
            'echo "$T ps"',
            "ps -e -o pid= -o ppid= -o sid= -o uid= -o stat= -o user:32= -o args=",
            'echo "$T ps-end $?"',
            "if command -v nvidia-smi >/dev/null 2>&1; then",
            '  echo "$T gpu"',
            "  nvidia-smi --query-compute-apps=pid --format=csv,noheader",
            '  echo "$T gpu-end $?"',
            "else",
            '  echo "$T gpu-absent"',
            "fi",
            'echo "$T done"',
        ]
    )


@dataclass
class _Sections:
    self_pid: int | None = None
    host: str = ""
    ps: list[str] = field(default_factory=list)
    ps_rc: int | None = None
    gpu: list[str] = field(default_factory=list)
    gpu_rc: int | None = None
    gpu_absent: bool = False
    done: bool = False


def _sections(stdout: str, token: str) -> _Sections:
    found = _Sections()
    target: list[str] | None = None
    prefix = token + " "
    for line in stdout.splitlines():
        if not line.startswith(prefix):
            if target is not None:
                target.append(line)
            continue
        word, _, rest = line[len(prefix) :].partition(" ")
        target = None
        if word == "self":
            found.self_pid = _int(rest)
        elif word == "host":
            found.host = rest.strip()
        elif word == "ps":
            target = found.ps
        elif word == "ps-end":
            found.ps_rc = _int(rest)
        elif word == "gpu":
            target = found.gpu
        elif word == "gpu-end":
            found.gpu_rc = _int(rest)
        elif word == "gpu-absent":
            found.gpu_absent = True
        elif word == "done":
            found.done = True
    return found


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


@dataclass(frozen=True)
class _Row:
    pid: int
    ppid: int
    sid: int
    uid: int
    stat: str
    user: str
    args: str


def _rows(lines: Iterable[str]) -> list[_Row] | None:
    rows = []
    for line in lines:
        if not line.strip():
            continue
        parts = line.split(None, 6)
        if len(parts) < 6 or not all(p.isdigit() for p in (parts[0], parts[1], parts[2], parts[3])):
            return None
        pid, ppid, sid, uid = (int(p) for p in parts[:4])
        rows.append(
            _Row(pid, ppid, sid, uid, parts[4], parts[5], parts[6] if len(parts) > 6 else "")
        )
    return rows


def _own(rows: Sequence[_Row], self_pid: int | None) -> set[int]:
    """The check's session, its children and its ancestors (sshd, login shell, pdsh wrapper).

    Children are found by parent pid as well as by session: where the check runs in a
    session whose leader lives outside the PID namespace, ps shows session id 0, and the
    check's own ``ps`` would otherwise look like a leftover.
    """
    by_pid = {r.pid: r for r in rows}
    me = by_pid.get(self_pid) if self_pid is not None else None
    if me is None:
        return set()
    own = {r.pid for r in rows if me.sid > 1 and r.sid == me.sid} | _descendants(rows, me.pid)
    pid = me.ppid
    while pid > 1 and pid not in own:
        own.add(pid)
        parent = by_pid.get(pid)
        if parent is None:
            break
        pid = parent.ppid
    return own


def _descendants(rows: Sequence[_Row], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for r in rows:
        children.setdefault(r.ppid, []).append(r.pid)
    found, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _is_stepd(args: str) -> bool:
    first = args.split(None, 1)[0] if args.strip() else ""
    return first.rsplit("/", 1)[-1].rstrip(":") == "slurmstepd"


def parse_check(result: NodeResult, token: str, uid_min: int = DEFAULT_UID_MIN) -> CheckResult:
    """A node's verdict from its transport result; anything incomplete is UNKNOWN."""
    node = result.node
    if not result.ok:
        return CheckResult(node, UNKNOWN, error=f"check {result.status}: {result.error}")
    s = _sections(result.stdout, token)
    if not s.done:
        return CheckResult(node, UNKNOWN, error="check did not run to its end")
    if s.ps_rc != 0:
        return CheckResult(node, UNKNOWN, error=f"ps failed (exit {s.ps_rc}): {_tail(result)}")
    rows = _rows(s.ps)
    if rows is None or s.self_pid is None or not rows:
        return CheckResult(node, UNKNOWN, error="unreadable ps output")
    gpu_pids, gpu_note, gpu_error = _gpu(s, result)
    if gpu_error:
        return CheckResult(node, UNKNOWN, error=gpu_error)
    own = _own(rows, s.self_pid)
    found = _leftovers(rows, own, gpu_pids, uid_min)
    verdict = LEFTOVERS if found else CLEAN
    return CheckResult(node, verdict, tuple(found), gpu_note, host=s.host)


def _gpu(s: _Sections, result: NodeResult) -> tuple[set[int], str, str]:
    """(GPU pids, note, error)."""
    if s.gpu_absent:
        return set(), GPU_SKIPPED, ""
    if s.gpu_rc != 0:
        return set(), "", f"nvidia-smi failed (exit {s.gpu_rc}): {_tail(result)}"
    pids = set()
    for line in s.gpu:
        text = line.strip()
        if not text:
            continue
        if not text.isdigit():
            return set(), "", f"unexpected nvidia-smi output: {text[:60]!r}"
        pids.add(int(text))
    return pids, "GPU: checked with nvidia-smi", ""


def _leftovers(rows: Sequence[_Row], own: set[int], gpu: set[int], uid_min: int) -> list[Process]:
    found = []
    seen = set()
    for r in rows:
        if r.pid in own:
            continue
        kinds = []
        if _is_stepd(r.args):
            kinds.append("slurmstepd")
        if r.uid >= uid_min and r.uid not in _NOBODY_UIDS:
            kinds.append("user")
        if r.pid in gpu:
            kinds.append("gpu")
        if kinds:
            found.append(Process(r.pid, r.uid, r.user, r.args, tuple(kinds), r.stat))
            seen.add(r.pid)
    # GPU processes ps does not show (another PID namespace): kill by pid only.
    found += [Process(pid, None, "", "(GPU process)", ("gpu",)) for pid in sorted(gpu - seen)]
    return found


def _tail(result: NodeResult) -> str:
    lines = [ln.strip() for ln in result.stderr.splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


# ---------------------------------------------------------------- ending leftovers


def kill_script(token: str, targets: Mapping[str, Sequence[Process]], grace: int) -> str:
    """TERM the leftovers, wait up to ``grace`` s for them to go, KILL the rest.

    One script serves every node (transports run one command everywhere): it
    picks its own pid list by ``hostname``, as reported by the check, so a
    node whose Slurm name differs from its host name still gets its own list.
    Each pid is signalled only while it belongs to the UID the check saw, so a
    pid reused in between is not hit.
    """
    cases = [
        f"  {shlex.quote(host)}) PIDS={shlex.quote(_pairs(procs))} ;;"
        for host, procs in targets.items()
    ]
    return "\n".join(
        [
            f"T={shlex.quote(token)}",
            'case "$(hostname)" in',
            *cases,
            "  *) PIDS= ;;",
            "esac",
            "alive() {",
            '  [ -d "/proc/$1" ] || return 1',
            '  [ "$2" = "-" ] || [ "$(stat -c %u "/proc/$1" 2>/dev/null)" = "$2" ]',
            "}",
            "signal() {",
            "  for pu in $PIDS; do",
            "    p=${pu%:*}; u=${pu#*:}",
            '    alive "$p" "$u" || continue',
            '    kill -s "$1" "$p" 2>/dev/null && echo "$T sent $1 $p"',
            "  done",
            "}",
            "left() {",
            "  for pu in $PIDS; do",
            "    p=${pu%:*}; u=${pu#*:}",
            '    alive "$p" "$u" && return 0',
            "  done",
            "  return 1",
            "}",
            "signal TERM",
            "i=0",
            f'while [ "$i" -lt {int(grace)} ] && left; do sleep 1; i=$((i+1)); done',
            "if left; then signal KILL; sleep 1; fi",
            'echo "$T done"',
        ]
    )


def _pairs(processes: Sequence[Process]) -> str:
    return " ".join(f"{p.pid}:{p.uid if p.uid is not None else '-'}" for p in processes)


def parse_kill(result: NodeResult, token: str) -> tuple[list[str], str]:
    """(what was sent, e.g. ``TERM 4242``; error or "")."""
    lines = result.stdout.splitlines()
    sent = [ln.split(" sent ", 1)[1] for ln in lines if ln.startswith(f"{token} sent ")]
    if not result.ok:
        return sent, f"kill {result.status}: {result.error}"
    if f"{token} done" not in lines:
        return sent, "kill did not run to its end"
    return sent, ""
