"""Look for what a job left behind on a node, and end it: before a node returns to service.

Shared by ``undrain`` and ``node resume`` (which checks the nodes it names the same way).

The check prints a machine-readable report between lines that start with a
token unique to the run, and a final ``done`` line. A node counts as clean
only when that line arrived and every probe in it succeeded: a node whose
ssh failed, timed out, or whose ``ps``/``nvidia-smi`` failed is *unknown*,
never clean (the seed script read only stdout, so an unreachable node looked
empty to it and went back into service).

A leftover is a process **of a Slurm job**, never "a process of a non-system
user" (issue 14, finding 1: an admin's ssh login shell, ``systemd --user`` and
tmux on a drained node were killed as leftovers). A process belongs to a job
when, on the node:

* its cgroup path has a job's ``job_<id>`` component (``/proc/PID/cgroup``;
  only root and slurmstepd can put a process there), or
* it is a ``slurmstepd`` or descends from one (ps parent pids), or
* ``SLURM_JOB_ID`` is in its environment (``/proc/PID/environ``, readable by
  root only, so the check must run as root: otherwise the node is unknown).

The environment is the only evidence a process's owner can forge, so a process
of a system user (UID below ``uid_min``) that only the environment names is
reported, and keeps the node out, but is never signalled. A GPU process
(``nvidia-smi``) counts only when it passes the same test; a GPU pid this PID
namespace does not show makes the node unknown (it may be anyone's). The
check's own processes (its session and its ancestors: sshd, the login shell)
are never leftovers. Each leftover carries its start time (``/proc/PID/stat``
field 22), so the kill signals exactly that process, not a reused pid.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from slurmkit.hostlist import HostSet
from slurmkit.remote.result import NodeResult
from slurmkit.slurm.records import Job

CLEAN = "clean"
LEFTOVERS = "leftovers"
UNKNOWN = "unknown"
GPU_SKIPPED = "nvidia-smi absent: GPU check skipped"
DEFAULT_UID_MIN = 1000
# Evidence that a process belongs to a Slurm job; the first three only Slurm or root can create.
STEPD, STEP, CGROUP, ENVIRON, GPU = "slurmstepd", "step", "cgroup", "environ", "gpu"
_STRONG = frozenset({STEPD, STEP, CGROUP})
_CGROUP_JOB = re.compile(r"/job_([0-9]+)(?:/|$)")

DEFAULT_CHECK_TIMEOUT = 30.0
VIA_CHOICES = ("auto", "pdsh", "ssh")
# Jobs that hold a node. Not squeue's default (it omits SUSPENDED and similar) and not
# "all": the job that caused "Kill task failed" stays listed as finished for MinJobAge.
HOLDING_STATES = (
    "RUNNING",
    "SUSPENDED",
    "COMPLETING",
    "CONFIGURING",
    "STOPPED",
    "SIGNALING",
    "STAGE_OUT",
    "RESIZING",
)


def jobs_by_node(jobs: Iterable[Job], names: Sequence[str]) -> dict[str, list[str]]:
    """Job ids on each of ``names``; pending jobs hold no node."""
    wanted = HostSet(list(names)) if names else HostSet(None)
    found: dict[str, list[str]] = {}
    for job in jobs:
        if job.state == "PENDING" or not job.nodelist:
            continue
        for name in HostSet(job.nodelist) & wanted:
            found.setdefault(name, []).append(job.display_id)
    return found


@dataclass(frozen=True)
class Process:
    """A leftover; ``kinds`` says why it is a job's (``slurmstepd``, ``step``, ``cgroup``,
    ``environ``, plus ``gpu`` when it holds a GPU); ``job`` the job id where known."""

    pid: int
    uid: int | None
    user: str
    args: str
    kinds: tuple[str, ...]
    state: str = ""  # ps STAT; "D..." is uninterruptible sleep, which SIGKILL cannot end
    job: str = ""
    start: int | None = None  # /proc/PID/stat starttime: tells this process from a reused pid
    signal: bool = True  # False: a system user's process named only by its environment

    @property
    def unkillable(self) -> bool:
        return self.state.startswith("D")

    def __str__(self) -> str:
        command = self.args if len(self.args) <= 40 else self.args[:37] + "..."
        stuck = " [D: in uninterruptible I/O]" if self.unkillable else ""
        job = f" (job {self.job})" if self.job else ""
        spared = " [system user: not signalled]" if not self.signal else ""
        return f"{self.pid} {self.user or '?'} {command}{job}{stuck}{spared}"


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
    """The POSIX sh run on each node; every section ends with its own exit code or marker.

    One ``grep`` each over every process's cgroup and environment, and a loop of
    shell builtins for the start times: no process is started per process.
    """
    t = shlex.quote(token)
    return "\n".join(
        [
            f"T={t}",
            'echo "$T self $$"',
            'echo "$T host $(hostname)"',
            'echo "$T euid $(id -u)"',
            'echo "$T ps"',
            "ps -e -o pid= -o ppid= -o sid= -o uid= -o stat= -o user:32= -o args=",
            'echo "$T ps-end $?"',
            'echo "$T cgroup"',
            "grep -H -o -E '/job_[0-9]+(/|$)' /proc/[0-9]*/cgroup 2>/dev/null",
            'echo "$T cgroup-end"',
            'echo "$T environ"',
            "grep -a -H -z -o -E '^SLURM_JOB_ID=[0-9]+' /proc/[0-9]*/environ 2>/dev/null"
            " | tr '\\0' '\\n'",
            'echo "$T environ-end"',
            'echo "$T start"',
            "for d in /proc/[0-9]*; do",
            '  s=; { read -r s < "$d/stat"; } 2>/dev/null || continue',
            '  r=${s##*) }; set -- $r; echo "${d#/proc/} ${20}"',
            "done",
            'echo "$T start-end"',
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
    euid: int | None = None
    ps: list[str] = field(default_factory=list)
    ps_rc: int | None = None
    cgroup: list[str] = field(default_factory=list)
    environ: list[str] = field(default_factory=list)
    start: list[str] = field(default_factory=list)
    ended: set[str] = field(default_factory=set)
    gpu: list[str] = field(default_factory=list)
    gpu_rc: int | None = None
    gpu_absent: bool = False
    done: bool = False


_LISTS = ("ps", "cgroup", "environ", "start", "gpu")


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
        elif word == "euid":
            found.euid = _int(rest)
        elif word in _LISTS:
            target = getattr(found, word)
        elif word.endswith("-end") and word[:-4] in _LISTS:
            found.ended.add(word[:-4])
            if word == "ps-end":
                found.ps_rc = _int(rest)
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


def _per_pid(lines: Iterable[str], suffix: str, pattern: re.Pattern[str]) -> dict[int, str]:
    """``/proc/<pid>/<suffix>:<match>`` lines -> {pid: job id} (first match per pid)."""
    found: dict[int, str] = {}
    head = re.compile(rf"^/proc/([0-9]+)/{re.escape(suffix)}:(.*)$")
    for line in lines:
        m = head.match(line.strip())
        if m is None:
            continue
        job = pattern.search(m.group(2))
        if job is not None:
            found.setdefault(int(m.group(1)), job.group(1))
    return found


def _starts(lines: Iterable[str]) -> dict[int, int]:
    starts = {}
    for line in lines:
        pid, _, start = line.strip().partition(" ")
        if pid.isdigit() and start.isdigit():
            starts[int(pid)] = int(start)
    return starts


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
    missing = [name for name in ("cgroup", "environ", "start") if name not in s.ended]
    if missing:
        return CheckResult(node, UNKNOWN, error=f"no {'/'.join(missing)} report from the node")
    if s.euid != 0:
        return CheckResult(
            node,
            UNKNOWN,
            error=f"the check ran as uid {s.euid}, not root: other users' "
            "/proc/PID/environ cannot be read to tell job processes from others",
        )
    gpu_pids, gpu_note, gpu_error = _gpu(s, result)
    if gpu_error:
        return CheckResult(node, UNKNOWN, error=gpu_error)
    unseen = sorted(gpu_pids - {r.pid for r in rows})
    if unseen:
        return CheckResult(
            node,
            UNKNOWN,
            error=f"GPU process(es) {', '.join(map(str, unseen))} not visible to ps here "
            "(another PID namespace): cannot tell whose they are",
        )
    evidence = _Evidence(
        cgroup=_per_pid(s.cgroup, "cgroup", _CGROUP_JOB),
        environ=_per_pid(s.environ, "environ", re.compile(r"^SLURM_JOB_ID=([0-9]+)$")),
        starts=_starts(s.start),
    )
    own = _own(rows, s.self_pid)
    found = _leftovers(rows, own, gpu_pids, evidence, uid_min)
    verdict = LEFTOVERS if found else CLEAN
    return CheckResult(node, verdict, tuple(found), gpu_note, host=s.host)


@dataclass(frozen=True)
class _Evidence:
    cgroup: dict[int, str]
    environ: dict[int, str]
    starts: dict[int, int]


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


def _leftovers(
    rows: Sequence[_Row], own: set[int], gpu: set[int], evidence: _Evidence, uid_min: int
) -> list[Process]:
    """Processes of Slurm jobs (see the module docstring), never the check's own."""
    stepds = [r.pid for r in rows if _is_stepd(r.args)]
    under_stepd: set[int] = set()
    for pid in stepds:
        under_stepd |= _descendants(rows, pid)
    found = []
    for r in rows:
        if r.pid in own:
            continue
        kinds = []
        if r.pid in stepds:
            kinds.append(STEPD)
        elif r.pid in under_stepd:
            kinds.append(STEP)
        if r.pid in evidence.cgroup:
            kinds.append(CGROUP)
        if r.pid in evidence.environ:
            kinds.append(ENVIRON)
        if not kinds:
            continue  # not a job's: an admin's shell, tmux, a daemon, a non-job GPU user
        if r.pid in gpu:
            kinds.append(GPU)
        strong = bool(_STRONG.intersection(kinds))
        job = evidence.cgroup.get(r.pid) or evidence.environ.get(r.pid) or ""
        found.append(
            Process(
                r.pid,
                r.uid,
                r.user,
                r.args,
                tuple(kinds),
                r.stat,
                job=job,
                start=evidence.starts.get(r.pid),
                signal=strong or r.uid >= uid_min,
            )
        )
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
    Each pid is signalled only while it is the very process the check saw:
    same owner UID and same start time (``/proc/PID/stat`` field 22), so a pid
    reused in between is not hit. Processes the check marked not to be
    signalled, or whose owner or start time it did not learn, are never listed.
    """
    cases = [
        f"  {shlex.quote(host)}) PIDS={shlex.quote(_triples(procs))} ;;"
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
            '  [ "$(stat -c %u "/proc/$1" 2>/dev/null)" = "$2" ] || return 1',
            '  s=; { read -r s < "/proc/$1/stat"; } 2>/dev/null || return 1',
            '  r=${s##*) }; set -- "$3" $r; [ "$1" = "${21}" ]',
            "}",
            "signal() {",
            "  for x in $PIDS; do",
            "    p=${x%%:*}; rest=${x#*:}; u=${rest%%:*}; st=${rest#*:}",
            '    alive "$p" "$u" "$st" || continue',
            '    kill -s "$1" "$p" 2>/dev/null && echo "$T sent $1 $p"',
            "  done",
            "}",
            "left() {",
            "  for x in $PIDS; do",
            "    p=${x%%:*}; rest=${x#*:}; u=${rest%%:*}; st=${rest#*:}",
            '    alive "$p" "$u" "$st" && return 0',
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


def signallable(processes: Iterable[Process]) -> list[Process]:
    """The leftovers the kill may touch: marked so, with owner and start time known."""
    return [p for p in processes if p.signal and p.uid is not None and p.start is not None]


def _triples(processes: Sequence[Process]) -> str:
    return " ".join(f"{p.pid}:{p.uid}:{p.start}" for p in signallable(processes))


def parse_kill(result: NodeResult, token: str) -> tuple[list[str], str]:
    """(what was sent, e.g. ``TERM 4242``; error or "")."""
    lines = result.stdout.splitlines()
    sent = [ln.split(" sent ", 1)[1] for ln in lines if ln.startswith(f"{token} sent ")]
    if not result.ok:
        return sent, f"kill {result.status}: {result.error}"
    if f"{token} done" not in lines:
        return sent, "kill did not run to its end"
    return sent, ""
