"""Issue 28, item 11: each robustness finding of the second review, reproduced and refused.

Every test here failed on the code before its fix. Hangs are checked in a real process
with a timeout (a hang detector, not a timed assertion); the rest in-process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import slurmkit
from slurmkit import _proc
from slurmkit.errors import UsageError
from slurmkit.faulty import excluded

HANG_SECONDS = 20
CODE_ROOT = Path(slurmkit.__file__).resolve().parents[1]  # the code this test imported


@dataclass
class Done:
    code: int
    stdout: str
    stderr: str


def without_dac_override() -> list[str]:
    """Root reads any folder: drop the capabilities that let it, so mode 000 counts."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to test an unreadable folder as root"
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


def slurmkit_process(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, prefix: Sequence[str] = ()
) -> Done:
    """``slurmkit ARGS`` in a process of its own, no Slurm on PATH, ended if it hangs."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    base = {
        "PATH": str(empty),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(CODE_ROOT),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "slurmkit", *args],
            capture_output=True,
            env={**base, **(env or {})},
            cwd="/",
            timeout=HANG_SECONDS,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"slurmkit {' '.join(args)}: still running after {HANG_SECONDS} s (a hang)")
    return Done(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode())


def one_line_error(done: Done, *expected: str) -> None:
    assert done.code == 2, done
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("slurmkit: "), done.stderr
    for text in expected:
        assert text in done.stderr, done.stderr


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


# ---------------------------------------------------------------- tracebacks


def test_an_unreadable_home_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """config.py called Path.exists() on ~/.config/slurmkit/config.toml: PermissionError."""
    home = tmp_path / "locked-home"
    home.mkdir()
    home.chmod(0)
    try:
        done = slurmkit_process(
            tmp_path, "nodes", "expand", "n[1-2]", env={"HOME": str(home)},
            prefix=without_dac_override(),
        )  # fmt: skip
    finally:
        home.chmod(0o700)
    one_line_error(done, "cannot read config file", "Permission denied", "SLURMKIT_CONFIG")


def test_1e400_for_an_integer_in_a_config_file_is_one_line(
    tmp_path: Path, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TOML reads 1e400 as inf; int(inf) raised OverflowError."""
    config = tmp_path / "config.toml"
    config.write_text("[nodes.expand]\nmax = 1e400\n")
    monkeypatch.setenv("SLURMKIT_CONFIG", str(config))
    result = run_cli("nodes", "expand", "n1", exit_code=2)
    assert result.stderr.count("\n") == 1
    assert "line 2, key nodes.expand.max: expected integer" in result.stderr


def test_a_bad_identityfile_line_in_ssh_config_is_one_line(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    """paramiko's ConfigParseError ('Unparsable line IdentityFile') was a traceback."""
    config = tmp_path / "ssh_config"
    for line in ("IdentityFile", "Port", "Match host", "Port 99999999999999999999"):
        config.write_text(f"Host *\n  {line}\n")
        result = run_cli("run", "--via", "ssh", "--ssh-config", str(config), "-w", "n1", "true",
                         exit_code=2)  # fmt: skip
        assert result.stderr.startswith("slurmkit: ssh config")
        assert result.stderr.count("\n") == 1


# ---------------------------------------------------------------- hangs on FIFOs


def test_slurmkit_config_naming_a_fifo_is_refused_at_once(tmp_path: Path, fifo: Path) -> None:
    done = slurmkit_process(tmp_path, "nodes", "expand", "n1", env={"SLURMKIT_CONFIG": str(fifo)})
    one_line_error(done, "not a regular file")


def test_an_exclude_list_that_is_a_fifo_is_refused_at_once(tmp_path: Path, fifo: Path) -> None:
    one_line_error(
        slurmkit_process(tmp_path, "faulty", "excluded", "--state", str(fifo)),
        "exclude list",
        "not a regular file",
    )


@pytest.mark.parametrize("command", ["xid", "gpu-health"])
def test_from_a_fifo_or_a_dev_zero_link_is_refused_at_once(
    tmp_path: Path, fifo: Path, command: str
) -> None:
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    for source in (fifo, zero):
        one_line_error(
            slurmkit_process(tmp_path, "faulty", command, "--from", str(source)),
            "not a regular file",
        )


def test_completion_after_cron_run_now_dir_with_a_fifo_does_not_hang(
    tmp_path: Path, fifo: Path
) -> None:
    """TAB read DIR/scheduler/slurmkit-cron.json: a FIFO there blocked the shell."""
    cron = tmp_path / "cron"
    (cron / "scheduler").mkdir(parents=True)
    os.mkfifo(cron / "scheduler" / "slurmkit-cron.json")
    words = f"slurmkit cron run-now --dir {cron} "
    env = {"_SLURMKIT_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": "5"}
    done = slurmkit_process(tmp_path, env=env)
    assert (done.code, done.stdout.strip(), done.stderr) == (0, "", "")
    manifest = cron / "scheduler" / "slurmkit-cron.json"
    manifest.unlink()
    manifest.write_text(json.dumps({"version": 1, "periods": ["hourly", "daily"]}))
    offered = slurmkit_process(tmp_path, env=env).stdout.split()
    assert offered == ["plain,hourly", "plain,daily"]  # the same TAB reads a real manifest


# ---------------------------------------------------------------- a timeout's leftovers


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X")  # dead, not yet reaped


def _poll(condition: Callable[[], bool], seconds: float = HANG_SECONDS) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_timeout_ends_what_the_command_put_in_the_background(tmp_path: Path) -> None:
    """A health ``cmd`` check ``sh -c 'sleep 300 & sleep 300'``: its sleep outlived the timeout."""
    pidfile = tmp_path / "background"
    script = 'sleep 300 & echo $! > "$0"; sleep 300'
    # 5 s: the shell must have started its child and written its pid before the timeout,
    # even on a machine loaded by every version's live session.
    done = _proc.run(["sh", "-c", script, str(pidfile)], timeout=5)
    assert done.timed_out
    assert _poll(lambda: pidfile.exists() and pidfile.read_text().strip().isdigit())
    pid = int(pidfile.read_text())
    try:
        assert _poll(lambda: _gone(pid)), f"the background sleep {pid} is still running"
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_ctrl_c_is_passed_on_to_the_command_and_then_its_group_ends(tmp_path: Path) -> None:
    """In a session of its own the command no longer gets the terminal's Ctrl-C: we pass
    it on (srun cancels its step on SIGINT), then end what is left."""
    said, pidfile = tmp_path / "said", tmp_path / "background"
    script = 'trap "echo INT > \\"$0\\"; exit 130" INT; sleep 300 & echo $! > "$1"; wait'

    def ctrl_c(signum: int, frame: object) -> None:
        # Only once the shell has set its trap and started its child (it wrote the pid):
        # on a loaded machine a fixed 1 s came before the trap (seen in CI).
        if pidfile.exists() and pidfile.read_text().strip():
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    signal.setitimer(signal.ITIMER_REAL, 0.2, 0.2)
    try:
        with pytest.raises(KeyboardInterrupt):
            _proc.run(["sh", "-c", script, str(said), str(pidfile)], timeout=HANG_SECONDS)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert said.read_text() == "INT\n"  # the shell got the Ctrl-C itself
    pid = int(pidfile.read_text())
    try:
        assert _poll(lambda: _gone(pid)), f"the background sleep {pid} is still running"
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_command_that_ends_in_time_still_gives_its_output_and_code() -> None:
    done = _proc.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=30)
    assert (done.returncode, done.stdout, done.stderr, done.timed_out) == (
        3,
        "out\n",
        "err\n",
        False,
    )
    fed = _proc.run(["cat"], input="fed\n", timeout=30)
    assert (fed.returncode, fed.stdout) == (0, "fed\n")


# ---------------------------------------------------------------- one name for the health config


def test_health_reads_the_config_the_undrain_gate_names(
    tmp_path: Path, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate passes $SLURMKIT_HEALTH_CONFIG; health read $SLURMKIT_HEALTH_CONFIG_PATH."""
    from slurmkit.undrain import healthgate

    config = tmp_path / "gate.toml"
    config.write_text(f"state_dir = '{tmp_path}/state'\n[[check]]\ntype = 'cmd'\nargv = ['true']\n")
    config.chmod(0o644)
    for name in list(os.environ):
        if name.startswith(("SLURM", "SLURMKIT")):
            monkeypatch.delenv(name)
    monkeypatch.setenv(healthgate.CONFIG_ENV, str(config))
    result = run_cli("health", "--no-drain", "--json")
    report = json.loads(result.stdout)
    assert report["passed"] is True and [c["check"] for c in report["checks"]] == ["cmd"]


# ---------------------------------------------------------------- the exclude list


SOON, LATER = "2026-01-01T00:00:00+00:00", "2099-01-01T00:00:00+00:00"


def _list_with(path: Path, node: str) -> None:
    entry = {"node": node, "check": "disk", "error": "full", "time": SOON, "expires": LATER}
    path.write_text(json.dumps({"version": 1, "entries": [entry]}))


BAD_ENTRIES = ["-oProxyCommand=x", "n[1-99999999]", "n;reboot", "$(id)", "n[1-", "n\x1b[2J"]


@pytest.mark.parametrize("node", BAD_ENTRIES)
def test_an_entry_that_is_no_node_is_refused_when_loaded(
    tmp_path: Path, run_cli: Callable[..., Any], node: str
) -> None:
    path = tmp_path / "excluded.json"
    _list_with(path, node)
    with pytest.raises(excluded.CorruptExcludeList, match=r"entry 0: .*not a node name"):
        excluded.load(path)
    result = run_cli("template", "render", "torchrun", "--state", str(path), exit_code=2)
    assert result.stderr.count("\n") == 1 and "#SBATCH" not in result.stdout


@pytest.mark.parametrize("node", BAD_ENTRIES)
def test_an_entry_that_is_no_node_is_never_added(tmp_path: Path, node: str) -> None:
    path = tmp_path / "excluded.json"
    with pytest.raises(UsageError, match="not added to the exclude list"):
        excluded.record(path, [(node, "disk", "full")])
    assert not path.exists()


def test_node_names_and_small_hostlists_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "excluded.json"
    _list_with(path, "gpu-a1_2.rack3")
    assert [e.node for e in excluded.load(path)] == ["gpu-a1_2.rack3"]
    _list_with(path, "node-[1-3]")
    assert excluded.hostlist(path) == "node-[1-3]"


def test_the_whole_list_is_capped_too(tmp_path: Path) -> None:
    """70,000 names in 70 entries: every render that merges them would refuse."""
    path = tmp_path / "excluded.json"
    entry = {"check": "disk", "error": "", "time": SOON, "expires": LATER}
    entries = [{**entry, "node": f"r{i}n[1-1000]"} for i in range(70)]
    path.write_text(json.dumps({"version": 1, "entries": entries}))
    with pytest.raises(excluded.CorruptExcludeList, match=f"more than {excluded.MAX_NODES} nodes"):
        excluded.load(path)


# ---------------------------------------------------------------- nodes, hostfile, train


@pytest.mark.parametrize("blank", [" ", "", "\t", "  \n"])
def test_nodes_expand_of_a_blank_list_is_refused_like_a_comma(
    run_cli: Callable[..., Any], blank: str
) -> None:
    for command in ("expand", "count", "fold"):
        result = run_cli("nodes", command, blank, exit_code=2)
        assert "names no node" in result.stderr and result.stdout == ""


def test_hostfile_stops_on_tasks_per_node_for_another_node_count(
    run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It fell back to one slot per host (exit 0): the launcher started 2 processes, not 6."""
    for name in list(os.environ):
        if name.startswith(("SLURM", "SLURMKIT")):
            monkeypatch.delenv(name)
    env = {"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "3"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = run_cli("hostfile", exit_code=2)
    assert result.stdout == "" and "describes 1 nodes" in result.stderr
    good = run_cli("hostfile", "--slots", "3").stdout
    assert good == "n1 slots=3\nn2 slots=3\n"


def test_train_start_without_sbatch_says_nothing_was_queued_and_leaves_nothing(
    tmp_path: Path, run_cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It kept .slurmkit/trains/NAME and said the array 'may have been queued'."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to("/bin/bash")  # bash -n checks the script; no sbatch
    work = tmp_path / "work"
    work.mkdir()
    script = work / "job.slurm"
    script.write_text("#!/bin/bash\n#SBATCH -N 1\n#SBATCH --time=10\necho hi\n")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.chdir(work)
    result = run_cli("train", "start", str(script), "--runs", "2", exit_code=2)
    assert result.stderr.count("\n") == 1, result.stderr
    assert "nothing was queued" in result.stderr and "may have" not in result.stderr
    assert sorted(p.name for p in work.iterdir()) == ["job.slurm"]
