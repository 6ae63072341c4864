"""slurmkit.files: where a user's state files live."""

from __future__ import annotations

from pathlib import Path


def test_state_path_one_rule_for_every_state_file(tmp_path: Path) -> None:
    """issue 15: the exclude list, the journals, the watch and health state share one rule."""
    from slurmkit import files
    from slurmkit.faulty import excluded
    from slurmkit.jobenv import timelimit
    from slurmkit.watch import ratelimit

    home = Path.home() / ".local" / "state" / "slurmkit"
    assert files.state_path("x", {"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "slurmkit" / "x"
    assert files.state_path("x", {}) == home / "x"
    assert files.state_path("x", {"XDG_STATE_HOME": ""}) == home / "x"
    # a relative value is invalid (XDG spec): ignored everywhere, the watch state included
    env = {"XDG_STATE_HOME": "relative"}
    assert ratelimit.default_state_path(env) == home / "watch-state.json"
    assert excluded.default_path(env).parent == timelimit.journal_path(env).parent == home
