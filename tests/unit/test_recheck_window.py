"""The re-check window follows the cluster's MessageTimeout (issue 27): a cluster whose
clients give up after 5 s is re-read for 10 s, not for a fixed 20."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit.slurm import recheck


def _conf(tmp_path: Path, text: str) -> dict[str, str]:
    conf = tmp_path / "slurm.conf"
    conf.write_text(text)
    recheck._message_timeout_in.cache_clear()
    return {"SLURM_CONF": str(conf)}


def test_the_window_is_two_message_timeouts_of_the_clients_slurm_conf(tmp_path: Path) -> None:
    env = _conf(tmp_path, "ClusterName=c\n# MessageTimeout=99\nmessagetimeout = 5\n")
    assert recheck.message_timeout(env) == 5.0
    assert recheck.window(env) == 10.0


@pytest.mark.parametrize(
    "text", ["ClusterName=c\n", "MessageTimeout=0\n", "#MessageTimeout=3\n", "MessageTimeout=x\n"]
)
def test_a_conf_without_a_usable_value_gives_slurms_default(tmp_path: Path, text: str) -> None:
    assert recheck.window(_conf(tmp_path, text)) == 2 * recheck.SLURM_MESSAGE_TIMEOUT


def test_an_unreadable_conf_gives_slurms_default(tmp_path: Path) -> None:
    recheck._message_timeout_in.cache_clear()
    assert recheck.window({"SLURM_CONF": str(tmp_path / "missing.conf")}) == 20.0


def test_the_conf_is_read_from_the_configured_path_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without $SLURM_CONF the clients' own default paths are read, first one wins."""
    first, second = tmp_path / "a.conf", tmp_path / "b.conf"
    second.write_text("MessageTimeout=3\n")
    monkeypatch.setattr(recheck, "_CONF_PATHS", (str(first), str(second)))
    recheck._message_timeout_in.cache_clear()
    assert recheck.window({}) == 6.0
    first.write_text("MessageTimeout=7\n")
    recheck._message_timeout_in.cache_clear()
    assert recheck.window({}) == 14.0


def test_read_again_without_a_bound_uses_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A silence is re-read until two MessageTimeouts have passed, then given up on."""
    from slurmkit.errors import ControllerUnreachable

    monkeypatch.setenv("SLURM_CONF", _conf(tmp_path, "MessageTimeout=4\n")["SLURM_CONF"])
    now = [0.0]

    def silent() -> None:
        raise ControllerUnreachable("Socket timed out on send/recv operation")

    answer, error = recheck.read_again(
        silent, what="x", sleep=lambda s: now.__setitem__(0, now[0] + s), clock=lambda: now[0]
    )
    assert answer is None and isinstance(error, ControllerUnreachable)
    assert 7.0 <= now[0] <= 8.0
