"""``cron start`` and ``cron stop`` read the queue they plan from under the cron dir's lock
(issue 29, item 2). Already so; this holds it: every Slurm call of a start or stop is
made while ``DIR/scheduler/cron.lock`` is held.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from slurmkit.cron import CronDir, journaling
from slurmkit.cron.setup import init_cron_dir
from slurmkit.slurm import query
from tests.fakes import Call, FakeSlurm
from tests.unit.test_cron_chain import USER, job_row, squeue

CHAINS = ["cron-hourly", "cron-daily"]


@pytest.fixture
def cron(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CronDir:
    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    made = CronDir(tmp_path / "cron")
    init_cron_dir(made)
    return made


def _held(cron: CronDir) -> bool:
    fd = os.open(journaling.lock_path(cron), os.O_RDONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.mark.parametrize("command", ["start", "stop"])
def test_every_slurm_call_of_start_and_stop_is_made_under_the_lock(
    run_cli, fake_slurm: FakeSlurm, cron: CronDir, command: str
) -> None:
    rows = "".join(job_row(str(70 + i), name) for i, name in enumerate(CHAINS))
    unlocked: list[tuple[str, ...]] = []

    def answer(replies: list[str]):  # type: ignore[no-untyped-def]
        def reply(call: Call) -> tuple[int, str, str]:
            if not _held(cron):
                unlocked.append(call.argv)
            return 0, replies.pop(0) if len(replies) > 1 else replies[0], ""

        return reply

    fake_slurm.on(squeue(CHAINS), answer=answer([rows, ""]))
    for name in CHAINS:
        fake_slurm.on(query.cancel_by_name_argv(name, USER), answer=answer([""]))
    args = ["--yes"] if command == "stop" else []
    run_cli("cron", command, "--dir", str(cron.root), *args)
    assert [c[0] for c in fake_slurm.calls][:1] == ["squeue"]  # the plan's read
    assert unlocked == []
