"""GPU health signals parsed from real recorded outputs (tests/fixtures/gpu), each with
its expected verdict and action, plus the outputs that must never read as a pass."""

from __future__ import annotations

import csv
import json
import re
from datetime import datetime, timezone

import pytest
from fixtures_path import FIXTURES

from slurmkit.gpu import smi, xid
from slurmkit.gpu.findings import Action

GPU = FIXTURES / "gpu"

# file -> (parser, status, action, GPUs, what the findings must name)
EXPECTED = {
    "nvidia-smi-q/h100x8-535.161.08-healthy.txt": (
        "smi",
        "pass",
        Action.CHECK_COOLING,
        8,
        "HW power brake slowdown",
    ),
    "nvidia-smi-q/a10-535.129.03-rowremap-pending-unc4.txt": (
        "smi",
        "fail",
        Action.RESET,
        1,
        "row remap pending (uncorrectable 4",
    ),
    "nvidia-smi-q/a100x4-555.42.02-rowremap-pending-EXTRACTED.txt": (
        "smi",
        "fail",
        Action.RESET,
        4,
        "00000000:9E:00.0: row remap pending",
    ),
    "nvidia-smi-q/v100x8-azure-535.86.10-page-retirement-healthy.txt": (
        "smi",
        "pass",
        Action.NONE,
        8,
        "",
    ),
    "nvidia-smi-q/v100x8-azure-535.86.10-page-retirement-EDITED-pending-blacklist.txt": (
        "smi",
        "fail",
        Action.REPLACE,
        8,
        "retired pages (65 pages retired (SBE 60, DBE 5))",
    ),
    "nvidia-smi-q-x/v100s-x8-460.73.01-healthy.xml": ("smi", "pass", Action.NONE, 8, ""),
    "nvidia-smi-q-x/a100-sxm4-80gb-mig-535.54.03-single-gpu.xml": (
        "smi",
        "pass",
        Action.NONE,
        1,
        "",
    ),
    "xid/dmesg-xid48-63-94-dbe-rowremap-contained.log": ("xid", "fail", Action.RESET, 1, "Xid 63"),
    "xid/dmesg-xid13-43-sm-exception.log": ("xid", "pass", Action.INVESTIGATE_APP, 1, "Xid 43"),
    "xid/dmesg-h100-xid119-gsp-rpc-timeout.log": ("xid", "fail", Action.RESET, 1, "Xid 119"),
}


# Multi-section captures (one file, many nvidia-smi commands): each ``-q`` section's
# expectation, keyed by the section's "# <phase> :: query (-q)" header.
H100_590 = "query-gpu/h100-590.48.01-capture-query-gpu-csv-q-topo.txt"
SECTIONS = {
    H100_590: {
        "idle :: query (-q)": ("pass", Action.NONE, 1),
        "load :: query (-q)": ("pass", Action.NONE, 1),
    },
}


def _section(name: str, header: str) -> str:
    """One command's raw output out of a capture: between its banner and the next one."""
    lines = (GPU / name).read_text().splitlines(keepends=True)
    start = lines.index(f"# {header}\n") + 3  # the header, its "# $ command", the rule
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("#####"))
    return "".join(lines[start:end])


def _verdict(name: str):
    text = (GPU / name).read_text(errors="replace")
    return xid.parse(text) if EXPECTED[name][0] == "xid" else smi.parse(text)


def test_every_copied_capture_has_an_expectation_and_a_source_row() -> None:
    files = {str(p.relative_to(GPU)) for p in GPU.rglob("*") if p.is_file()} - {"SOURCES.tsv"}
    assert files == set(EXPECTED) | set(SECTIONS)
    with (GPU / "SOURCES.tsv").open(newline="") as handle:
        rows = {r["local_file"]: r for r in csv.DictReader(handle, delimiter="\t")}
    assert set(rows) == files
    assert all(
        r["license"] in ("MIT", "Apache-2.0") and len(r["commit"]) == 40 for r in rows.values()
    )
    edited = [name for name, r in rows.items() if r["description"].startswith("EDITED")]
    assert edited == [
        "nvidia-smi-q/v100x8-azure-535.86.10-page-retirement-EDITED-pending-blacklist.txt"
    ]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_output_verdict_and_action(name: str) -> None:
    _, status, action, gpus, named = EXPECTED[name]
    verdict = _verdict(name)
    assert (verdict.status, verdict.action, verdict.gpus) == (status, action, gpus)
    assert named in verdict.detail
    if status == "pass" and action == Action.NONE:
        assert verdict.findings == ()


@pytest.mark.parametrize(
    ("name", "header"), [(name, header) for name in SECTIONS for header in SECTIONS[name]]
)
def test_recorded_capture_sections_verdict_and_action(name: str, header: str) -> None:
    """Driver 590 (CUDA 13.1), newer than every other capture: read, not "unknown"."""
    status, action, gpus = SECTIONS[name][header]
    text = _section(name, header)
    assert text.lstrip().startswith("==============NVSMI LOG==============")
    verdict = smi.parse(text)
    assert (verdict.status, verdict.action, verdict.gpus) == (status, action, gpus)
    assert verdict.detail == f"{gpus} GPU(s): no ECC, retirement or remapping problem"


@pytest.mark.parametrize(
    ("key", "value", "signal", "action"),
    [
        # Driver 590's ECC counters are named per kind (SRAM parity / SEC-DED, DRAM):
        # each is read, none is skipped as an unknown key.
        ("DRAM Uncorrectable", "3", "uncorrectable ECC", Action.RESET),
        ("SRAM Uncorrectable SEC-DED", "2", "uncorrectable ECC", Action.RESET),
        ("SRAM Uncorrectable Parity", "1", "uncorrectable ECC", Action.RESET),
        ("Pending", "Yes", "row remap pending", Action.RESET),
        ("Remapping Failure Occurred", "Yes", "row remapping failed", Action.REPLACE),
        ("HW Thermal Slowdown", "Active", "clocks slowed down", Action.CHECK_COOLING),
    ],
)
def test_driver_590_field_names_are_read(key: str, value: str, signal: str, action) -> None:
    """The real 590 capture with one field changed wherever it appears (an ECC counter in
    both Volatile and Aggregate: errors since the last reset, so a reset, not a replace)."""
    text = _section(H100_590, "load :: query (-q)")
    changed, count = re.subn(rf"(?m)^(\s+{re.escape(key)}\s+: ).*$", rf"\g<1>{value}", text)
    assert count >= 1
    verdict = smi.parse(changed)
    assert verdict.status == ("pass" if action is Action.CHECK_COOLING else "fail")
    assert signal in {f.signal for f in verdict.findings}, verdict.detail
    assert verdict.action is action


def test_a10_pending_remap_is_a_reset_not_a_replace() -> None:
    verdict = _verdict("nvidia-smi-q/a10-535.129.03-rowremap-pending-unc4.txt")
    [finding] = verdict.findings
    assert finding.fatal and finding.action is Action.RESET and finding.gpu == "00000000:07:00.0"


def test_a100_only_the_pending_gpu_fails() -> None:
    verdict = _verdict("nvidia-smi-q/a100x4-555.42.02-rowremap-pending-EXTRACTED.txt")
    assert [f.gpu for f in verdict.findings if f.fatal] == ["00000000:9E:00.0"]


def test_edited_blacklist_gpus_pending_and_over_the_rma_figure() -> None:
    verdict = _verdict(
        "nvidia-smi-q/v100x8-azure-535.86.10-page-retirement-EDITED-pending-blacklist.txt"
    )
    pending = sorted(f.gpu for f in verdict.findings if f.signal == "page retirement pending")
    assert len(pending) == 4
    replace = {f.gpu for f in verdict.findings if f.action is Action.REPLACE}
    assert "00000001:00:00.0" in replace  # 60 SBE + 5 DBE retired, nothing pending


def test_xid_48_63_94_actions_and_app_xids_only_warn() -> None:
    hard = _verdict("xid/dmesg-xid48-63-94-dbe-rowremap-contained.log")
    codes = {f.signal: (f.action, f.fatal) for f in hard.findings}
    assert codes == {
        "Xid 48": (Action.RESET, True),
        "Xid 63": (Action.RESET, True),
        "Xid 94": (Action.RESET, True),
    }
    app = _verdict("xid/dmesg-xid13-43-sm-exception.log")
    assert {f.signal for f in app.findings} == {"Xid 13", "Xid 43"}
    assert not any(f.fatal for f in app.findings)
    assert "629 event(s)" in app.detail and app.detail.startswith("warning:")


def test_xid_since_keeps_later_events_only() -> None:
    text = (GPU / "xid/dmesg-xid13-43-sm-exception.log").read_text()
    late = datetime(2025, 1, 21, 4, 0, tzinfo=timezone.utc)
    assert 0 < len(xid.events(text, late)) < len(xid.events(text))
    after = xid.parse(text, datetime(2026, 1, 1, tzinfo=timezone.utc))
    assert after.status == "pass" and after.findings == () and "since 2026-01-01" in after.reason


def test_xid_dmesg_T_local_times_compare_with_an_aware_since() -> None:
    text = (GPU / "xid/dmesg-h100-xid119-gsp-rpc-timeout.log").read_text()
    assert xid.events(text, datetime(2030, 1, 1, tzinfo=timezone.utc)) == []
    assert len(xid.events(text, datetime(2020, 1, 1, tzinfo=timezone.utc))) == 5


def test_an_xid_not_in_the_table_fails_with_look_it_up() -> None:
    verdict = xid.parse("[  12.5] NVRM: Xid (PCI:0000:01:00): 999, pid=1, name=x, boom\n")
    assert verdict.status == "fail" and "not in slurmkit's table" in verdict.detail


def test_no_xid_lines_is_a_pass() -> None:
    assert xid.parse("[    0.000000] Linux version 6.1\n").status == "pass"


# --- never a pass: unknown drivers, garbage, no GPU (synthetic inputs, not recordings) ---


def test_output_of_an_unknown_driver_is_unknown_with_the_reason() -> None:
    text = "NVIDIA System Management Report v999\nDevice 0: NVIDIA X200 | health=ok\n"
    verdict = smi.parse(text)
    assert verdict.status == "unknown" and "not nvidia-smi -q output" in verdict.reason


def test_gpu_sections_without_any_health_section_are_unknown() -> None:
    text = (
        "==============NVSMI LOG==============\n\nAttached GPUs : 1\nGPU 00000000:01:00.0\n"
        "    Product Name : NVIDIA X200\n    Memory Health\n        Status : Good\n"
    )
    verdict = smi.parse(text)
    assert verdict.status == "unknown" and "00000000:01:00.0" in verdict.reason


def test_a_counter_that_is_not_a_number_is_unknown() -> None:
    text = (GPU / "nvidia-smi-q/a10-535.129.03-rowremap-pending-unc4.txt").read_text()
    broken = text.replace(
        "Uncorrectable Error               : 4",
        "Uncorrectable Error               : [GPU requires reset]",
    )
    assert broken != text
    verdict = smi.parse(broken)
    assert verdict.status == "unknown" and "is not a count" in verdict.reason


def test_bad_xml_is_unknown() -> None:
    assert smi.parse("<nvidia_smi_log><gpu id='x'>").status == "unknown"
    assert "not <nvidia_smi_log>" in smi.parse("<html></html>").reason


@pytest.mark.parametrize(
    "text",
    [
        "No devices were found\n",
        "==============NVSMI LOG==============\n\nAttached GPUs : 0\n",
    ],
)
def test_no_gpu_is_skipped(text: str) -> None:
    assert smi.parse(text).status == "skipped"


def test_empty_output_is_unknown() -> None:
    assert smi.parse("").status == "unknown"


# --- the CLI entries: faulty gpu-health / xid --from FILE -----------------------------------


def test_cli_gpu_health_from_a_recorded_capture(run_cli) -> None:
    name = GPU / "nvidia-smi-q/a10-535.129.03-rowremap-pending-unc4.txt"
    out = run_cli("faulty", "gpu-health", "--from", str(name), exit_code=1).stdout
    assert out.startswith("gpu-health: fail: ")
    assert "FAIL 00000000:07:00.0: row remap pending" in out and "action: reset:" in out
    data = json.loads(
        run_cli("faulty", "gpu-health", "--from", str(name), "--json", exit_code=1).stdout
    )
    assert data["status"] == "fail" and data["findings"][0]["action"] == "reset"


def test_cli_unknown_driver_output_is_unknown_exit_1(run_cli, tmp_path) -> None:
    odd = tmp_path / "odd.txt"
    odd.write_text("NVIDIA SMI 999: device report v7\n{gpu: 0, health: ???}\n")
    out = run_cli("faulty", "gpu-health", "--from", str(odd), exit_code=1).stdout
    assert out.startswith("gpu-health: unknown: not nvidia-smi -q output")


def test_cli_xid_since_and_huge_input(run_cli) -> None:
    log = GPU / "xid/dmesg-h100-xid119-gsp-rpc-timeout.log"
    assert "Xid 119" in run_cli("faulty", "xid", "--from", str(log), exit_code=1).stdout
    later = run_cli("faulty", "xid", "--from", str(log), "--since", "2030-01-01").stdout
    assert later.startswith("xid: pass: no Xid event in the kernel log since 2030-01-01")
    err = run_cli("faulty", "xid", "--from", "/dev/zero", exit_code=2).stderr
    assert "not a regular file" in err and err.count("\n") == 1
