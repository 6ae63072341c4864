"""Issue 14 finding 5: what ``pyspy`` runs as root on the nodes must be root's, not a user's.

It used to run the admin host's ``sys.executable`` path on every node when a file
existed there, and a py-spy next to it: a user who created that path on a node (a
venv under /tmp) got root. Now the node runs ``/usr/bin/python3`` (or ``--python``)
and py-spy from the node's PATH and the standard bin dirs (or ``--py-spy``), and on
the node, before running either, checks that it and every directory above it belong
to root (or the caller) and that nobody else can write them; a node that fails is one
plain per-node problem. The shell line is run here for real with ``sh -c``.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest
from test_pyspy_cli import JobNodes, node, process

from slurmkit.pyspy import node_script as ns
from slurmkit.pyspy.decode import decode
from slurmkit.pyspy.nodecmd import ENVIRON, DumpOptions, node_command
from slurmkit.remote.result import NodeResult
from slurmkit.slurm.records import Job
from tests.fakes import FakeSlurm

JOB = Job(job_id="999999999", user="root", nodelist="node-1")
IS_ROOT = os.geteuid() == 0


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


def _run_on_node(command: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": "node-1", "HOME": str(tmp_path)}
    return subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path
    )


# ----------------------------------------------------------------- the interpreter


def test_the_nodes_run_usr_bin_python3_never_the_admin_hosts_interpreter() -> None:
    command = node_command(JOB, ENVIRON, 30, DumpOptions(), 0)
    assert os.path.abspath(sys.executable) not in command
    assert os.path.dirname(os.path.abspath(sys.executable)) not in command
    assert "/usr/bin/python3" in command and "--fallback-dir" not in command
    explicit = node_command(JOB, ENVIRON, 30, DumpOptions(python="/opt/py/bin/python3"), 0)
    assert "/opt/py/bin/python3" in explicit and "/usr/bin/python3" not in explicit


def test_a_trusted_interpreter_runs_the_node_script(tmp_path: Path) -> None:
    out = _run_on_node(node_command(JOB, ENVIRON, 30, DumpOptions(), 0), tmp_path)
    (record,) = [json.loads(line) for line in out.stdout.splitlines()]
    assert (record["type"], record["problem"]) == ("node", "no_job_processes"), out.stderr


@pytest.mark.parametrize("how", ["dir-0777", "file-0777", "other-owner"])
def test_an_untrusted_interpreter_is_refused_before_it_runs(tmp_path: Path, how: str) -> None:
    marker = tmp_path / "ran"
    evil = _executable(tmp_path / "venv" / "bin" / "python3", f"#!/bin/sh\ntouch {marker}\n")
    if how == "dir-0777":
        evil.parent.chmod(0o777)
    elif how == "file-0777":
        evil.chmod(0o777)
    else:
        if not IS_ROOT:
            pytest.skip("chown to another user needs root")
        os.chown(evil.parent, _nobody(), _nobody())
    options = DumpOptions(python=str(evil))
    out = _run_on_node(node_command(JOB, ENVIRON, 30, options, 0), tmp_path)
    assert not marker.exists()
    assert out.returncode != 0 and out.stdout == ""
    (line,) = out.stderr.splitlines()
    assert line.startswith(f"slurmkit-refused: python {evil}: ")
    expected = "owned by uid" if how == "other-owner" else "writable by group or others"
    assert expected in line


def test_a_bare_interpreter_name_is_found_on_the_nodes_path_and_checked(tmp_path: Path) -> None:
    out = _run_on_node(node_command(JOB, ENVIRON, 30, DumpOptions(python="python3"), 0), tmp_path)
    (record,) = [json.loads(line) for line in out.stdout.splitlines()]
    assert record["problem"] == "no_job_processes", out.stderr
    evil = _executable(tmp_path / "bin" / "python3", "#!/bin/sh\necho ran\n")
    evil.parent.chmod(0o777)
    command = node_command(JOB, ENVIRON, 30, DumpOptions(python="python3"), 0)
    out = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{evil.parent}:/usr/bin:/bin"})  # fmt: skip
    assert out.stdout == "" and "writable by group or others" in out.stderr


def test_a_missing_interpreter_is_refused_with_its_path(tmp_path: Path) -> None:
    options = DumpOptions(python="/nonexistent/python3")
    out = _run_on_node(node_command(JOB, ENVIRON, 30, options, 0), tmp_path)
    assert out.returncode != 0
    assert "slurmkit-refused: python /nonexistent/python3: not an executable file" in out.stderr


def test_a_refused_interpreter_is_one_problem_for_that_node() -> None:
    result = NodeResult(
        "node-4",
        "failed",
        exit_code=126,
        stderr="slurmkit-refused: python /tmp/v/bin/python3: /tmp/v/bin is writable by group or "
        "others (drwxrwxrwx)\n",
    )
    report = decode(result, "7", 30, "srun")
    (problem,) = report.problems
    assert problem.kind == "untrusted_python"
    assert problem.message == (
        "node-4: refusing to run python /tmp/v/bin/python3: /tmp/v/bin is writable by group or "
        "others (drwxrwxrwx)"
    )


# ----------------------------------------------------------------- py-spy


def test_an_untrusted_explicit_py_spy_is_refused(tmp_path: Path) -> None:
    spy = _executable(tmp_path / "shared" / "py-spy", "#!/bin/sh\nexit 0\n")
    spy.parent.chmod(0o777)
    found, looked, refused = ns.find_py_spy(str(spy))
    assert found is None and looked == [str(spy)]
    (why,) = refused
    assert why.startswith(f"{spy}: ") and "writable by group or others" in why


def test_the_search_skips_an_untrusted_py_spy_for_a_trusted_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = _executable(tmp_path / "bad" / "py-spy", "#!/bin/sh\n")
    bad.parent.chmod(0o777)
    good = _executable(tmp_path / "good" / "py-spy", "#!/bin/sh\n")
    monkeypatch.setenv("PATH", f"{bad.parent}:relative/bin:{good.parent}")
    monkeypatch.setattr(ns, "STANDARD_DIRS", ())
    found, _, refused = ns.find_py_spy(None)
    assert found == str(good)
    assert len(refused) == 1 and refused[0].startswith(str(bad))


def test_the_default_search_includes_usr_local_bin_where_pip_installs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cron's PATH (/usr/bin:/bin) lacks /usr/local/bin, where `pip install py-spy` puts it."""
    assert "/usr/local/bin" in ns.STANDARD_DIRS
    local = _executable(tmp_path / "usr-local-bin" / "py-spy", "#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(ns, "STANDARD_DIRS", (str(local.parent),))
    assert ns.find_py_spy(None)[0] == str(local)


def test_a_py_spy_symlink_runs_its_trusted_target(tmp_path: Path) -> None:
    real = _executable(tmp_path / "real" / "py-spy", "#!/bin/sh\n")
    link = tmp_path / "link" / "py-spy"
    link.parent.mkdir()
    link.symlink_to(real)
    assert ns.find_py_spy(str(link))[0] == str(real)


def test_run_with_an_untrusted_py_spy_dumps_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "proc"
    root.mkdir()
    from test_pyspy_node_script import PYTHON, make_proc

    make_proc(root, 5, 1, ["python3", "t.py"], {"SLURM_JOB_ID": "8"}, PYTHON)
    marker = tmp_path / "ran"
    spy = _executable(tmp_path / "w" / "py-spy", f"#!/bin/sh\ntouch {marker}\n")
    spy.chmod(0o777)
    monkeypatch.setenv("SLURMD_NODENAME", "node-9")
    args = ["--jobid", "8", "--source", "environ", "--py-spy", str(spy), "--proc-root", str(root)]
    ns.run(args)
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert record["problem"] == "py_spy_untrusted" and record["py_spy"] is None
    assert "writable by group or others" in record["message"]
    assert not marker.exists()
    report = decode(NodeResult("node-9", "ok", stdout=json.dumps(record) + "\n"), "8", 30, "srun")
    (problem,) = report.problems
    assert problem.kind == "py_spy_untrusted"
    assert problem.message.startswith(f"node-9: refusing py-spy: {spy}: ")


# ----------------------------------------------------------------- the CLI


@pytest.fixture
def cluster(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> JobNodes:
    fake = JobNodes(fake_slurm)
    monkeypatch.chdir(tmp_path)
    return fake


def test_python_option_reaches_the_nodes(cluster: JobNodes, run_cli) -> None:
    run_cli("pyspy", "--jobid", "3", "--python", "/opt/py/bin/python3", exit_code=1)
    script = cluster.step("srun")[-1]
    assert "/opt/py/bin/python3" in script and os.path.abspath(sys.executable) not in script


def test_escape_sequences_from_the_nodes_are_shown_not_obeyed(cluster: JobNodes, run_cli) -> None:
    """Frames, commands and errors are the target's text: a hostile one must not drive the tty."""
    hostile = json.loads(process(301, "evil\x1b]0;owned\x07"))
    hostile["command"] = "python3 \x1b[2J"
    cluster.lines = {
        "node-1": [json.dumps(hostile), node(1)],
        "node-2": [process(401, "x\x1b[31m", status="ptrace_denied"), node(1)],
    }
    result = run_cli("pyspy", "--jobid", "3", exit_code=1)
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "evil\\x1b]0;owned\\x07" in result.stdout
