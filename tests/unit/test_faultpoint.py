"""The test-only kill points: silent unless named, deadly exactly where named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from slurmkit import faultpoint

_PROGRAM = (
    "from slurmkit import faultpoint\n"
    "print('before', flush=True)\n"
    "faultpoint.reached('demo.point')\n"
    "print('after', flush=True)\n"
)


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=60
    )


def test_unnamed_point_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(faultpoint.ENV_POINT, "some.other.point")
    faultpoint.reached("demo.point")  # still alive


@pytest.mark.parametrize(("name", "signum"), [("KILL", -9), ("TERM", -15), ("", -9)])
def test_named_point_kills_the_process_there(name: str, signum: int) -> None:
    import os

    env = dict(os.environ, **{faultpoint.ENV_POINT: "demo.point"})
    if name:
        env[faultpoint.ENV_SIGNAL] = name
    proc = _run(env)
    assert proc.returncode == signum
    assert proc.stdout == "before\n"


def test_without_the_variable_the_program_runs_through() -> None:
    import os

    env = {k: v for k, v in os.environ.items() if k != faultpoint.ENV_POINT}
    proc = _run(env)
    assert (proc.returncode, proc.stdout) == (0, "before\nafter\n")
