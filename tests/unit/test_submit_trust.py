"""Issue 14 finding 3: the three commands that submit a rendered script never let sbatch read a
file another user could swap, and never adopt a work dir another user can write.

``faulty scan``, ``cpus check`` and ``template submit`` once wrote the script into a work
dir that anyone might own and ran ``sbatch PATH``: a racer swapped the script before sbatch
read it. Now sbatch reads the script on stdin (asserted at the ``_proc`` seam: no path in
argv, the rendered text as input) and the work dir must be the caller's or root's and not
writable by group or others (one line, exit 2, no sbatch).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeSlurm
from tests.unit.test_cpus_check import LOG_22_05
from tests.unit.test_faulty_scan import NODES, CheckJobCluster, all_pass


@pytest.fixture(autouse=True)
def no_site_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def slurm(
    fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[CheckJobCluster]:
    fake = CheckJobCluster(fake_slurm)
    monkeypatch.chdir(tmp_path)
    yield fake


def _faulty(slurm: CheckJobCluster, work: Path) -> tuple[list[str], int]:
    slurm.log_lines = all_pass(NODES, ["python"])
    return ["faulty", "scan", "--checks", "python", "--dir", str(work)], 0


def _cpus(slurm: CheckJobCluster, work: Path) -> tuple[list[str], int]:
    slurm.log_lines = LOG_22_05.splitlines()
    return ["cpus", "check", "--dir", str(work)], 1


def _template(slurm: CheckJobCluster, work: Path) -> tuple[list[str], int]:
    return ["template", "submit", "cpus-per-task-test", "--script-dir", str(work)], 0


COMMANDS: dict[str, Callable[[CheckJobCluster, Path], tuple[list[str], int]]] = {
    "faulty scan": _faulty,
    "cpus check": _cpus,
    "template submit": _template,
}


@pytest.mark.parametrize("command", COMMANDS)
def test_sbatch_reads_the_script_on_stdin_never_from_a_path(
    run_cli, slurm: CheckJobCluster, tmp_path: Path, command: str
) -> None:
    work = tmp_path / "work"
    args, code = COMMANDS[command](slurm, work)
    run_cli(*args, exit_code=code)
    (call,) = slurm.slurm_calls("sbatch")
    assert call[:2] == ["sbatch", "--parsable"]
    assert not any(Path(a).exists() for a in call[2:]), call  # no file for sbatch to read
    (stdin,) = slurm.sbatch_inputs
    assert stdin.startswith("#!/bin/bash\n") and "#SBATCH --job-name=" in stdin
    (copy,) = work.glob("*.slurm")  # the copy kept for the record is what was submitted
    assert copy.read_text() == stdin
    assert work.stat().st_mode & 0o777 == 0o700  # created private


def _nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("how", ["other-owner", "mode-0777"])
def test_a_work_dir_others_can_change_is_refused_before_any_job(
    run_cli, slurm: CheckJobCluster, tmp_path: Path, command: str, how: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    if how == "other-owner":
        if os.geteuid() != 0:
            pytest.skip("chown to another user needs root")
        os.chown(work, _nobody(), _nobody())
        os.chmod(work, 0o755)
    else:
        os.chmod(work, 0o777)
    args, _ = COMMANDS[command](slurm, work)
    result = run_cli(*args, exit_code=2)
    assert result.stderr.startswith("slurmkit: refusing ") and str(work) in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert not slurm.slurm_calls("sbatch")
    assert not list(work.iterdir())  # nothing written into it
    if command == "faulty scan":
        assert slurm.calls == []  # refused before asking Slurm anything


@pytest.mark.parametrize("command", COMMANDS)
def test_a_work_dir_that_is_a_symlink_is_refused(
    run_cli, slurm: CheckJobCluster, tmp_path: Path, command: str
) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    work = tmp_path / "work"
    work.symlink_to(real)
    args, _ = COMMANDS[command](slurm, work)
    result = run_cli(*args, exit_code=2)
    assert "symbolic link" in result.stderr and result.stderr.count("\n") == 1
    assert not slurm.slurm_calls("sbatch")


def test_template_dry_run_shows_the_script_going_to_stdin(
    run_cli, slurm: CheckJobCluster, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    result = run_cli(
        "template", "submit", "torchrun", "--script-dir", str(work), "--dry-run", "--", "--hold"
    )
    (script,) = work.glob("*.slurm")
    assert result.stdout == f"sbatch --parsable --hold < {script}\n"
    assert not slurm.slurm_calls("sbatch")
