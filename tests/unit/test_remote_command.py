"""The remote command line and the end markers, run for real under a local sh."""

from __future__ import annotations

import shlex

import pytest

from slurmkit import _proc
from slurmkit.errors import UsageError
from slurmkit.remote import command as cmd


def test_one_word_is_a_shell_line_and_several_are_an_argv() -> None:
    assert cmd.to_shell(["echo $HOME | wc -c"]) == "echo $HOME | wc -c"
    assert cmd.to_shell("uptime") == "uptime"
    assert cmd.to_shell(["echo", "$HOME", "a b"]) == "echo '$HOME' 'a b'"


@pytest.mark.parametrize("command", ["", "   ", []])
def test_empty_command_is_a_usage_error(command) -> None:
    with pytest.raises(UsageError, match="no command"):
        cmd.to_shell(command)


def test_tokens_are_unique() -> None:
    assert len({cmd.new_token() for _ in range(100)}) == 100


def _sh(script: str) -> _proc.Completed:
    return _proc.run(["sh", "-c", script], timeout=20)


@pytest.mark.parametrize(
    ("command", "stdout", "rc"),
    [
        ("echo hi; exit 3", "hi\n", 3),
        ("printf 'no newline'", "no newline", 0),
        ("printf 'a\\nb\\n'; exit 0", "a\nb\n", 0),
        ("exit 255", "", 255),
        ("echo '%h %u 100%'", "%h %u 100%\n", 0),
    ],
)
def test_wrapper_prints_marker_with_exit_code(command: str, stdout: str, rc: int) -> None:
    token = cmd.new_token()
    done = _sh(cmd.wrap_script(command, token))
    assert done.returncode == 0  # the wrapper always ends well: the code is in the marker
    body, newline, last = done.stdout.removesuffix("\n").rpartition("\n")
    parsed = cmd.parse_marker(last, token)
    assert parsed is not None
    before, marker = parsed
    assert body + newline + before == stdout
    assert marker.exit_code == rc
    assert marker.seconds is not None and marker.seconds >= 0


def test_wrapper_reports_node_name_and_time_limit() -> None:
    token = cmd.new_token()
    script = cmd.wrap_script("sleep 5", token, with_node=True, time_limit=1)
    done = _proc.run(
        ["sh", "-c", script], timeout=20, env={"SLURMD_NODENAME": "gpu-7", "PATH": "/usr/bin:/bin"}
    )
    parsed = cmd.parse_marker(done.stdout.strip(), token)
    assert parsed is not None
    assert parsed[1].node == "gpu-7"
    assert parsed[1].exit_code == 124  # coreutils timeout


def test_wrap_is_one_sh_c_word_for_any_login_shell() -> None:
    token = cmd.new_token()
    words = shlex.split(cmd.wrap("echo 'quoted' \"$X\"", token))
    assert words[:2] == ["sh", "-c"] and len(words) == 3


def test_marker_parsing_ignores_lookalikes() -> None:
    token = cmd.new_token()
    assert cmd.parse_marker("plain output", token) is None
    assert cmd.parse_marker(f"{token} rc=x", token) is None
    # a ps listing shows the wrapper's own command line, token included: not a marker
    assert cmd.parse_marker(f'sh -c printf {token} "$rc"', token) is None
    parsed = cmd.parse_marker(f"echo {token} junk{token} rc=7 t0=5 t1=3", token)
    assert parsed is not None
    assert parsed[0] == f"echo {token} junk"
    assert parsed[1].exit_code == 7 and parsed[1].seconds is None
