"""Issue 28 items 1 and 3: what root runs is exactly what was checked, started where only
root can write.

The undrain gate checked the interpreter with ``stat -L`` (following links) and then
ran the unresolved name: a user who owns a link under a sticky folder (a venv under
``/tmp``) flipped it between the check and the exec and got root (17 in 300 runs in
the review). The race is made certain here: a ``readlink`` on the PATH answers
truthfully and then flips the link to the user's program, the moment the gate has
just resolved it. The old gate then ran the user's program; the gate now runs the
file it resolved and checked, so the flip changes nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_faulty_scan import (
    NODES,
    CheckJobCluster,
    all_pass,
    scan,
    slurm,  # noqa: F401 (a fixture)
)

from slurmkit.remote.result import from_exit_code
from slurmkit.undrain import healthgate

NOBODY = 65534


def _tool(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


@pytest.mark.skipif(os.geteuid() != 0, reason="the user's link and program belong to nobody")
def test_the_gate_runs_the_interpreter_it_checked_when_the_link_flips_right_after(
    tmp_path: Path,
) -> None:
    os.chmod(tmp_path, 0o755)
    sticky = tmp_path / "tmp"  # /tmp: root's, sticky, anyone may add a link
    sticky.mkdir()
    sticky.chmod(0o1777)
    venv = sticky / "venv"
    venv.symlink_to(Path(sys.executable).parent)  # the admin's venv, reached by the link
    os.lchown(venv, NOBODY, NOBODY)
    marker = tmp_path / "ran-as-root"
    evil = tmp_path / "evil"
    _tool(evil, "python", f"touch {marker}\nexit 1\n")
    os.chown(evil, NOBODY, NOBODY)
    fakebin = tmp_path / "bin"
    _tool(
        fakebin,
        "readlink",
        f'out=$(/usr/bin/readlink "$@"); rc=$?\nln -sfn {evil} {venv}\n'
        'printf "%s\\n" "$out"\nexit $rc\n',
    )
    config = tmp_path / "health.toml"
    config.write_text("[[check]]\ntype = 'cmd'\nargv = ['true']\n")
    argv = healthgate.health_argv(str(config), str(venv / "python"))
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": f"{fakebin}:/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert not marker.exists(), done.stderr
    assert venv.readlink() == evil  # the flip did happen
    result = from_exit_code("node-3", done.returncode, done.stdout, done.stderr, 0.1)
    assert healthgate.verdict(result) == "", done.stderr  # health ran, with the checked file


def test_a_scan_job_starts_in_slash_not_where_the_admin_stood(
    run_cli,
    slurm: CheckJobCluster,  # noqa: F811
) -> None:
    """sbatch's default working folder is the submitter's: root's checks started wherever
    the admin ran the scan, or in /tmp when slurmstepd could not enter it."""
    slurm.log_lines = all_pass(NODES, ["python"])
    scan(run_cli, "--checks", "python", exit_code=0)
    assert "--chdir=/" in slurm.sbatch_argv
