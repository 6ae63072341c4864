"""The exclude list is applied: train start/extend put it on the array's --exclude (merged
with the script's own), each run's wrapper refreshes it for the pending runs, template
render/submit add it to the script; --no-exclude leaves it out; train switch accepts a
script that differs only by --exclude."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_template_cli import sbatch_calls  # noqa: F401 (fixture)
from test_train_cli import GOOD, TrainCluster, cluster, running_and_pending, script  # noqa: F401

from slurmkit.faulty import excluded


def _listed(*nodes: str) -> Path:
    path = Path(os.environ["XDG_STATE_HOME"]) / "slurmkit" / "excluded.json"
    excluded.record(path, [(n, "gpu-health", "row remap pending") for n in nodes])
    return path


def _sbatch(fake: TrainCluster) -> list[tuple[str, ...]]:
    """sbatch calls without the journal token every train submission ends with (issue 22)."""
    calls = fake.slurm_calls("sbatch")
    assert all(c[-1].startswith("--comment=slurmkit:") for c in calls)
    return [c[:-1] for c in calls]


def _start(run_cli, tmp_path: Path, *extra: str, text: str = GOOD) -> Path:
    run_cli("train", "start", script(tmp_path, text), "--runs", "5", "--name", "tr", *extra)
    return tmp_path / ".slurmkit" / "trains" / "tr"


def test_train_start_puts_the_list_on_the_array(run_cli, cluster: TrainCluster, tmp_path) -> None:  # noqa: F811
    path = _listed("node-3")
    folder = _start(run_cli, tmp_path)
    (sbatch,) = _sbatch(cluster)
    assert sbatch == ("sbatch", "--parsable", "--exclude=node-3")
    wrapper = (folder / "wrapper.slurm").read_text()
    assert f"exclude_list={path}" in wrapper  # each run re-reads it for the pending runs


def test_train_start_merges_the_scripts_own_exclude(run_cli, cluster, tmp_path) -> None:  # noqa: F811
    _listed("node-3")
    text = GOOD.replace("#SBATCH", "#SBATCH --exclude=node-1\n#SBATCH", 1)
    folder = _start(run_cli, tmp_path, text=text)
    (sbatch,) = _sbatch(cluster)
    assert sbatch[-1] == "--exclude=node-[1,3]"
    assert "exclude_given=node-1\n" in (folder / "wrapper.slurm").read_text()


def test_train_start_no_exclude_and_empty_list(run_cli, cluster, tmp_path) -> None:  # noqa: F811
    _start(run_cli, tmp_path)  # no list yet: nothing added
    assert _sbatch(cluster)[-1] == ("sbatch", "--parsable")
    _listed("node-3")
    run_cli("train", "start", script(tmp_path, GOOD, "b.slurm"), "--name", "t2", "--no-exclude")
    assert _sbatch(cluster)[-1] == ("sbatch", "--parsable")
    assert "exclude_list=''" in (tmp_path / ".slurmkit/trains/t2/wrapper.slurm").read_text()


def test_train_start_refuses_a_corrupt_list_before_submitting(run_cli, cluster, tmp_path) -> None:  # noqa: F811
    path = Path(os.environ["XDG_STATE_HOME"]) / "slurmkit" / "excluded.json"
    path.parent.mkdir(parents=True)
    path.write_text("[]")
    out = run_cli("train", "start", script(tmp_path), "--name", "tr", exit_code=2)
    assert "corrupt" in out.stderr and cluster.slurm_calls("sbatch") == []


def test_train_extend_adds_the_current_list(run_cli, cluster, tmp_path) -> None:  # noqa: F811
    _start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    _listed("node-4")  # found after the start
    run_cli("train", "extend", "--runs", "2", "--yes")
    assert _sbatch(cluster)[-1][-1] == "--exclude=node-4"
    run_cli("train", "extend", "--runs", "2", "--yes", "--no-exclude")
    assert not any(w.startswith("--exclude") for w in cluster.slurm_calls("sbatch")[-1])


@pytest.mark.parametrize("directive", ["--exclude=node-2", "-x node-2", "--exclude node-2"])
def test_train_switch_accepts_a_script_differing_only_by_exclude(
    run_cli,
    cluster,  # noqa: F811
    tmp_path,
    directive: str,
) -> None:
    folder = _start(run_cli, tmp_path)
    cluster.queue = running_and_pending()
    new = script(tmp_path, GOOD.replace("#SBATCH", f"#SBATCH {directive}\n#SBATCH", 1), "b.sh")
    out = run_cli("train", "switch", new, "--yes")
    assert "--exclude (not set) -> node-2" in out.stderr + out.stdout
    assert (folder / "current").readlink() == Path(new)


# --- the wrapper's per-run refresh, run in bash with a fake scontrol ---------------------


def _run_wrapper_part(tmp_path: Path, list_path: Path, given: str) -> tuple[str, str]:
    from slurmkit.train.state import TrainDir
    from slurmkit.train.wrapper import render

    text = render(TrainDir(tmp_path / "tr"), 3, ["--nodes=1"], {
        "exclude_list": str(list_path), "exclude_given": given,
    })  # fmt: skip
    start = text.index("exclude_list=")
    part = text[start : text.index("if [[ ! -r $target ]]", start)]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "scontrol.args"
    fake = bin_dir / "scontrol"
    fake.write_text(
        f'#!/bin/bash\necho "$@" >> {log}\necho "77_1: Job is no longer pending execution"\n'
    )
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_ARRAY_JOB_ID": "77"}
    out = subprocess.run(
        ["bash", "-c", "set -eo pipefail\n" + part], env=env, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    return (log.read_text() if log.exists() else ""), out.stdout + out.stderr


def test_each_run_updates_the_pending_runs_from_the_list(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    excluded.record(path, [("node-3", "xid", "Xid 79"), ("node-4", "xid", "Xid 79")])
    called, out = _run_wrapper_part(tmp_path, path, "node-1")
    assert called == "update JobId=77 ExcNodeList=node-1,node-3,node-4\n"
    assert "no longer pending" not in out  # the running run's own refusal is expected


def test_the_refresh_skips_a_missing_list_and_reports_a_corrupt_one(tmp_path: Path) -> None:
    called, out = _run_wrapper_part(tmp_path, tmp_path / "missing.json", "")
    assert called == "" and out == ""
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    called, out = _run_wrapper_part(tmp_path, bad, "")
    assert called == "" and "cannot read the exclude list" in out


# --- template render / submit -------------------------------------------------------------


def test_template_render_adds_the_list_and_no_exclude_does_not(run_cli) -> None:
    _listed("node-3")
    text = run_cli(
        "template", "render", "torchrun", "--set", "sbatch_extra=--exclude=node-9"
    ).stdout
    lines = text.splitlines()
    assert "#SBATCH --exclude=node-9" in lines
    assert lines.index("#SBATCH --exclude='node-[3,9]'") > lines.index("#SBATCH --exclude=node-9")
    plain = run_cli("template", "render", "torchrun", "--no-exclude").stdout
    assert "node-3" not in plain


@pytest.mark.parametrize(
    "launcher", ["torchrun", "accelerate", "deepspeed", "mpirun", "srun-launcher"]
)
def test_launcher_templates_get_the_list(run_cli, launcher: str) -> None:
    """Every launcher template, each with the list's line and none with --no-exclude."""
    _listed("node-3", "node-4")
    assert "#SBATCH --exclude='node-[3-4]'" in run_cli("template", "render", launcher).stdout
    plain = run_cli("template", "render", launcher, "--no-exclude").stdout
    assert "node-3" not in plain and "node-[3-4]" not in plain


def test_template_submit_merges_into_an_sbatch_exclude(run_cli, tmp_path, sbatch_calls) -> None:  # noqa: F811
    _listed("node-3")
    run_cli("template", "submit", "torchrun", "--script-dir", str(tmp_path), "--", "-x", "node-8")
    assert sbatch_calls[-1] == ("sbatch", "--parsable", "--exclude=node-[3,8]")
    [copy] = tmp_path.glob("torchrun-*.slurm")
    assert "#SBATCH --exclude=node-3" in copy.read_text()


def test_template_submit_json_dry_run_and_state(run_cli, tmp_path, sbatch_calls) -> None:  # noqa: F811
    other = tmp_path / "other.json"
    excluded.record(other, [("node-2", "disk", "full")])
    data = json.loads(
        run_cli(
            "template", "submit", "torchrun", "--script-dir", str(tmp_path / "s"), "--state",
            str(other), "--dry-run", "--json",
        ).stdout
    )  # fmt: skip
    assert "#SBATCH --exclude=node-2" in Path(data["script"]).read_text()
    assert sbatch_calls == []
