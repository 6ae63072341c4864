"""Issue 28, item 4: an Xid counts only when the NVIDIA driver logged it, for one of this
node's GPUs; a user who names a crashing program ``NVRM: Xid (...): 79`` forges nothing.

The forged lines below are real: recorded on the sandbox host (kernel 6.18.44,
util-linux 2.38.1 dmesg, 2026-11-28) after uid 2001 ran a NULL-dereferencing program
named ``NVRM: Xid (PCI:0000:ff:00): 79, x``, then one named ``a<newline>NVRM: Xid
(PCI:0000:19:00): 79, GPU has fallen off the bus.`` (only the Code: lines are left out).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures_path import FIXTURES

from slurmkit import _proc
from slurmkit.faulty import captures
from slurmkit.gpu import pci, smi, xid
from slurmkit.health import checks, config, kernlog

GPU = FIXTURES / "gpu"
H100X8 = smi.bus_ids((GPU / "nvidia-smi-q/h100x8-535.161.08-healthy.txt").read_text())
BOOT = "7c1e0d52-boot"

FORGED_DMESG = """\
[  295.405655] NVRM: Xid (PCI:[27520]: segfault at 0 ip 000055cd1622b139 sp 00007ffc30b338d0 \
error 4 in NVRM: Xid (PCI:0000:ff:00): 79, x[1139,55cd1622b000+1000] likely on CPU 0 (core 0, \
socket 0)
[  681.225902] a
               NVRM: Xid (PC[16987]: segfault at 0 ip 0000555b90c07139 sp 00007ffe91249900 \
error 4 in a
               NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus.[1139,555b90c07000+\
1000] likely on CPU 0 (core 0, socket 0)
"""
FORGED_ISO = """\
2026-11-28T21:42:26,405655+00:00 NVRM: Xid (PCI:[27520]: segfault at 0 ip 000055cd1622b139 sp \
00007ffc30b338d0 error 4 in NVRM: Xid (PCI:0000:ff:00): 79, x[1139,55cd1622b000+1000] likely on \
CPU 0 (core 0, socket 0)
2026-11-28T21:48:52,225902+00:00 a
                                 NVRM: Xid (PC[16987]: segfault at 0 ip 0000555b90c07139 sp \
00007ffe91249900 error 4 in a
                                 NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus.\
[1139,555b90c07000+1000] likely on CPU 0 (core 0, socket 0)
"""
FORGED_DECODE = """\
kern  :info  : 2026-11-28T21:42:26,405655+00:00 NVRM: Xid (PCI:[27520]: segfault at 0 ip \
000055cd1622b139 sp 00007ffc30b338d0 error 4 in NVRM: Xid (PCI:0000:ff:00): 79, x[1139,\
55cd1622b000+1000] likely on CPU 0 (core 0, socket 0)
kern  :info  : 2026-11-28T21:48:52,225902+00:00 a
                                                NVRM: Xid (PC[16987]: segfault at 0 ip \
0000555b90c07139 sp 00007ffe91249900 error 4 in a
                                                NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen \
off the bus.[1139,555b90c07000+1000] likely on CPU 0 (core 0, socket 0)
"""
FORGED_KMSG = [
    "6,344,295405655,-;NVRM: Xid (PCI:[27520]: segfault at 0 ip 000055cd1622b139 sp "
    "00007ffc30b338d0 error 4 in NVRM: Xid (PCI:0000:ff:00): 79, x[1139,55cd1622b000+1000] "
    "likely on CPU 0 (core 0, socket 0)\n",
    "6,348,681225902,-;a\\x0aNVRM: Xid (PC[16987]: segfault at 0 ip 0000555b90c07139 sp "
    "00007ffe91249900 error 4 in a\\x0aNVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the "
    "bus.[1139,555b90c07000+1000] likely on CPU 0 (core 0, socket 0)\n",
]
# The driver's own line, as /dev/kmsg gives it (crafted from the dmesg fixture's Xid 48).
REAL_KMSG = (
    "4,350,700000000,-;NVRM: Xid (PCI:0000:19:00): 48, pid='<unknown>', name=<unknown>, An "
    "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr "
    "0x12bac1c3e0 partition 2, subpartition 1.\n"
)
GPU_19 = frozenset({(0, 0x19, 0)})
BOTH = frozenset({(0, 0x19, 0), (0, 0xFF, 0)})


# ---------------------------------------------------------------- forged lines


@pytest.mark.parametrize("text", [FORGED_DMESG, FORGED_ISO, FORGED_DECODE])
def test_a_forged_segfault_line_is_no_xid_in_any_dmesg_format(text: str) -> None:
    assert xid.events(text) == []  # not even with every PCI id allowed
    assert xid.events(text, gpus=BOTH) == []  # nor when the forger named this node's GPU
    verdict = xid.parse(text, gpus=BOTH)
    assert verdict.status == "pass"
    assert "ignored: 3 line(s) with 'NVRM: Xid' not from the driver" in verdict.reason


def test_a_forged_segfault_record_in_kmsg_is_no_xid() -> None:
    log = kernlog.from_kmsg([line.encode() for line in FORGED_KMSG], None, BOOT)
    assert log.position == kernlog.Position("kmsg", BOOT, seq=348)
    found = xid.scan(log.records, gpus=BOTH)
    assert found.events == [] and found.stray == 2


def test_the_real_driver_line_next_to_the_forgeries_is_accepted() -> None:
    reads = [line.encode() for line in [*FORGED_KMSG, REAL_KMSG]]
    found = xid.scan(kernlog.from_kmsg(reads, None, BOOT).records, gpus=GPU_19)
    assert [(e.pci, e.code) for e in found.events] == [("PCI:0000:19:00", 48)]
    assert found.stray == 2


def test_a_record_userspace_wrote_is_refused_in_kmsg_and_dmesg_decode() -> None:
    """Root's userspace can write /dev/kmsg: facility user (1), not kern (0)."""
    written = "12,351,700000100,-;NVRM: Xid (PCI:0000:19:00): 79, pid=1, name=x, GPU gone\n"
    assert xid.kmsg_record(written) == (351, None)
    decoded = "user  :warn  : 2026-11-28T21:50:00,000000+00:00 NVRM: Xid (PCI:0000:19:00): 79, x"
    assert xid.events(decoded, gpus=GPU_19) == []
    assert len(xid.events(decoded.replace("user ", "kern "), gpus=GPU_19)) == 1


def test_journal_entries_count_only_from_the_kernel_transport() -> None:
    kernel = {"_TRANSPORT": "kernel", "MESSAGE": REAL_KMSG.split(";", 1)[1].strip()}
    logger = {**kernel, "_TRANSPORT": "syslog", "SYSLOG_IDENTIFIER": "kernel"}  # logger -t kernel
    name = {**kernel, "MESSAGE": "a\nNVRM: Xid (PCI:0000:19:00): 79, y[1139,5+1000]"}
    records = [r for r in map(xid.journal_record, [kernel, logger, name]) if r is not None]
    found = xid.scan(records, gpus=GPU_19)
    assert [e.code for e in found.events] == [48] and found.stray == 1
    as_bytes = {**kernel, "MESSAGE": list(kernel["MESSAGE"].encode())}
    assert xid.journal_record(as_bytes) == xid.journal_record(kernel)


def test_journalctl_text_takes_the_kernel_identifier_and_refuses_indented_lines() -> None:
    text = (
        "2026-11-28T21:48:52+0000 node-7 kernel: a\n"
        "                                        NVRM: Xid (PCI:0000:19:00): 79, y[1139]\n"
        "2026-11-28T21:49:00+0000 node-7 kernel: NVRM: Xid (PCI:0000:19:00): 48, pid=1, DBE\n"
        "Nov 28 21:49:01 node-7 kernel: NVRM: Xid (PCI:0000:19:00): 63, pid=1, remap\n"
        "Nov 28 21:49:02 node-7 sshd[12]: NVRM: Xid (PCI:0000:19:00): 79, not the kernel\n"
    )
    events = xid.events("# source: journalctl\n" + text, gpus=GPU_19)
    assert [e.code for e in events] == [48, 63]
    assert events[0].when is not None and events[0].when.isoformat() == "2026-11-28T21:49:00+00:00"
    assert xid.events("# source: dmesg\n" + text, gpus=GPU_19) == []  # each source its format


def test_a_mig_gpu_instance_line_is_the_driver_s() -> None:
    line = "[ 12.500000] NVRM: Xid (PCI:0000:19:00 GPU-I:05 GPU-CI:01): 94, pid=7, name=a, Ch 9"
    assert [(e.pci, e.code) for e in xid.events(line, gpus=GPU_19)] == [("PCI:0000:19:00", 94)]


# ---------------------------------------------------------------- this node's GPUs


def test_the_recorded_captures_still_parse_on_their_node_s_gpus() -> None:
    """Real dmesg captures, with the bus ids of a real 8 x H100 node as "this node"."""
    dbe = xid.parse((GPU / "xid/dmesg-xid48-63-94-dbe-rowremap-contained.log").read_text(),
                    gpus=H100X8)  # fmt: skip
    assert dbe.status == "fail"
    assert {f.signal for f in dbe.findings} == {"Xid 48", "Xid 63", "Xid 94"}
    gsp = xid.parse((GPU / "xid/dmesg-h100-xid119-gsp-rpc-timeout.log").read_text(), gpus=H100X8)
    assert gsp.status == "fail" and {f.gpu for f in gsp.findings} == {"PCI:0000:9b:00"}


def test_a_real_xid_on_a_pci_id_not_of_this_node_is_refused() -> None:
    text = (GPU / "xid/dmesg-xid13-43-sm-exception.log").read_text()  # all on 0000:38:00
    assert len(xid.events(text)) == 636  # the driver's lines, read away from their node
    verdict = xid.parse(text, gpus=H100X8)
    assert (verdict.status, verdict.findings) == ("pass", ())
    assert "636 record(s) for PCI 0000:38:00, not a GPU of this node" in verdict.reason


def test_no_gpu_means_skipped_never_passed() -> None:
    text = (GPU / "xid/dmesg-h100-xid119-gsp-rpc-timeout.log").read_text()
    verdict = xid.parse(text, gpus=frozenset())
    assert (verdict.status, verdict.reason) == ("skipped", xid.NO_GPU)


def test_bus_ids_in_every_spelling_are_one_address() -> None:
    assert pci.address("0000:3b:00") == pci.address("00000000:3B:00.0") == (0, 0x3B, 0)
    assert pci.address("0000:3b:00.0 x") is None and pci.address("PCI:[27520]") is None
    assert pci.show((0x10001, 0x3B, 0)) == "10001:3b:00"
    assert smi.bus_ids((GPU / "nvidia-smi-q-x/v100s-x8-460.73.01-healthy.xml").read_text()) == {
        (0, 0, d) for d in range(0x0D, 0x15)
    }
    assert len(H100X8) == 8 and (0, 0x9B, 0) in H100X8


# ---------------------------------------------------------------- the health check


def xid_check() -> config.Check:
    return config.parse("[[check]]\ntype = 'xid'\n").checks[0]


def fake_log(*lines: str):
    def read(after: kernlog.Position | None, *, timeout: float) -> kernlog.KernelLog:
        return kernlog.from_kmsg([line.encode() for line in lines], after, BOOT)

    return read


def test_the_health_check_refuses_the_forgery_and_a_foreign_gpu_and_takes_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checks, "nvidia_smi", lambda: "/usr/bin/nvidia-smi")
    foreign = REAL_KMSG.replace("4,350,", "4,352,").replace("0000:19:00", "0000:ff:00")
    forged = fake_log(*FORGED_KMSG, foreign)
    ctx = checks.Context("node-3", gpus=BOTH - {(0, 0xFF, 0)}, read_log=forged)
    result = checks.run_check(xid_check(), ctx)
    assert result.status == "pass", result
    assert "1 record(s) for PCI 0000:ff:00, not a GPU of this node" in result.detail
    assert ctx.xid_position == kernlog.Position("kmsg", BOOT, seq=352)
    ctx = checks.Context("node-3", gpus=GPU_19, read_log=fake_log(*FORGED_KMSG, REAL_KMSG))
    result = checks.run_check(xid_check(), ctx)
    assert result.status == "fail" and "PCI:0000:19:00: Xid 48" in result.detail


def test_the_health_check_is_skipped_without_a_gpu_and_reads_no_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*args: object, **kwargs: object) -> kernlog.KernelLog:
        raise AssertionError("the kernel log was read on a node without a GPU")

    monkeypatch.setattr(checks, "nvidia_smi", lambda: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(checks, "node_gpus", lambda program, timeout: frozenset())
    result = checks.run_check(xid_check(), checks.Context("n", read_log=never))
    assert (result.status, result.detail) == ("skipped", xid.NO_GPU)


def test_node_gpus_come_from_the_driver_s_sysfs_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = tmp_path / "bus" / "pci" / "drivers" / "nvidia"
    driver.mkdir(parents=True)
    for name in ("0000:19:00.0", "0000:9b:00.0", "bind", "module", "new_id"):
        (driver / name).touch()
    monkeypatch.setattr(checks, "PCI_SYSFS", str(tmp_path / "bus" / "pci"))
    monkeypatch.setattr(checks, "NVIDIA_SYSFS", str(driver))
    assert checks.node_gpus("/no/nvidia-smi", 1) == {(0, 0x19, 0), (0, 0x9B, 0)}
    monkeypatch.setattr(checks, "NVIDIA_SYSFS", str(tmp_path / "unloaded"))
    assert checks.node_gpus("/no/nvidia-smi", 1) == frozenset()


def test_node_gpus_ask_nvidia_smi_only_without_sysfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = iter([("00000000:19:00.0\n00000000:9B:00.0\n", 0, False), ("", -9, True)])

    def runner(argv, **kwargs) -> _proc.Completed:
        out, rc, timed_out = next(answers)
        assert argv[1:] == ["--query-gpu=pci.bus_id", "--format=csv,noheader"]
        return _proc.Completed(tuple(argv), rc, out, "", 0.1, timed_out)

    monkeypatch.setattr(checks, "PCI_SYSFS", str(tmp_path / "none"))
    monkeypatch.setattr(_proc, "runner", runner)
    monkeypatch.setattr(checks, "nvidia_smi", lambda: "/usr/bin/nvidia-smi")
    assert checks.node_gpus("/usr/bin/nvidia-smi", 1) == {(0, 0x19, 0), (0, 0x9B, 0)}
    result = checks.run_check(xid_check(), checks.Context("n", read_log=fake_log(REAL_KMSG)))
    assert result.status == "unknown" and "cannot list this node's GPUs" in result.detail


def test_a_log_no_source_can_read_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    def closed(after: object, *, timeout: float) -> kernlog.KernelLog:
        raise kernlog.Unreadable("/dev/kmsg: Operation not permitted; journalctl not found")

    monkeypatch.setattr(checks, "nvidia_smi", lambda: "/usr/bin/nvidia-smi")
    result = checks.run_check(xid_check(), checks.Context("n", gpus=GPU_19, read_log=closed))
    assert result.status == "unknown" and "Operation not permitted" in result.detail


# ---------------------------------------------------------------- faulty scan's captures


def _capture(text: str, check: str = "xid", node: str = "node-1") -> str:
    import base64
    import gzip

    data = base64.b64encode(gzip.compress(text.encode())).decode()
    return f"SLURMKIT_CAPTURE node={node} check={check} rc=0 enc=gz64 data={data}"


def test_a_scan_checks_xid_records_against_the_node_s_gpu_health_bus_ids() -> None:
    smi_text = (GPU / "nvidia-smi-q/h100x8-535.161.08-healthy.txt").read_text()
    dbe = (
        "# source: dmesg\n" + (GPU / "xid/dmesg-xid48-63-94-dbe-rowremap-contained.log").read_text()
    )
    app = "# source: dmesg\n" + (GPU / "xid/dmesg-xid13-43-sm-exception.log").read_text()
    log = "\n".join(
        [
            _capture(smi_text, "gpu-health", "node-1"),
            _capture(dbe, "xid", "node-1"),
            _capture(smi_text, "gpu-health", "node-2"),
            _capture(app, "xid", "node-2"),  # 0000:38:00 is none of node-2's GPUs
            _capture(dbe, "xid", "node-3"),  # node-3 ran xid alone: no list to check against
            _capture(FORGED_ISO, "xid", "node-4"),
        ]
    )
    got = {(r.node, r.check): (r.status, r.detail) for r, _ in captures.results(log)}
    assert got[("node-1", "xid")][0] == "fail"
    assert got[("node-2", "xid")] == (
        "pass",
        "no Xid event in the kernel log (ignored: 636 record(s) for PCI 0000:38:00, "
        "not a GPU of this node)",
    )
    status, detail = got[("node-3", "xid")]
    assert status == "unknown" and detail.startswith("3 Xid finding(s) on PCI:0000:19:00, not ")
    assert got[("node-4", "xid")][0] == "pass"


def test_a_capture_s_own_gpu_list_decides() -> None:
    dbe = (GPU / "xid/dmesg-xid48-63-94-dbe-rowremap-contained.log").read_text()
    listed = "# source: dmesg\n# gpus: 0000:19:00.0 0000:3b:00.0\n" + dbe
    other = "# source: dmesg\n# gpus: 0000:3b:00.0\n" + dbe
    none = "# source: dmesg\n# gpus:\n" + dbe
    got = [v.status for _, v in captures.results("\n".join(map(_capture, (listed, other, none))))]
    assert got == ["fail", "pass", "skipped"]


def test_the_journal_json_reader_keeps_the_cursor(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [
        {"__CURSOR": "s=1;i=1", "_TRANSPORT": "kernel", "MESSAGE": "Linux version 6.1"},
        {"__CURSOR": "s=1;i=2", "_TRANSPORT": "kernel", "MESSAGE": REAL_KMSG.split(";", 1)[1],
         "__REALTIME_TIMESTAMP": "1764366540000000"},
    ]  # fmt: skip
    calls = []

    def runner(argv, **kwargs) -> _proc.Completed:
        calls.append(list(argv))
        out = "".join(json.dumps(e) + "\n" for e in entries) if len(calls) == 1 else ""
        return _proc.Completed(tuple(argv), 0, out, "", 0.1)

    monkeypatch.setattr(_proc, "runner", runner)
    monkeypatch.setattr(kernlog.shutil, "which", lambda name, path=None: "/bin/journalctl")
    first = kernlog.read_journal(None, BOOT, timeout=5)
    assert first.position == kernlog.Position("journal", BOOT, cursor="s=1;i=2")
    assert [e.code for e in xid.scan(first.records, gpus=GPU_19).events] == [48]
    again = kernlog.read_journal(first.position, BOOT, timeout=5)
    assert calls[1][-1] == "--after-cursor=s=1;i=2" and "-k" in calls[1] and "-b" in calls[1]
    assert (again.records, again.position) == ([], first.position)
    with pytest.raises(kernlog.Unreadable, match="no kernel entry of this boot"):
        kernlog.read_journal(None, BOOT, timeout=5)  # an empty journal is no clean log
