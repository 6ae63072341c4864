"""Every click usage error is one line, ``slurmkit: <message> (see 'slurmkit CMD --help')``, exit 2.

Issue 14 (bad-input sweep): sixteen usage errors printed click's three lines
(``Usage: ...``, ``Try ...``, ``Error: ...``) where the README promises one.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from slurmkit.cli import cli

CASES = [
    (["bogus"], "No such command 'bogus'", "slurmkit"),
    (["--bogus"], "No such option '--bogus'", "slurmkit"),
    (["nodes", "expand"], "Missing argument 'LIST...'", "slurmkit nodes expand"),
    (
        ["nodes", "expand", "--max", "x", "n1"],
        "'x' is not a valid integer",
        "slurmkit nodes expand",
    ),
    (["nodes", "count", "--max", "-1", "n1"], "--max", "slurmkit nodes count"),
    (["nodes", "bogus"], "No such command 'bogus'", "slurmkit nodes"),
    (["run", "--via", "carrier-pigeon", "-w", "n1", "true"], "--via", "slurmkit run"),
    (["run", "--timeout", "soon", "-w", "n1", "true"], "--timeout", "slurmkit run"),
    (["lint", "--json", "--bogus"], "No such option '--bogus'", "slurmkit lint"),
    (["hostfile", "--slots"], "Option '--slots' requires an argument", "slurmkit hostfile"),
    (["nodes", "expand", "--sep"], "requires an argument", "slurmkit nodes expand"),
    (["run", "-w", "n1"], "Missing argument", "slurmkit run"),
]


@pytest.mark.parametrize(("args", "message", "command"), CASES)
def test_usage_error_is_one_line(args: list[str], message: str, command: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    line = result.stderr.rstrip("\n")
    assert line.startswith("slurmkit: ") and message in line
    assert line.endswith(f"(see '{command} --help')")


def test_a_control_character_in_a_bad_value_stays_on_one_line() -> None:
    result = CliRunner().invoke(cli, ["nodes", "expand", "--max", "1\n2", "n1"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1


def test_help_and_version_are_not_errors() -> None:
    assert CliRunner().invoke(cli, ["--help"]).exit_code == 0
    assert CliRunner().invoke(cli, ["--version"]).exit_code == 0
    assert "Usage:" in CliRunner().invoke(cli, ["nodes", "--help"]).stdout


def test_usage_error_in_a_real_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "slurmkit", "nodes", "expand", "--max", "x", "n1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "slurmkit: Invalid value for '--max': 'x' is not a valid integer range "
        "(see 'slurmkit nodes expand --help')\n"
    )
