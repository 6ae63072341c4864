"""Two undrains at once on the same drained node: only one acts (issue 29, item 2).

undrain takes its run lock before it asks Slurm anything (the settle, the selection,
the jobs, the check and the confirm all come after), so a second run either waits for
the first and then reads the node returned, or gives up having asked nothing. This was
already so; the test holds it. The second run is started from inside the first one's
confirm, the moment its plan is made and not yet acted on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit import locks
from slurmkit.undrain import undrain
from slurmkit.undrain.report import RETURNED
from tests.fakes import FakeSlurm
from tests.unit.test_undrain_flow import Cluster, _drained, _opts


@pytest.fixture
def ctld(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cluster:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return Cluster(fake_slurm)


def test_a_second_undrain_during_the_first_ones_plan_asks_nothing_and_acts_on_nothing(
    ctld: Cluster, tmp_path: Path
) -> None:
    _drained(ctld, 1)
    seen: list[object] = []

    def confirm_while_a_teammate_runs(plan: object) -> bool:
        before = len(ctld.calls)
        try:
            seen.append(undrain(_opts(tmp_path, log=tmp_path / "b.log"), lambda p: True))
        except locks.LockBusy as exc:
            seen.append(exc)
        seen.append(ctld.calls[before:])
        return True

    first = undrain(_opts(tmp_path, log=tmp_path / "a.log"), confirm_while_a_teammate_runs)
    busy, asked = seen
    assert isinstance(busy, locks.LockBusy)
    assert asked == []  # not one read before the lock: no plan of its own to act on later
    assert [o.action for o in first.outcomes] == [RETURNED]
    assert len(ctld.slurm_calls("update")) == 1
    again = undrain(_opts(tmp_path, log=tmp_path / "b.log"), lambda p: True)
    assert again.outcomes == []  # the node is back: nothing selected, nothing updated
    assert len(ctld.slurm_calls("update")) == 1
