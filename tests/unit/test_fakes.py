"""The shared fake Slurm (tests/fakes) does what the unit tests rely on.

Every Slurm-facing unit test trusts it: a route that matched too much would hide an
unexpected call, a replay that lost the exit code or stderr would make a refusal look like
success. These pin the matching rules, the recorded replay and the refusal of unrouted calls.
"""

from __future__ import annotations

import pytest
from fixtures_path import entry, read, stderr

from slurmkit import _proc
from slurmkit.errors import NotFound
from slurmkit.slurm import query
from tests.fakes import FakeSlurm


def test_arguments_match_literally_and_hostlists_are_not_globs() -> None:
    fake = FakeSlurm().on(["scontrol", "show", "node", "node-[1-2]"], "x")
    assert fake(["scontrol", "show", "node", "node-[1-2]"]).stdout == "x"
    with pytest.raises(AssertionError, match="unexpected command: scontrol show node node-1"):
        fake(["scontrol", "show", "node", "node-1"])


def test_one_star_is_one_argument_two_stars_any_number_and_a_trailing_star_a_prefix() -> None:
    fake = FakeSlurm()
    fake.on(["scancel", "*"], "one")
    fake.on(["sbatch", "**"], "any")
    fake.on(["sacct", "--starttime=*"], "prefix")
    assert fake(["scancel", "7"]).stdout == "one"
    assert fake(["sbatch"]).stdout == fake(["sbatch", "-p", "x", "a.slurm"]).stdout == "any"
    assert fake(["sacct", "--starttime=now-1day"]).stdout == "prefix"
    for argv in (["scancel"], ["scancel", "7", "8"], ["sacct", "--endtime=now"]):
        with pytest.raises(AssertionError, match="unexpected command"):
            fake(argv)
    assert len(fake.calls) == 7  # refused calls are recorded too


def test_the_newest_route_wins_and_answers_come_in_turn() -> None:
    fake = FakeSlurm().on(["squeue", "**"], "default")
    fake.answers(["squeue", "**"], "first", (1, "", "squeue: error: x"), "last")
    outs = [fake(["squeue"]) for _ in range(4)]
    assert [o.stdout for o in outs] == ["first", "", "last", "last"]
    assert outs[1].returncode == 1 and outs[1].stderr == "squeue: error: x"


def test_calls_keep_the_keyword_arguments_and_ignored_arguments_only_skip_matching() -> None:
    fake = FakeSlurm().ignore_args("--comment=slurmkit:").on(["sbatch", "a.slurm"], "5\n")
    fake(["sbatch", "--comment=slurmkit:abc", "a.slurm"], timeout=3.0, input="#!/bin/bash\n")
    (call,) = fake.log
    assert call.argv == ("sbatch", "--comment=slurmkit:abc", "a.slurm")
    assert (call.timeout, call.input, call.program) == (3.0, "#!/bin/bash\n", "sbatch")
    assert fake.calls_to("sbatch") == [call.argv] and fake.count("scontrol") == 0


def test_a_missing_program_raises_as_exec_would() -> None:
    fake = FakeSlurm().missing("sinfo")
    with pytest.raises(FileNotFoundError):
        fake(["sinfo", "--version"])


def test_replay_answers_with_the_recorded_output_exit_code_and_stderr() -> None:
    name = "err_scontrol_hold_999999.txt"
    fake = FakeSlurm().replay("22.05", "03_jobs", name)
    done = fake(["scontrol", "hold", "999999"])  # the recorded command is the route
    assert done.returncode == entry("22.05", "03_jobs", name)["exit_code"] == 1
    assert (done.stdout, done.stderr) == (
        read("22.05", "03_jobs", name),
        stderr("22.05", "03_jobs", name),
    )


def test_the_fixture_sits_at_the_process_seam(fake_slurm: FakeSlurm) -> None:
    """What the library runs reaches the fake: a recorded refusal becomes slurmkit's error."""
    assert _proc.runner is fake_slurm
    fake_slurm.replay("22.05", "03_jobs", "err_scontrol_hold_999999.txt")
    with pytest.raises(NotFound):
        query.hold("999999")
    assert fake_slurm.calls == [("scontrol", "hold", "999999")]
