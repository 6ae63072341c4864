"""The failures of Slurm's state-changing calls, provoked for real on a sandbox (issue 29).

Each case is one call in a known situation:

- ``refused``: Slurm (or its client) decided, and nothing was done: an unknown job or node,
  another user's job, a bad value, a job that has finished, a non-root node change;
- ``stopped``: slurmctld is stopped (SIGSTOP) while the call is made: the request may sit
  in its backlog and be carried out when it wakes (it is, for every case here);
- ``unreachable``: nothing listens on the controller's port (a copy of slurm.conf with
  another ``SlurmctldPort``): no request can have been received.

``capture`` records every case's exit code, stdout and stderr as Slurm printed them, into
``tests/fixtures/refusals/slurm-<version>.json``; ``tests/unit/test_refusals.py`` classifies
each recorded text, and ``tests/integration/test_faults_refusals.py`` runs the cases against
each version's own sandbox and classifies what it answers now. Run it as root, on a
sandbox of your own (it stops that sandbox's slurmctld, and its backlog then drains node
``node-2`` and undrains it, and reboots ``node-3``)::

    eval "$(slurmkit sandbox env --dir /tmp/sk-capture-22.05)"
    .venv/bin/python -m tests.integration.refusal_cases --dir /tmp/sk-capture-22.05 \\
        --out tests/fixtures/refusals/slurm-22.05.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

OTHER_USER = "slurmkit-test"  # made by scripts/test before any sandbox starts (conftest)
UNKNOWN_JOB = "999999"


@dataclass(frozen=True)
class Case:
    name: str
    situation: str  # refused | stopped | unreachable
    argv: tuple[str, ...]
    other_user: bool = False
    destructive: bool = False  # drains, reboots: kept out of the live test of a shared sandbox


@dataclass
class Jobs:
    """The jobs the cases act on: a held pending one, a running one, one just finished."""

    held: str
    running: str
    finished: str
    others: str  # another user's pending, held job
    others_running: str  # another user's running job, 10 minutes limit


def _sbatch(*args: str, user: bool = False) -> str:
    argv = ["sbatch", "--parsable", "--partition=cpu", "--output=/dev/null", *args]
    out = _run(argv, other_user=user, check=True).stdout
    return out.strip().split(";")[0]


def _run(
    argv: list[str] | tuple[str, ...],
    *,
    other_user: bool = False,
    env: dict[str, str] | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ if env is None else env)
    full = list(argv)
    if other_user:
        keep = [f"{k}={env[k]}" for k in ("SLURM_CONF", "PATH") if k in env]
        full = ["runuser", "-u", OTHER_USER, "--", "env", *keep, *full]
    done = subprocess.run(
        full, capture_output=True, text=True, env=env, timeout=120, check=False, cwd="/tmp"
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(full)}: {done.returncode} {done.stderr.strip()}")
    return done


def make_jobs() -> Jobs:
    held = _sbatch("--hold", "--time=30", "--wrap", "sleep 600")
    running = _sbatch("--time=30", "--wrap", "sleep 600")
    finished = _sbatch("--time=30", "--wrap", "true")
    others = _sbatch("--hold", "--time=30", "--wrap", "sleep 600", user=True)
    others_running = _sbatch("--time=10", "--wrap", "sleep 600", user=True)
    _wait_running(running, others_running)  # a user may raise a pending job's limit
    return Jobs(held, running, finished, others, others_running)


def _wait_running(*jobs: str, within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    while True:
        out = _run(["squeue", "--noheader", "--format=%T", f"--jobs={','.join(jobs)}"]).stdout
        if out.split() == ["RUNNING"] * len(jobs):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"jobs {', '.join(jobs)} not running after {within:g} s: {out!r}")
        time.sleep(0.5)


def cases(jobs: Jobs, *, node: str = "node-2", reboot_node: str = "node-3") -> list[Case]:
    held, running, done = jobs.held, jobs.running, jobs.finished
    refused = [
        Case("hold an unknown job", "refused", ("scontrol", "hold", UNKNOWN_JOB)),
        Case("release an unknown job", "refused", ("scontrol", "release", UNKNOWN_JOB)),
        Case("update an unknown job", "refused",
             ("scontrol", "update", f"JobId={UNKNOWN_JOB}", "TimeLimit=30")),
        Case("extend an unknown job", "refused",
             ("scontrol", "update", f"JobId={UNKNOWN_JOB}", "TimeLimit+=10")),
        Case("a bad time limit", "refused", ("scontrol", "update", f"JobId={held}", "TimeLimit=x")),
        Case("hold a finished job", "refused", ("scontrol", "hold", done)),
        Case("release a finished job", "refused", ("scontrol", "release", done)),
        Case("update a finished job", "refused",
             ("scontrol", "update", f"JobId={done}", "TimeLimit=30")),
        Case("hold another user's job", "refused", ("scontrol", "hold", held), other_user=True),
        Case("release another user's job", "refused",
             ("scontrol", "release", held), other_user=True),
        Case("update another user's job", "refused",
             ("scontrol", "update", f"JobId={held}", "TimeLimit=20"), other_user=True),
        Case("a user raises their running job's limit", "refused",
             ("scontrol", "update", f"JobId={jobs.others_running}", "TimeLimit=60"),
             other_user=True),
        Case("cancel another user's job", "refused", ("scancel", held), other_user=True),
        Case("cancel by name for an unknown user", "refused",
             ("scancel", "--name=none", "--user=no-such-user-29")),
        Case("update an unknown node", "refused",
             ("scontrol", "update", "nodename=no-such-node", "state=drain", "reason=x")),
        Case("an invalid node state", "refused",
             ("scontrol", "update", f"nodename={node}", "state=bogus")),
        Case("drain without a reason", "refused",
             ("scontrol", "update", f"nodename={node}", "state=drain")),
        Case("a user drains a node", "refused",
             ("scontrol", "update", f"nodename={node}", "state=drain", "reason=x"),
             other_user=True),
        Case("reboot an unknown node", "refused", ("scontrol", "reboot", "no-such-node")),
        Case("a user reboots a node", "refused",
             ("scontrol", "reboot", reboot_node), other_user=True),
        Case("sbatch to an unknown partition", "refused",
             ("sbatch", "--partition=no-such-partition", "--wrap", "true")),
        Case("sbatch with a bad time", "refused", ("sbatch", "--time=bogus", "--wrap", "true")),
    ]  # fmt: skip
    silent = [
        Case("hold", "stopped", ("scontrol", "hold", held)),
        Case("release", "stopped", ("scontrol", "release", held)),
        Case("update a job's limit", "stopped",
             ("scontrol", "update", f"JobId={held}", "TimeLimit=25")),
        Case("extend a job's limit", "stopped",
             ("scontrol", "update", f"JobId={held}", "TimeLimit+=5")),
        Case("cancel a job", "stopped", ("scancel", running)),
        Case("cancel by name", "stopped", ("scancel", "--name=sk-refusal-none", "--user=root")),
        Case("sbatch", "stopped",
             ("sbatch", "--partition=cpu", "--output=/dev/null", "--wrap", "true")),
        Case("drain a node", "stopped",
             ("scontrol", "update", f"nodename={node}", "state=drain", "reason=sk-capture"),
             destructive=True),
        Case("undrain a node", "stopped",
             ("scontrol", "update", f"nodename={node}", "state=undrain"), destructive=True),
        Case("reboot a node", "stopped", ("scontrol", "reboot", reboot_node), destructive=True),
    ]  # fmt: skip
    unreachable = [
        Case(c.name, "unreachable", c.argv) for c in silent if not c.destructive
    ] + [
        Case("drain a node", "unreachable",
             ("scontrol", "update", f"nodename={node}", "state=drain", "reason=sk-capture")),
    ]  # fmt: skip
    return refused + silent + unreachable


@contextlib.contextmanager
def stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def dead_port_env(conf: Path) -> dict[str, str]:
    """The environment with a copy of slurm.conf whose controller port nothing listens on."""
    text = conf.read_text()
    copy = conf.with_name("slurm-no-controller.conf")
    copy.write_text(re.sub(r"(?m)^SlurmctldPort=.*$", "SlurmctldPort=9", text))
    return {**os.environ, "SLURM_CONF": str(copy)}


def record(case: Case, done: subprocess.CompletedProcess[str], took: float) -> dict[str, object]:
    return {
        "case": case.name,
        "situation": case.situation,
        "argv": list(case.argv),
        "as": OTHER_USER if case.other_user else "root",
        "returncode": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "seconds": round(took, 1),
    }


def run_cases(
    all_cases: list[Case], ctld: int, conf: Path, say: Callable[[str], None] = print
) -> list[dict[str, object]]:
    """Each case in its situation; slurmctld is stopped for the ``stopped`` ones only."""
    found = []
    dead = dead_port_env(conf)
    for case in all_cases:
        start = time.monotonic()
        if case.situation == "stopped":
            with stopped(ctld):
                done = _run(case.argv, other_user=case.other_user)
        else:
            env = dead if case.situation == "unreachable" else None
            done = _run(case.argv, other_user=case.other_user, env=env)
        found.append(record(case, done, time.monotonic() - start))
        say(f"{case.situation:12} {case.name}: {done.returncode} {done.stderr.strip()!r}")
    return found


def slurmctld_pid(directory: Path) -> int:
    state = json.loads((directory / "state.json").read_text())
    (pid,) = [d["pid"] for d in state["daemons"] if d["name"] == "slurmctld"]
    return int(pid)


def version() -> str:
    return _run(["sinfo", "--version"], check=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True, help="the sandbox's --dir")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    conf = Path(os.environ["SLURM_CONF"])
    if not conf.is_relative_to(args.dir):
        raise SystemExit(f"SLURM_CONF {conf} is not {args.dir}'s: eval its `sandbox env` first")
    jobs = make_jobs()
    _run(["scancel", jobs.finished])  # ended (CANCELLED), still known to slurmctld
    time.sleep(2)
    try:
        found = run_cases(cases(jobs), slurmctld_pid(args.dir), conf)
    finally:
        _run(["scancel", jobs.held, jobs.running, jobs.others, jobs.others_running])
    data = {
        "slurm": version(),
        "captured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "how": "tests/integration/refusal_cases.py on `slurmkit sandbox up --profile test` "
        "(MessageTimeout=5)",
        "jobs": {"held": jobs.held, "running": jobs.running, "finished": jobs.finished,
                 "other user's held": jobs.others, "other user's running": jobs.others_running},
        "cases": found,
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
