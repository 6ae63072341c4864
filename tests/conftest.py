"""Shared test helpers: the repository root and an in-process CLI runner."""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]

# CI's runner may start the suite in the background, where a non-interactive shell leaves
# SIGINT ignored, and every child inherits that: a command a test interrupts with Ctrl-C
# (SIGINT) would never see it. Handled here, it is the default again in each child.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _private_state_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every test gets its own $XDG_STATE_HOME: the faulty-node exclude list that scans
    write and train/template read must never be the developer's own (or another test's)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli() -> Callable[..., CliResult]:
    """Run ``slurmkit ARGS`` in-process; assert the exit code, showing both streams on failure."""
    from slurmkit.cli import cli

    def run(*args: str, exit_code: int | None = 0, input: str | None = None) -> CliResult:
        result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
        out = CliResult(result.exit_code, result.stdout, result.stderr)
        if exit_code is not None:
            assert out.exit_code == exit_code, (
                f"slurmkit {' '.join(args)} exited {out.exit_code}, expected {exit_code}\n"
                f"--- stdout\n{out.stdout}\n--- stderr\n{out.stderr}"
            )
        return out

    return run
