"""``train switch``'s resource comparison: what refuses, what only warns, the diff it prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit.sbatch.header import parse_header
from slurmkit.train.compare import compare, unified
from slurmkit.train.control import SwitchRefused, check_switch
from slurmkit.train.state import ArrayRecord, TrainState

SUBMITTED = "#!/bin/bash\n#SBATCH -N2 -c4 --gres=gpu:8 -t 20:00:00 -p gpu -o %x-%j.out\n"


def _state(header: list[str], extra: list[str] | None = None) -> TrainState:
    return TrainState(
        name="tr",
        created="2026-01-01T00:00:00+00:00",
        workdir="/w",
        script="/w/a.slurm",
        header=header,
        extra=extra or [],
        arrays=[ArrayRecord("115", 5, "2026-01-01T00:00:00+00:00")],
    )


@pytest.mark.parametrize(
    ("new_line", "option"),
    [
        ("-N4 -c4 --gres=gpu:8 -t 20:00:00 -p gpu", "nodes"),
        ("-N2 -c4 --gres=gpu:8 -t 10:00:00 -p gpu", "time"),
        ("-N2 -c4 --gres=gpu:8 -t 20:00:00 -p cpu", "partition"),
        ("-N2 -c4 --gres=gpu:4 -t 20:00:00 -p gpu", "gres"),
        ("-N2 -c4 --gres=gpu:8 -p gpu", "time"),
    ],
)
def test_each_resource_change_is_found(new_line: str, option: str) -> None:
    diffs = compare(parse_header(SUBMITTED), parse_header(f"#SBATCH {new_line}\n"))
    resources = [d for d in diffs if d.resource]
    assert [d.option for d in resources] == [option]


def test_equal_values_in_other_spellings_match() -> None:
    new = parse_header("#SBATCH --nodes 2 --cpus-per-task=4 --gres=gres:gpu:8 --time=1200 -p gpu\n")
    diffs = compare(parse_header(SUBMITTED), new)
    assert [d for d in diffs if d.resource] == []
    assert [d.option for d in diffs] == ["output"]  # missing --output: a warning only


def test_unified_diff_shows_both_sides() -> None:
    diffs = compare(parse_header(SUBMITTED), parse_header("#SBATCH -N4 -c4 --gres=gpu:8 -p gpu\n"))
    lines = unified([d for d in diffs if d.resource], "array 115", "b.slurm")
    assert lines == [
        "--- array 115",
        "+++ b.slurm",
        "-#SBATCH --nodes=2",
        "+#SBATCH --nodes=4",
        "-#SBATCH --time=20:00:00",
    ]


def test_check_switch_refuses_with_a_diff(tmp_path: Path) -> None:
    state = _state(parse_header(SUBMITTED).words)
    new = tmp_path / "b.slurm"
    new.write_text("#!/bin/bash\n#SBATCH -N4 -c4 --gres=gpu:8 -t 20:00:00 -p gpu\n")
    with pytest.raises(SwitchRefused) as caught:
        check_switch(state, new)
    assert "--nodes 2 -> 4" in str(caught.value)
    assert "-#SBATCH --nodes=2" in caught.value.diff
    assert "+#SBATCH --nodes=4" in caught.value.diff


def test_check_switch_accepts_same_resources_and_warns_about_the_rest(tmp_path: Path) -> None:
    state = _state(parse_header(SUBMITTED).words)
    new = tmp_path / "b.slurm"
    new.write_text(
        "#!/bin/bash\n#SBATCH -N2 -c4 --gres=gpu:8 -t 20:00:00 -p gpu -o other.out -J x\n"
    )
    notices = check_switch(state, new)
    assert len(notices) == 1 and "--output %x-%j.out -> other.out" in notices[0]


def test_check_switch_applies_the_recorded_extras_to_both_sides(tmp_path: Path) -> None:
    state = _state(["--nodes=1", "--time=5", "--partition=cpu"], extra=["--partition=cpu"])
    new = tmp_path / "b.slurm"
    new.write_text("#!/bin/bash\n#SBATCH -N1 -t 5 -p gpu\n")
    assert check_switch(state, new) == []


def test_script_without_header_borrows_the_train_resources(tmp_path: Path) -> None:
    new = tmp_path / "body.sh"
    new.write_text("python train.py\n")
    (notice,) = check_switch(_state(["--nodes=1"]), new)
    assert "no #SBATCH header" in notice
