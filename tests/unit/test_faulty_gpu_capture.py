"""gpu-health and xid from the node side to the report: the job's bash captures the raw
outputs (nodes need no slurmkit), slurmkit parses them.

The node-side code is run for real here, in bash, with fake ``nvidia-smi`` and ``dmesg``
on PATH that print recorded captures (tests/fixtures/gpu) or fail like a node would.
"""

from __future__ import annotations

import base64
import gzip
import os
import subprocess
from pathlib import Path

import pytest
from fixtures_path import FIXTURES

from slurmkit.faulty import captures
from slurmkit.faulty.checks import GPU_CHECKS, parse_checks
from slurmkit.faulty.report import FAIL, PASS, SKIPPED, UNKNOWN, node_results
from slurmkit.templating import render_template
from slurmkit.templating.results import parse_check_lines

GPU = FIXTURES / "gpu"


def _task() -> str:
    text = render_template("faulty-node-check", overrides={"checks": ["gpu-health", "xid"]}).text
    start = text.index("task=$(cat <<'SLURMKIT_TASK'\n") + len("task=$(cat <<'SLURMKIT_TASK'\n")
    return text[start : text.index("\nSLURMKIT_TASK\n", start)]


def _tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


def _run_node(
    tmp_path: Path, tools: dict[str, str], *checks: str, pci_drivers: Path | None = None
) -> str:
    """The task of one node with only ``tools`` (and coreutils) on PATH; its stdout.

    ``pci_drivers`` is mounted over ``/sys/bus/pci/drivers`` for the task alone (a mount
    namespace of its own), so that the node seems to have the GPUs listed in it.
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in tools.items():
        _tool(bin_dir, name, body)
    tools_used = ("bash", "cat", "head", "gzip", "base64", "grep", "tail", "timeout", "hostname")
    for name in (*tools_used, "ls", "tr"):
        found = next(Path(d) / name for d in ("/usr/bin", "/bin") if (Path(d) / name).exists())
        (bin_dir / name).symlink_to(found)
    env = {"PATH": str(bin_dir), "SLURMD_NODENAME": "node-7", "HOME": str(tmp_path)}
    argv = ["/bin/bash", "-c", _task(), "slurmkit-checks", *checks]
    if pci_drivers is not None:
        mount = f'/usr/bin/mount --bind {pci_drivers} /sys/bus/pci/drivers && exec "$@"'
        unshare = ["/usr/bin/unshare", "--mount", "--propagation", "private"]
        argv = [*unshare, "/bin/sh", "-c", mount, "-", *argv]
    out = subprocess.run(
        argv,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return out.stdout


def _results(log: str):
    return {r.check: (r, v) for r, v in captures.results(log)}


@pytest.mark.parametrize(
    ("capture", "status", "action"),
    [
        ("nvidia-smi-q/a10-535.129.03-rowremap-pending-unc4.txt", "fail", "reset"),
        ("nvidia-smi-q/h100x8-535.161.08-healthy.txt", "pass", "check_cooling"),
        ("nvidia-smi-q-x/v100s-x8-460.73.01-healthy.xml", "pass", "none"),
    ],
)
def test_gpu_health_round_trip_through_the_node_script(
    tmp_path: Path, capture: str, status: str, action: str
) -> None:
    smi = f"cat {GPU / capture}"
    log = _run_node(tmp_path, {"nvidia-smi": smi, "dmesg": "exit 0"}, "gpu-health")
    assert log.startswith("SLURMKIT_CAPTURE node=node-7 check=gpu-health rc=0 enc=gz64 data=")
    assert len(log.splitlines()) == 1
    result, verdict = _results(log)["gpu-health"]
    assert (result.node, result.status, verdict.action.name.lower()) == ("node-7", status, action)


def test_the_node_asks_nvidia_smi_for_the_health_sections_only(tmp_path: Path) -> None:
    args = tmp_path / "args"
    log = _run_node(tmp_path, {"nvidia-smi": f'echo "$@" >> {args}; echo'}, "gpu-health")
    assert args.read_text().splitlines()[0] == "-q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER,PERFORMANCE"
    assert _results(log)["gpu-health"][0].status == UNKNOWN  # an empty report is never a pass


def test_the_newest_recorded_driver_still_knows_every_section_the_node_asks_for(
    tmp_path: Path,
) -> None:
    """Driver 590.48.01's own ``nvidia-smi -h`` (recorded) lists each ``-d`` value used."""
    capture = (GPU / "query-gpu/h100-590.48.01-capture-query-gpu-csv-q-topo.txt").read_text()
    help_text = capture[capture.index("# $ nvidia-smi -h\n") :]
    help_text = help_text[: help_text.index("# capabilities :: help-query-gpu")]
    start = help_text.index("--display=")
    offered = help_text[start : help_text.index("Flags can be combined", start)]
    args = tmp_path / "args"
    _run_node(tmp_path, {"nvidia-smi": f'echo "$@" >> {args}; echo'}, "gpu-health")
    asked = args.read_text().splitlines()[0].split()[2].split(",")
    assert asked and all(section in offered for section in asked), (asked, offered)


def test_an_old_driver_without_row_remapper_gets_the_full_report(tmp_path: Path) -> None:
    full = GPU / "nvidia-smi-q/v100x8-azure-535.86.10-page-retirement-healthy.txt"
    body = f'if [[ $* == *ROW_REMAPPER* ]]; then echo "Invalid combination"; exit 2; fi; cat {full}'
    result, _ = _results(_run_node(tmp_path, {"nvidia-smi": body}, "gpu-health"))["gpu-health"]
    assert result.status == "pass"


def test_no_nvidia_smi_is_skipped_with_why_for_both_checks(tmp_path: Path) -> None:
    log = _run_node(tmp_path, {}, "gpu-health", "xid")
    assert "SLURMKIT_CAPTURE" not in log
    assert log.count("status=skipped detail=no NVIDIA driver on this node") == 2


def test_nvidia_smi_without_devices_is_skipped(tmp_path: Path) -> None:
    log = _run_node(tmp_path, {"nvidia-smi": "echo 'No devices were found'; exit 6"}, "gpu-health")
    result, _ = _results(log)["gpu-health"]
    assert result.status == "skipped" and "no GPU" in result.detail


def test_nvidia_smi_failing_is_unknown_with_its_message(tmp_path: Path) -> None:
    body = (
        "echo 'NVIDIA-SMI has failed because it couldn'\"'\"'t communicate with the driver'; exit 9"
    )
    result, _ = _results(_run_node(tmp_path, {"nvidia-smi": body}, "gpu-health"))["gpu-health"]
    assert result.status == "unknown"
    assert "exit 9" in result.detail and "communicate with the driver" in result.detail


H100X8_SMI = f"cat {GPU / 'nvidia-smi-q/h100x8-535.161.08-healthy.txt'}"  # GPU 0000:19:00 is one


def test_xid_from_dmesg_counts_on_the_node_s_gpus(tmp_path: Path) -> None:
    dmesg = f"cat {GPU / 'xid/dmesg-xid48-63-94-dbe-rowremap-contained.log'}"
    log = _run_node(tmp_path, {"nvidia-smi": H100X8_SMI, "dmesg": dmesg}, "gpu-health", "xid")
    result, verdict = _results(log)["xid"]
    assert result.status == "fail" and {f.signal for f in verdict.findings} == {
        "Xid 48",
        "Xid 63",
        "Xid 94",
    }
    (tmp_path / "alone").mkdir()
    alone = _run_node(tmp_path / "alone", {"nvidia-smi": "true", "dmesg": dmesg}, "xid")
    result, _ = _results(alone)["xid"]  # no list of the node's GPUs: never a fail
    assert result.status == "unknown" and "not checked against this node's GPUs" in result.detail


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a fake /sys/bus/pci/drivers (root)")
def test_the_xid_check_alone_names_the_node_s_gpus_so_its_records_count(tmp_path: Path) -> None:
    """Without gpu-health in the same scan, the capture lists the node's GPUs itself (the
    driver's folder in sysfs): the records on one of them count, and a record that names
    another address (a user's forged segfault line, say) does not."""
    drivers = tmp_path / "drivers"
    for entry in ("nvidia/0000:19:00.0", "nvidia/module", "nvidia/bind"):
        (drivers / entry).mkdir(parents=True)
    dmesg = f"cat {GPU / 'xid/dmesg-xid48-63-94-dbe-rowremap-contained.log'}"
    tools = {"nvidia-smi": "true", "dmesg": dmesg}
    log = _run_node(tmp_path, tools, "xid", pci_drivers=drivers)
    assert "# gpus: 0000:19:00.0\n" in _capture_text(log, "xid")
    result, verdict = _results(log)["xid"]
    assert result.status == "fail" and "Xid 48" in {f.signal for f in verdict.findings}
    (drivers / "nvidia" / "0000:19:00.0").rename(drivers / "nvidia" / "0000:3b:00.0")
    (tmp_path / "other").mkdir()
    other = _run_node(tmp_path / "other", tools, "xid", pci_drivers=drivers)
    assert _results(other)["xid"][0].status == "pass"  # its Xids name another GPU


def _capture_text(log: str, check: str) -> str:
    line = next(x for x in log.splitlines() if f"check={check} " in x)
    return gzip.decompress(base64.b64decode(line.rsplit("data=", 1)[1])).decode()


def test_xid_falls_back_to_the_journal_and_a_closed_log_is_unknown(tmp_path: Path) -> None:
    closed = "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1"
    # journalctl -k -o short-iso's layout, crafted from the recorded dmesg -T Xid 119 lines
    recorded = (GPU / "xid/dmesg-h100-xid119-gsp-rpc-timeout.log").read_text().splitlines()
    journal = tmp_path / "journal.txt"
    journal.write_text(
        "".join(
            f"2025-02-23T16:24:18+0000 node-7 kernel: {line.split('] ', 1)[1]}\n"
            for line in recorded
            if "NVRM: Xid" in line
        )
    )
    tools = {"nvidia-smi": H100X8_SMI, "dmesg": closed, "journalctl": f"cat {journal}"}
    result, _ = _results(_run_node(tmp_path, tools, "gpu-health", "xid"))["xid"]
    assert result.status == "fail" and "Xid 119" in result.detail
    tools["journalctl"] = "echo 'No journal files were opened due to insufficient permissions.'"
    (tmp_path / "b").mkdir()
    result, _ = _results(_run_node(tmp_path / "b", tools, "xid"))["xid"]
    assert result.status == "unknown"
    assert (
        "Operation not permitted" in result.detail and "insufficient permissions" in result.detail
    )


def test_a_clean_kernel_log_passes(tmp_path: Path) -> None:
    log = _run_node(tmp_path, {"nvidia-smi": "true", "dmesg": "echo '[ 0.0] Linux'"}, "xid")
    assert _results(log)["xid"][0].status == "pass"


# --- the capture line itself: text a node can shape -------------------------------------


def _line(data: bytes, enc: str = "gz64", check: str = "gpu-health", rc: int = 0) -> str:
    payload = gzip.compress(data) if enc == "gz64" else data
    encoded = base64.b64encode(payload).decode()
    return f"SLURMKIT_CAPTURE node=node-1 check={check} rc={rc} enc={enc} data={encoded}"


def test_a_capture_that_does_not_decode_is_unknown() -> None:
    log = "SLURMKIT_CAPTURE node=node-1 check=gpu-health rc=0 enc=gz64 data=!!!notbase64"
    [(result, _)] = captures.results(log)
    assert result.status == "unknown" and "not base64" in result.detail
    [(result, _)] = captures.results(_line(b"plain", enc="b64").replace("b64", "gz64", 1))
    assert result.status == "unknown" and "not gzip" in result.detail


def test_a_gzip_bomb_is_refused() -> None:
    [(result, _)] = captures.results(_line(b"\0" * (captures.MAX_TEXT + 10)))
    assert result.status == "unknown" and "inflates beyond" in result.detail


def test_captures_join_the_check_lines_in_the_report() -> None:
    a10 = (GPU / "nvidia-smi-q/a10-535.129.03-rowremap-pending-unc4.txt").read_bytes()
    log = _line(a10) + "\n" + "SLURMKIT_CHECK node=node-2 check=gpu-health status=skipped detail=x"
    results = parse_check_lines(log) + [r for r, _ in captures.results(log)]
    nodes = node_results(("gpu-health",), ["node-1", "node-2", "node-3"], results)
    assert [n.result for n in nodes] == [FAIL, SKIPPED, UNKNOWN]
    assert "row remap pending" in nodes[0].detail


def test_an_unknown_verdict_makes_the_node_unknown_not_pass() -> None:
    log = _line(b"Some future nvidia-smi\nfoo : bar\n")
    nodes = node_results(("gpu-health",), ["node-1"], [r for r, _ in captures.results(log)])
    assert nodes[0].result == UNKNOWN and "gpu-health: unknown: not nvidia-smi -q output" in (
        nodes[0].detail
    )
    assert nodes[0].result != PASS


def test_the_checks_are_known_and_gpu_health_asks_for_gpus() -> None:
    assert parse_checks("gpu-health,xid") == ("gpu-health", "xid")
    assert "gpu-health" in GPU_CHECKS and "xid" not in GPU_CHECKS


def test_capture_parsing_ignores_lines_for_other_checks() -> None:
    assert captures.results("SLURMKIT_CAPTURE node=n check=python rc=0 enc=b64 data=") == []
