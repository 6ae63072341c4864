"""``train hold``'s queue-age warning, decided from real ``scontrol show config`` text.

The recordings (tests/fixtures/show-config/) are the sandbox's controller on Slurm 22.05.8
with ``AccountingStorageEnforce=associations,limits,qos,safe``, once without and once with
``PriorityFlags=ACCRUE_ALWAYS``, and on 26.05.5 with the final ``associations,limits,safe``.
Live on 22.05, a hold/release restarted the array's AccrueTime without the flag (accrue
04:02:31 -> 04:02:46, priority 1 after the release) and kept it with the flag (priority 14
after 6 s of age and 9 s held, on 22.05, 24.11 and 26.05: tests/integration/test_train.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit.slurm.nodeops import parse_config
from slurmkit.train.queue_age import enforces_limits, hold_warning, restarts_age_at_release
from tests.unit.fixtures_path import FIXTURES
from tests.unit.train_fakes import Run, TrainCluster, cluster_fixture, running_and_pending, started

cluster = cluster_fixture(TrainCluster)

LIMITS = FIXTURES / "show-config" / "slurm-22.05-limits.txt"
ACCRUE_ALWAYS = FIXTURES / "show-config" / "slurm-22.05-limits-accrue-always.txt"
ACCRUE_ALWAYS_26 = FIXTURES / "show-config" / "slurm-26.05-limits-accrue-always.txt"


def _text(path: Path = LIMITS, **lines: str) -> str:
    """The recording, with ``key = value`` lines replaced (the rest stays as recorded)."""
    out = []
    for line in path.read_text().splitlines():
        key = line.split("=", 1)[0].strip()
        out.append(f"{key:<24}= {lines[key]}" if key in lines else line)
    return "\n".join(out) + "\n"


def test_limits_without_accrue_always_warns_and_names_the_flag() -> None:
    config = parse_config(LIMITS.read_text())
    assert config["AccountingStorageEnforce"] == "associations,limits,qos,safe"
    warning = hold_warning(config)
    assert warning is not None and "\n" not in warning
    assert "restarts queue age at release" in warning
    assert "PriorityFlags=ACCRUE_ALWAYS" in warning


@pytest.mark.parametrize("path", [ACCRUE_ALWAYS, ACCRUE_ALWAYS_26])
def test_accrue_always_keeps_the_age_no_warning(path: Path) -> None:
    config = parse_config(path.read_text())
    assert config["PriorityFlags"] == "ACCRUE_ALWAYS" and enforces_limits(config)
    assert hold_warning(config) is None


@pytest.mark.parametrize(
    ("enforce", "restarts"),
    [
        ("none", False),  # Slurm's default: AccrueTime is left alone at a hold
        ("associations", False),
        ("associations,qos", False),  # qos alone does not set the limits bit
        ("associations,limits", True),
        ("associations,limits,safe", True),
        ("safe", True),  # read_config.c: safe sets limits too
        ("2", True),
        ("all", True),
    ],
)
def test_which_enforce_values_restart_the_age(enforce: str, restarts: bool) -> None:
    config = parse_config(_text(AccountingStorageEnforce=enforce))
    assert restarts_age_at_release(config) is restarts


def test_other_priority_flags_beside_accrue_always_still_keep_the_age() -> None:
    config = parse_config(_text(PriorityFlags="SMALL_RELATIVE_TO_TIME,ACCRUE_ALWAYS"))
    assert hold_warning(config) is None


def test_priority_basic_counts_no_age_no_warning() -> None:
    config = parse_config(_text(PriorityType="priority/basic"))
    assert hold_warning(config) is None


def test_train_hold_says_it_once_on_stderr(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    cluster.config = LIMITS.read_text()
    result = run_cli("train", "hold", "--yes")
    said = [ln for ln in result.stderr.splitlines() if "restarts queue age" in ln]
    assert len(said) == 1 and said[0].startswith("slurmkit: warning: ")
    assert "held array 115" in result.stdout
    assert cluster.slurm_calls("scontrol").count(("scontrol", "show", "config")) == 1


def test_train_hold_is_silent_where_the_age_is_kept(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    cluster.config = ACCRUE_ALWAYS.read_text()
    result = run_cli("train", "hold", "--yes")
    assert "queue age" not in result.stderr


def test_a_refused_hold_reads_no_config(
    run_cli: Run, cluster: TrainCluster, tmp_path: Path
) -> None:
    started(run_cli, tmp_path)  # no queue: the train has finished
    cluster.config = LIMITS.read_text()
    result = run_cli("train", "hold", "--yes", exit_code=2)
    assert "already finished" in result.stderr and "queue age" not in result.stderr
    assert cluster.slurm_calls("scontrol") == []


def test_the_sandbox_enforces_limits_and_keeps_queue_age(tmp_path: Path) -> None:
    """The sandbox is configured as the live hold/release test expects: limits enforced (the
    QOS test's MaxJobsPerUser holds), the age kept (no warning)."""
    from slurmkit.sandbox import configs
    from slurmkit.sandbox.spec import SandboxSpec

    text = configs.slurm_conf(SandboxSpec(dir=tmp_path, nodes=4))
    config = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    assert enforces_limits(config) and "qos" not in config["AccountingStorageEnforce"]
    assert config["PriorityFlags"] == "ACCRUE_ALWAYS"
    assert hold_warning(config) is None
