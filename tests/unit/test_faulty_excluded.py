"""The exclude list: scans record failing nodes, `faulty excluded` shows and edits them,
concurrent writers all land, a corrupt file is an error and never reset."""

from __future__ import annotations

import base64
import gzip
import json
import multiprocessing
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from fixtures_path import FIXTURES
from test_faulty_scan import NODES, all_pass, scan, slurm  # noqa: F401 (fixture)

from slurmkit.errors import UsageError
from slurmkit.faulty import excluded
from slurmkit.hostlist import HostSet

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def test_default_path_follows_xdg_state_home(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    assert excluded.default_path(env) == tmp_path / "slurmkit" / "excluded.json"
    home = Path.home() / ".local" / "state" / "slurmkit" / "excluded.json"
    assert excluded.default_path({}) == home
    assert excluded.default_path({"XDG_STATE_HOME": "relative/dir"}) == home  # the spec: ignored


def test_record_renew_expire_and_remove(tmp_path: Path) -> None:
    path = tmp_path / "state" / "slurmkit" / "excluded.json"
    excluded.record(path, [("node-3", "xid", "Xid 79"), ("node-1", "disk", "full")], T0)
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    assert (path.stat().st_mode & 0o777) == 0o600
    assert excluded.hostlist(path, T0) == "node-[1,3]"
    later = T0 + timedelta(days=6)
    excluded.record(path, [("node-3", "xid", "Xid 79 again")], later)  # renewed, not doubled
    entries = excluded.load(path)
    assert [(e.node, e.check) for e in entries] == [("node-1", "disk"), ("node-3", "xid")]
    assert excluded.hostlist(path, T0 + timedelta(days=8)) == "node-3"
    gone = excluded.remove(path, expired=True, now=T0 + timedelta(days=8), dry_run=True)
    assert [e.node for e in gone] == ["node-1"] and len(excluded.load(path)) == 2  # dry run
    excluded.remove(path, expired=True, now=T0 + timedelta(days=8))
    assert [e.node for e in excluded.load(path)] == ["node-3"]
    excluded.remove(path, HostSet("node-[2-3]"))
    assert excluded.load(path) == [] and excluded.hostlist(path) == ""


def _writer(args: tuple[str, int]) -> None:
    path, i = args
    excluded.record(Path(path), [(f"node-{i}", "gpu-health", f"writer {i}")])


def test_concurrent_writers_all_land(tmp_path: Path) -> None:
    path = tmp_path / "excluded.json"
    with multiprocessing.get_context("fork").Pool(6) as pool:
        pool.map(_writer, [(str(path), i) for i in range(24)])
    assert sorted(e.node for e in excluded.load(path)) == sorted(f"node-{i}" for i in range(24))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{not json", "not JSON"),
        ('{"entries": []}', "not a version 1 exclude list"),
        ('{"version": 1, "entries": {}}', '"entries" is not a list'),
        ('{"version": 1, "entries": [{"node": "a b", "check": "x"}]}', "entry 0"),
        (
            '{"version": 1, "entries": [{"node": "n", "check": "x", "time": "2026-01-01", '
            '"expires": "2026-01-02"}]}',
            "no time zone",
        ),
    ],
)
def test_a_corrupt_file_is_one_line_exit_2_and_never_reset(
    tmp_path: Path, run_cli, text: str, why: str
) -> None:
    path = tmp_path / "excluded.json"
    path.write_text(text)
    for args in (
        ["faulty", "excluded", "--state", str(path)],
        ["faulty", "excluded", "--state", str(path), "--clear", "node-1", "--yes"],
        ["faulty", "excluded", "--state", str(path), "--expired", "--yes"],
        ["faulty", "excluded", "--state", str(path), "--json"],
        ["template", "render", "torchrun", "--state", str(path)],
    ):
        out = run_cli(*args, exit_code=2)
        assert out.stderr.count("\n") == 1 and out.stderr.startswith("slurmkit: exclude list ")
        assert str(path) in out.stderr and why in out.stderr and "Traceback" not in out.stderr
    with pytest.raises(excluded.CorruptExcludeList):
        excluded.record(path, [("node-1", "disk", "full")])
    assert path.read_text() == text


def test_a_symlinked_list_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    excluded.record(real, [("node-1", "disk", "full")])
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(excluded.CorruptExcludeList, match="symbolic link"):
        excluded.load(link)


def test_excluded_command_shows_json_and_clears_with_yes(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "x.json"
    excluded.record(path, [("node-3", "gpu-health", "row remap pending"), ("node-4", "xid", "79")])
    shown = json.loads(run_cli("faulty", "excluded", "--state", str(path), "--json").stdout)
    assert shown["exclude"] == "node-[3-4]"
    assert {e["node"] for e in shown["entries"]} == {"node-3", "node-4"}
    table = run_cli("faulty", "excluded", "--state", str(path)).stdout
    assert "row remap pending" in table and "--exclude=node-[3-4]" in table
    dry = run_cli("faulty", "excluded", "--state", str(path), "--clear", "node-3", "--dry-run")
    assert "would remove: node-3" in dry.stderr and len(excluded.load(path)) == 2
    run_cli("faulty", "excluded", "--state", str(path), "--clear", "node-3", "--yes")
    assert [e.node for e in excluded.load(path)] == ["node-4"]
    nothing = run_cli("faulty", "excluded", "--state", str(path), "--expired", "--yes")
    assert "nothing to remove" in nothing.stderr


# --- the scan records ---------------------------------------------------------------------


def _capture(node: str, text: bytes) -> str:
    data = base64.b64encode(gzip.compress(text)).decode()
    return f"SLURMKIT_CAPTURE node={node} check=gpu-health rc=0 enc=gz64 data={data}"


def test_scan_records_failing_gpu_nodes_with_their_finding(slurm, run_cli, tmp_path) -> None:  # noqa: F811
    healthy = (FIXTURES / "gpu/nvidia-smi-q/h100x8-535.161.08-healthy.txt").read_bytes()
    pending = (FIXTURES / "gpu/nvidia-smi-q/a10-535.129.03-rowremap-pending-unc4.txt").read_bytes()
    slurm.log_lines = [_capture(n, pending if n == "node-3" else healthy) for n in NODES]
    state = tmp_path / "list.json"
    out = scan(run_cli, "--checks", "gpu-health", "--state", str(state), "--json")
    report = json.loads(out.stdout)
    assert report["exclude"] == "node-3" and report["failing"] == "node-3"
    [node3] = [n for n in report["nodes"] if n["node"] == "node-3"]
    assert node3["findings"]["gpu-health"][0]["action"] == "reset"
    [entry] = excluded.load(state)
    assert (entry.node, entry.check) == ("node-3", "gpu-health")
    assert "row remap pending" in entry.error
    assert entry.expires - entry.time == timedelta(days=7)
    assert report["recorded"][0]["node"] == "node-3" and report["exclude_list"] == str(state)


def test_scan_no_record_records_nothing(slurm, run_cli, tmp_path) -> None:  # noqa: F811
    slurm.log_lines = all_pass(NODES, ["python"], {("node-2", "python"): "boom"})
    state = tmp_path / "list.json"
    scan(run_cli, "--checks", "python", "--state", str(state), "--no-record")
    assert not state.exists()


def test_scan_expire_sets_the_expiry(slurm, run_cli, tmp_path) -> None:  # noqa: F811
    slurm.log_lines = all_pass(NODES, ["python"], {("node-2", "python"): "boom"})
    state = tmp_path / "list.json"
    scan(run_cli, "--checks", "python", "--state", str(state), "--expire", "12h")
    [entry] = excluded.load(state)
    assert entry.node == "node-2" and entry.expires - entry.time == timedelta(hours=12)


def test_scan_refuses_a_corrupt_list_before_submitting(slurm, run_cli, tmp_path) -> None:  # noqa: F811
    state = tmp_path / "list.json"
    state.write_text("garbage")
    out = scan(run_cli, "--checks", "python", "--state", str(state), exit_code=2)
    assert "corrupt" in out.stderr and not slurm.slurm_calls("sbatch")
    assert state.read_text() == "garbage"


def test_scan_default_list_is_under_xdg_state_home(slurm, run_cli) -> None:  # noqa: F811
    slurm.log_lines = all_pass(NODES, ["python"], {("node-4", "python"): "boom"})
    scan(run_cli, "--checks", "python")
    assert excluded.hostlist(Path(os.environ["XDG_STATE_HOME"]) / "slurmkit" / "excluded.json")


# --- applying the list ----------------------------------------------------------------------


def test_add_to_args_merges_into_the_given_exclude() -> None:
    assert excluded.add_to_args(["--nodes=2"], "node-3") == ["--nodes=2", "--exclude=node-3"]
    merged = excluded.add_to_args(["-x", "node-1", "--exclude=node-7", "--qos=hi"], "node-3")
    assert merged == ["--qos=hi", "--exclude=node-[1,3,7]"]
    assert excluded.add_to_args(["-xnode-9"], "node-3") == ["--exclude=node-[3,9]"]
    assert excluded.add_to_args(["--exclude=node-7"], "") == ["--exclude=node-7"]
    with pytest.raises(UsageError, match="names a file"):
        excluded.add_to_args(["--exclude=/etc/bad-nodes"], "node-3")


def test_add_to_script_puts_the_merged_line_after_the_last_directive() -> None:
    text = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --exclude=node-1\n# note\n\necho hi\n"
    out = excluded.add_to_script(text, "node-3")
    lines = out.splitlines()
    assert lines[4] == "#SBATCH --exclude='node-[1,3]'" and lines[3].startswith("# slurmkit")
    assert lines[-1] == "echo hi" and excluded.add_to_script(text, "") == text
