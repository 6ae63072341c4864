"""The client wrappers of a sandbox run from a Debian root (slurmkit.sandbox.world._WRAPPER).

A slurm.conf path that needs quoting (a --dir with a space) must reach the client as the
path itself: inside ``"${SLURM_CONF:=...}"`` a shell keeps the quotes as part of the value.
"""

from __future__ import annotations

import shlex
import subprocess

import pytest

from slurmkit.sandbox.world import _WRAPPER


def _conf_lines(conf: str) -> str:
    text = _WRAPPER.format(
        version="24.11", name="sinfo", root="/r", marker="m", program="/usr/bin/sinfo",
        world=1, dir="/d", conf=shlex.quote(conf), enter="nsenter", loader="/l", libs="/x",
        direct="/r/usr/bin/sinfo",
    )  # fmt: skip
    return "\n".join(ln for ln in text.splitlines() if "SLURM_CONF" in ln)


@pytest.mark.parametrize("shell", ["sh", "bash"])
@pytest.mark.parametrize("conf", ["/tmp/sbx/etc/slurm.conf", "/tmp/my sandbox/etc/slurm.conf"])
def test_default_slurm_conf_is_the_path_itself(shell: str, conf: str) -> None:
    script = _conf_lines(conf) + '\nprintf %s "$SLURM_CONF"'
    out = subprocess.run([shell, "-c", script], env={}, capture_output=True, text=True)
    assert out.stdout == conf


def test_a_callers_slurm_conf_is_kept() -> None:
    script = _conf_lines("/tmp/sbx/etc/slurm.conf") + '\nprintf %s "$SLURM_CONF"'
    env = {"SLURM_CONF": "/etc/other.conf"}
    out = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True)
    assert out.stdout == "/etc/other.conf"
