"""ShellCheck in lint (issue 32 item 7): its findings mapped by lint's severity policy."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text, shellcheck

SCRIPT = "#!/bin/bash\n#SBATCH -t 5\necho $x\n"
COMMENTS = [
    {"line": 3, "level": "info", "code": 2086, "message": "Double quote to prevent globbing."},
    {"line": 3, "level": "error", "code": 2068, "message": "Double quote array expansions."},
    {"line": 1, "level": "error", "code": 2148, "message": "Tips depend on target shell."},
]


def fake(tmp_path: Path, body: str) -> str:
    """A program named shellcheck that runs ``body`` (a shell script)."""
    program = tmp_path / "shellcheck"
    program.write_text("#!/bin/sh\ncat >/dev/null\n" + body)
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return str(program)


def test_findings_get_lint_codes_and_lint_s_severities(tmp_path: Path) -> None:
    program = fake(tmp_path, f"echo '{json.dumps({'comments': COMMENTS})}'\nexit 1\n")
    found = [(f.line, f.severity, f.rule) for f in shellcheck.findings(SCRIPT, "t", program)]
    # errors are warnings, the rest info; the shebang is lint's own rule
    assert found == [(3, "info", "shellcheck/SC2086"), (3, "warning", "shellcheck/SC2068")]


@pytest.mark.parametrize(
    "body", ["echo 'not json'\nexit 3\n", "echo '{\"comments\": 5}'\n", "exit 0\n"]
)
def test_a_failing_shellcheck_is_one_info_line(tmp_path: Path, body: str) -> None:
    (finding,) = shellcheck.findings(SCRIPT, "t", fake(tmp_path, body))
    assert (finding.severity, finding.rule) == ("info", "shellcheck")
    assert "ShellCheck" in finding.message and "--no-shellcheck" in finding.fix


def test_lint_runs_it_only_when_asked_and_silences_its_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake(tmp_path, f"echo '{json.dumps({'comments': COMMENTS[:2]})}'\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    version = SlurmVersion.parse("24.11")
    assert lint_text(SCRIPT, "t", LintContext(version)) == []  # off by default
    on = LintContext(version, shellcheck=True)
    assert {f.rule for f in lint_text(SCRIPT, "t", on)} == {
        "shellcheck/SC2086",
        "shellcheck/SC2068",
    }
    silenced = SCRIPT.replace("echo $x", "echo $x  # slurmkit-lint: disable=shellcheck/SC2086")
    assert [f.rule for f in lint_text(silenced, "t", on)] == ["shellcheck/SC2068"]


def test_the_cli_switch(run_cli, fake_slurm, tmp_path: Path, monkeypatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake(bin_dir, f"echo '{json.dumps({'comments': COMMENTS[1:2]})}'\n")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr("slurmkit._proc.runner", _real_runner())
    script = tmp_path / "job.slurm"
    script.write_text(SCRIPT)
    result = run_cli("lint", "--slurm-version", "24.11", str(script))
    assert "[shellcheck/SC2068]" in result.stdout
    quiet = run_cli("lint", "--slurm-version", "24.11", "--no-shellcheck", str(script))
    assert "shellcheck" not in quiet.stdout


def _real_runner():  # type: ignore[no-untyped-def]
    from slurmkit import _proc

    return _proc._run_subprocess


def test_a_defect_lint_names_itself_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ShellCheck's SC2283 on lint's own assignment-with-spaces line is dropped; on another
    line (lint silent there) it stays."""
    script = '#!/bin/bash\n#SBATCH -t 5\nFOO = bar\necho "$FOO"\n'
    twins = [
        {"line": 3, "level": "error", "code": 2283, "message": "Remove spaces around ="},
        {"line": 4, "level": "error", "code": 2283, "message": "Remove spaces around ="},
    ]
    fake(tmp_path, f"echo '{json.dumps({'comments': twins})}'\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    on = LintContext(SlurmVersion.parse("24.11"), shellcheck=True)
    found = {(f.line, f.rule) for f in lint_text(script, "t", on)}
    assert (3, "assignment-with-spaces") in found
    assert (3, "shellcheck/SC2283") not in found
    assert (4, "shellcheck/SC2283") in found


@pytest.mark.skipif(shellcheck.find() is None, reason="ShellCheck is not installed")
def test_the_real_shellcheck_reads_a_batch_script() -> None:
    found = shellcheck.findings(
        '#!/bin/bash\n#SBATCH -t 5\ncd $D\nif [ -z "$x"]; then :; fi\n', "t"
    )
    assert "shellcheck/SC1020" in {f.rule for f in found}  # You need a space before the ]
