"""Node side of ``slurmkit pyspy``: finds the job's Python processes here and dumps them.

slurmkit does not import this module to run it: it sends its source to every
node as ``python -c <source> ARGS`` through the remote-execution layer (see
:mod:`.nodecmd`). It may therefore run on whatever ``python3`` a node has,
possibly 3.6: standard library only, no syntax newer than 3.6, annotations
written as strings (never evaluated).

Output, one JSON object per line, flushed as soon as known so a node killed
at its time limit still leaves what it had:

* ``{"type": "process", "pid", "ppid", "role", "command", "status", "dump", "error"}``
  per dumped process; ``status`` is ``ok``, ``gone`` (exited before the dump),
  ``ptrace_denied``, ``not_python``, ``timeout`` or ``error``;
* one final ``{"type": "node", "node", "job_processes", "python", "selected",
  "py_spy", "looked_for", "problem", "message"}``; ``problem`` is null,
  ``py_spy_missing``, ``py_spy_untrusted`` (found, but a user other than root could
  change it: never run), ``listpids_failed`` or ``no_job_processes``.

Finding the job's processes: ``--source listpids`` asks the local slurmd
(``scontrol listpids JOB NODE``; runs inside a step of the job, which is left
out), ``--source environ`` reads ``SLURM_JOB_ID`` from ``/proc/PID/environ``
of the job user's processes (over ssh, when no step can start).

Which processes: Python ones (``/proc/PID/exe``, else ``argv[0]``, named
``python*``). A Python process is a rank's main process when its parent is
not a Python process of the job, or when a launcher (torchrun, deepspeed)
started it with its own ``RANK``/``LOCAL_RANK`` (multiprocessing's spawn and
forkserver workers excepted); a main process that started other main
processes is their ``launcher``. The rest (data-loader workers, forked
helpers) are ``child`` processes, dumped only with ``--all-processes``.
"""

import argparse
import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

PROC = "/proc"
# Where py-spy is installed when not on the PATH a job or cron gives (pip puts it in
# /usr/local/bin); searched after PATH.
STANDARD_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
RANK_VARIABLES = ("RANK", "LOCAL_RANK")
INSTALL_HINT = "pip install py-spy"
_WORKERS = 8
_LISTPIDS_TIMEOUT = 20.0
_DENIED = re.compile(r"permission denied|operation not permitted|elevated permissions", re.I)
_GONE = re.compile(r"no such process|check that the process is running", re.I)
_NOT_PYTHON = re.compile(r"failed to find python (version|interpreter)", re.I)


class Proc:
    """What /proc says about one process; ``env`` is None when it was not read or unreadable."""

    __slots__ = ("argv", "env", "exe", "pid", "ppid", "step", "uid")

    def __init__(
        self,
        pid: int,
        ppid: int,
        uid: "int | None",
        exe: str,
        argv: "list[str]",
        env: "dict[str, str] | None",
        step: "str | None" = None,
    ) -> None:
        self.pid = pid
        self.ppid = ppid
        self.uid = uid
        self.exe = exe
        self.argv = argv
        self.env = env
        self.step = step

    @property
    def command(self) -> str:
        return " ".join(self.argv) if self.argv else self.exe


# ----------------------------------------------------------------- reading /proc


def _read(path: str) -> "bytes | None":
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def read_environ(pid: int, root: str = PROC) -> "dict[str, str] | None":
    """The environment the process started with; None when unreadable (another user's)."""
    data = _read(os.path.join(root, str(pid), "environ"))
    if data is None:
        return None
    env = {}
    for item in data.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            env[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


def read_proc(pid: int, root: str = PROC, with_env: bool = True) -> "Proc | None":
    """One process, or None when it is gone."""
    base = os.path.join(root, str(pid))
    stat = _read(os.path.join(base, "stat"))
    if stat is None:
        return None
    # "pid (comm) S ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        ppid = int(fields[1])
    except (IndexError, ValueError):
        return None
    exe = _readlink(os.path.join(base, "exe"))
    if exe.endswith(" (deleted)"):
        exe = exe[: -len(" (deleted)")]
    raw_argv = _read(os.path.join(base, "cmdline")) or b""
    argv = [a.decode("utf-8", "replace") for a in raw_argv.split(b"\0") if a]
    env = read_environ(pid, root) if with_env else None
    return Proc(pid, ppid, _owner(base), exe, argv, env)


def _owner(path: str) -> "int | None":
    try:
        return os.stat(path).st_uid
    except OSError:
        return None


def _readlink(path: str) -> str:
    """The link's target; empty when unreadable (another user's process without root)."""
    try:
        return os.readlink(path)
    except OSError:
        return ""


def own_lineage(root: str = PROC) -> set:
    """This script's pid and its ancestors: the monitor itself is never a target."""
    seen = set()
    pid = os.getpid()
    while pid > 1 and pid not in seen:
        seen.add(pid)
        proc = read_proc(pid, root, with_env=False)
        if proc is None:
            break
        pid = proc.ppid
    return seen


# ----------------------------------------------------------------- the job's processes


def parse_listpids(text: str, own_step: "str | None" = None) -> "list[tuple]":
    """(pid, step) rows of ``scontrol listpids``, leaving out the step ``own_step``."""
    rows = []
    for line in text.splitlines():
        words = line.split()
        if len(words) < 3 or not words[0].isdigit():
            continue  # the header, or noise
        if own_step is not None and words[2] == own_step:
            continue
        rows.append((int(words[0]), words[2]))
    return rows


def job_pids_from_listpids(jobid: str, node: "str | None", budget: float) -> "list[tuple]":
    """Ask the local slurmd (through scontrol) which processes belong to the job."""
    argv = ["scontrol", "listpids", jobid] + ([node] if node else [])
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise RuntimeError(f"cannot run scontrol: {exc}") from exc
    try:
        out, err = proc.communicate(timeout=max(1.0, min(_LISTPIDS_TIMEOUT, budget)))
    except subprocess.TimeoutExpired as exc:
        _stop(proc)
        raise RuntimeError("scontrol listpids did not answer") from exc
    if proc.returncode != 0:
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(message[-1] if message else f"exit code {proc.returncode}")
    return parse_listpids(out.decode("utf-8", "replace"), os.environ.get("SLURM_STEP_ID"))


def _stop(child: "subprocess.Popen") -> None:
    """Kill a program that ran out of time without waiting on pipes its children may hold."""
    child.kill()
    try:
        child.communicate(timeout=2)
    except subprocess.TimeoutExpired:
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
        child.wait()


def job_pids_from_environ(jobid: str, uid: "int | None", root: str = PROC) -> "list[tuple]":
    """Processes of ``uid`` started with ``SLURM_JOB_ID=jobid`` (their step is unknown)."""
    wanted = "SLURM_JOB_ID=" + jobid
    rows = []
    for name in os.listdir(root):
        if not name.isdigit():
            continue
        if uid is not None and _owner(os.path.join(root, name)) != uid:
            continue
        data = _read(os.path.join(root, name, "environ"))
        if data and wanted in data.decode("utf-8", "replace").split("\0"):
            rows.append((int(name), None))
    return sorted(rows)


# ----------------------------------------------------------------- choosing processes


def is_python(proc: Proc) -> bool:
    """The executable (or, unreadable, argv[0]) is named python*: python3, python3.11..."""
    path = proc.exe or (proc.argv[0] if proc.argv else "")
    return os.path.basename(path).startswith("python")


def _rank(proc: Proc) -> "tuple | None":
    if not proc.env:
        return None
    values = tuple(proc.env.get(name) for name in RANK_VARIABLES)
    return values if any(v is not None for v in values) else None


def _multiprocessing_helper(proc: Proc) -> bool:
    """Spawn/forkserver workers and the resource tracker, which are always children.

    They may carry a RANK their parent put in os.environ after it started, while
    /proc shows the parent's starting environment, without it.
    """
    return any(a == "--multiprocessing-fork" or "from multiprocessing." in a for a in proc.argv)


def assign_roles(procs: "list[Proc]") -> "dict[int, str]":
    """pid -> ``rank``, ``launcher`` or ``child`` for every Python process of the job."""
    python = {p.pid: p for p in procs if is_python(p)}
    roles = {}
    for proc in python.values():
        parent = python.get(proc.ppid)
        if parent is None:
            roles[proc.pid] = "rank"
            continue
        own = _rank(proc)
        launched = own is not None and own != _rank(parent)
        roles[proc.pid] = "rank" if launched and not _multiprocessing_helper(proc) else "child"
    for proc in python.values():
        parent = python.get(proc.ppid)
        if roles[proc.pid] == "rank" and parent is not None and roles[parent.pid] == "rank":
            roles[parent.pid] = "launcher"
    return roles


def select(procs: "list[Proc]", all_processes: bool = False) -> "list[tuple]":
    """(proc, role) to dump, in pid order: ranks and launchers, children only when asked."""
    roles = assign_roles(procs)
    chosen = []
    for proc in sorted(procs, key=lambda p: p.pid):
        role = roles.get(proc.pid)
        if role is None or (role == "child" and not all_processes):
            continue
        chosen.append((proc, role))
    return chosen


# ----------------------------------------------------------------- py-spy


def untrusted(path: str, uid: int) -> "str | None":
    """Why root should not run ``path`` (already resolved), or None when it is safe.

    The rule of slurmkit.trust: the file and every directory above it belong to
    root or to ``uid`` and nobody else can write them; a root-owned sticky
    directory (/tmp) is fine above the file.
    """
    current, leaf = path, True
    while True:
        try:
            st = os.stat(current)
        except OSError as exc:
            return f"cannot inspect {current}: {exc.strerror}"
        if st.st_uid not in (0, uid):
            return f"{current} is owned by uid {st.st_uid}, not root"
        if st.st_mode & 0o022:
            sticky_dir = stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX and st.st_uid == 0
            if leaf or not sticky_dir:
                mode = stat.S_IMODE(st.st_mode)
                return f"{current} is writable by group or others (mode {mode:04o})"
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current, leaf = parent, False


def _candidate(path: str, uid: int) -> "tuple":
    """(resolved path or None, why refused or None) for one possible py-spy."""
    real = os.path.realpath(path)
    if not (os.path.isfile(real) and os.access(real, os.X_OK)):
        return None, None
    why = untrusted(real, uid)
    return (None, f"{path}: {why}") if why else (real, None)


def _search_dirs() -> "list[str]":
    """PATH's absolute entries, then the standard bin dirs (cron's PATH lacks /usr/local/bin)."""
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if os.path.isabs(d)]
    return list(dict.fromkeys(dirs + list(STANDARD_DIRS)))


def find_py_spy(explicit: "str | None", uid: "int | None" = None) -> tuple:
    """(resolved path or None, places looked at, refused candidates with why).

    ``--py-spy`` only when given (a bare name is searched like the default), else
    the first trusted ``py-spy`` in :func:`_search_dirs`; an untrusted one is
    skipped and named, never run.
    """
    uid = os.geteuid() if uid is None else uid
    refused = []  # type: list[str]
    if explicit and os.sep in explicit:
        found, why = _candidate(explicit, uid)
        return found, [explicit], [why] if why else []
    name = explicit or "py-spy"
    looked = [f"{name} on PATH, then in {', '.join(STANDARD_DIRS)}"]
    for directory in _search_dirs():
        found, why = _candidate(os.path.join(directory, name), uid)
        if found:
            return found, looked, refused
        if why:
            refused.append(why)
    return None, looked, refused


def classify_failure(stderr: str, alive: bool) -> tuple:
    """(status, one-line error) for a py-spy that exited non-zero."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    error_lines = [line for line in lines if line.startswith(("Error:", "Permission Denied"))]
    message = (error_lines or lines or ["py-spy failed without a message"])[0]
    if not alive:
        return "gone", "exited before the dump"
    # Before "gone": without CAP_SYS_PTRACE py-spy cannot read /proc/PID/exe and says
    # "Check that the process is running", caused by "Permission denied (os error 13)".
    if _DENIED.search(stderr):
        return "ptrace_denied", message
    if _GONE.search(stderr):
        return "gone", "exited before the dump"
    if _NOT_PYTHON.search(stderr):
        return "not_python", message
    return "error", message


def dump(
    py_spy: str, proc: Proc, role: str, native: bool, timeout: float, root: str = PROC
) -> dict:
    """One ``py-spy dump --pid P`` as a process record."""
    record = {
        "type": "process",
        "pid": proc.pid,
        "ppid": proc.ppid,
        "role": role,
        "command": proc.command,
        "status": "ok",
        "dump": "",
        "error": "",
    }
    if timeout <= 0:
        record.update(status="timeout", error="not started: the node's time budget was spent")
        return record
    argv = [py_spy, "dump", "--pid", str(proc.pid)] + (["--native"] if native else [])
    try:
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        record.update(status="error", error=f"cannot run {py_spy}: {exc}")
        return record
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(child)
        record.update(status="timeout", error=f"py-spy did not finish within {timeout:.1f} s")
        return record
    text = out.decode("utf-8", "replace")
    if child.returncode == 0:
        record["dump"] = text
        return record
    alive = os.path.exists(os.path.join(root, str(proc.pid)))
    status, error = classify_failure(err.decode("utf-8", "replace"), alive)
    record.update(status=status, error=error, dump=text)
    return record


# ----------------------------------------------------------------- main


def _emit(record: dict) -> None:
    sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
    sys.stdout.flush()


def _node_name() -> str:
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def _arguments(argv: "list[str]") -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="slurmkit-pyspy-node")
    parser.add_argument("--jobid", required=True)
    parser.add_argument("--source", choices=("listpids", "environ"), required=True)
    parser.add_argument("--uid", type=int)
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--native", action="store_true")
    parser.add_argument("--all-processes", action="store_true")
    parser.add_argument("--py-spy")
    parser.add_argument("--proc-root", default=PROC)
    return parser.parse_args(argv)


def run(argv: "list[str]") -> int:
    args = _arguments(argv)
    deadline = time.monotonic() + args.budget
    node = {"type": "node", "node": _node_name(), "problem": None, "message": ""}  # type: dict[str, object]
    try:
        if args.source == "listpids":
            here = os.environ.get("SLURMD_NODENAME")
            rows = job_pids_from_listpids(args.jobid, here, args.budget)
        else:
            rows = job_pids_from_environ(args.jobid, args.uid, args.proc_root)
    except RuntimeError as exc:
        node.update(problem="listpids_failed", message=str(exc))
        _emit(node)
        return 0
    mine = own_lineage(args.proc_root)
    procs = []
    for pid, step in rows:
        proc = None if pid in mine else read_proc(pid, args.proc_root)
        if proc is not None:
            proc.step = step
            procs.append(proc)
    chosen = select(procs, args.all_processes)
    py_spy, looked, refused = find_py_spy(args.py_spy)
    node.update(
        job_processes=len(procs),
        python=sum(1 for p in procs if is_python(p)),
        selected=len(chosen),
        py_spy=py_spy,
        looked_for=looked,
    )
    if not procs:
        node["problem"] = "no_job_processes"
    elif chosen and py_spy is None and refused:
        node.update(problem="py_spy_untrusted", message="; ".join(refused))
    elif chosen and py_spy is None:
        node["problem"] = "py_spy_missing"
    if chosen and py_spy is not None:
        _dump_all(py_spy, chosen, args, deadline)
    _emit(node)
    return 0


def _dump_all(
    py_spy: str, chosen: "list[tuple]", args: argparse.Namespace, deadline: float
) -> None:
    """Dump in parallel; each dump gets what is left of the node's budget when it starts."""

    def one(proc: Proc, role: str) -> dict:
        left = deadline - time.monotonic()
        return dump(py_spy, proc, role, args.native, left, args.proc_root)

    with ThreadPoolExecutor(max_workers=min(_WORKERS, len(chosen))) as pool:
        futures = [pool.submit(one, proc, role) for proc, role in chosen]
        for future in futures:
            _emit(future.result())


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
