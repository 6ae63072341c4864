"""Issue 15: every command reads a duration, a time limit and a GRES string the same way.

Each case is refused before any Slurm command runs, so these need no fake cluster:
the one-line message and exit 2 come from :mod:`slurmkit.grammar` alone.
"""

from __future__ import annotations

import pytest

BARE = "say 7s, 7m, 7h or 7d"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["faulty", "history", "--since", "7"], "--since"),  # was: 7 seconds
        (["faulty", "xid", "--from", "/dev/null", "--since", "7"], "--since"),
        (["watch", "log", "/nonexistent.log", "--stale", "7"], "--stale"),
        (["watch", "log", "/nonexistent.log", "--stale", "1m", "--realert", "7"], "--realert"),
        (["cron", "status", "--dir", "/nonexistent", "--grace", "7"], "--grace"),
        (["faulty", "scan", "--expire", "7"], "--expire"),
        (["cron", "cleanup", "--dir", "/nonexistent", "--older-than", "7"], "--older-than"),
    ],
)
def test_a_bare_number_is_refused_the_same_way_everywhere(
    run_cli, args: list[str], option: str
) -> None:
    result = run_cli(*args, exit_code=2)
    assert result.stderr == f"slurmkit: {option} '7': {BARE}\n"


def test_history_and_watch_log_agree_on_7(run_cli) -> None:
    """The exact pair the issue names: one answer, one line, exit 2."""
    history = run_cli("faulty", "history", "--since", "7", exit_code=2).stderr
    stale = run_cli("watch", "log", "/nonexistent.log", "--stale", "7", exit_code=2).stderr
    assert history.replace("--since", "OPT") == stale.replace("--stale", "OPT")
    assert history.count("\n") == 1 and "Traceback" not in history


def test_a_compound_duration_is_taken(run_cli) -> None:
    """``1h30m`` is a duration: the missing log is then a finding (exit 1), not a usage error."""
    result = run_cli("watch", "log", "/nonexistent.log", "--stale", "1h30m", exit_code=1)
    assert "cannot stat" in result.stdout + result.stderr


def test_time_limits_parse_the_same_in_every_command(run_cli, tmp_path) -> None:
    """``cron`` --time and ``job extend`` refuse an out-of-range field with the same words."""
    cron = run_cli("cron", "init", str(tmp_path / "c"), "--time", "1:99:00", exit_code=2).stderr
    extend = run_cli("job", "extend", "1", "1:99:00", exit_code=2).stderr
    assert "'1:99:00': minutes and seconds must be 0-59" in cron
    assert "'1:99:00': minutes and seconds must be 0-59" in extend
