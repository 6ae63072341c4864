"""``nvidia-smi -q`` (text) and ``nvidia-smi -q -x`` (XML) -> the GPU health verdict.

Signals read per GPU, with NVIDIA's guidance for each (GPU memory error management,
the "Dynamic Page Retirement" and "Row Remapping" notes):

- remapped rows **failure** -> replace the GPU: the spare rows ran out.
- remapped rows **pending** -> reset the GPU (or reboot): the remap takes effect then.
- retired pages **pending** (pending page blacklist / retirement) -> reset or reboot.
- retired pages total >= 60 -> replace (NVIDIA's page retirement RMA figure).
- volatile uncorrectable ECC errors -> reset; errors also counted before the last
  reset (aggregate above volatile) persist across resets -> replace.
- aggregate uncorrectable errors only (none since the reset) -> warning, watch.
- clocks throttle / event reasons HW slowdown, HW thermal, HW power brake, SW thermal
  active -> warning, check cooling and power (a slow node, not a broken one).

``N/A`` (a GPU or mode without the feature, e.g. ECC off or MIG) is "not reported".
A value that is neither a number, Yes/No nor N/A, or a GPU with none of the ECC,
retired-page or remapped-row sections, makes the verdict "unknown" with the reason:
a driver whose output we cannot read is never taken as healthy. No GPU at all
("No devices were found", ``Attached GPUs : 0``) is "skipped".
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from slurmkit.gpu import pci
from slurmkit.gpu.findings import (
    SKIPPED,
    UNKNOWN,
    Action,
    GpuFinding,
    Verdict,
    from_findings,
)

CHECK = "gpu-health"
RETIRED_PAGES_RMA = 60
_KV = re.compile(r"^(?P<indent> *)(?P<key>\S.*?)\s+:(?: (?P<value>.*))?$")
_GPU_HEADER = re.compile(
    r"^GPU (?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$"
)
_NO_DEVICES = re.compile(r"No devices were found|No NVIDIA GPU found", re.I)
_SLOWDOWN = {
    "hw slowdown": "HW slowdown",
    "hw thermal slowdown": "HW thermal slowdown",
    "hw power brake slowdown": "HW power brake slowdown",
    "sw thermal slowdown": "SW thermal slowdown",
}


class Unreadable(ValueError):
    """A value or layout this parser does not know: the verdict is unknown, with this text."""


@dataclass
class GpuSignals:
    """What one GPU reports; None: not reported (N/A or absent)."""

    gpu: str
    name: str = ""
    volatile_unc: int | None = None
    aggregate_unc: int | None = None
    retired_sbe: int | None = None
    retired_dbe: int | None = None
    retirement_pending: bool | None = None
    remap_corr: int | None = None
    remap_unc: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    slowdowns: list[str] = field(default_factory=list)
    sections: set[str] = field(default_factory=set)


def parse(text: str) -> Verdict:
    """The verdict for one node's ``nvidia-smi -q`` output, text or XML (told apart here)."""
    stripped = text.lstrip()
    if not stripped:
        return Verdict(CHECK, UNKNOWN, "nvidia-smi printed nothing")
    if _NO_DEVICES.search(text[:2000]) and "GPU " not in text.replace("GPUs", ""):
        return Verdict(CHECK, SKIPPED, "nvidia-smi found no GPU on this node")
    try:
        gpus = _from_xml(stripped) if stripped.startswith("<") else _from_text(text)
    except Unreadable as exc:
        return Verdict(CHECK, UNKNOWN, str(exc))
    if not gpus:
        return Verdict(CHECK, SKIPPED, "nvidia-smi lists no GPU (Attached GPUs: 0)")
    blind = [g.gpu for g in gpus if not g.sections]
    if blind:
        return Verdict(
            CHECK,
            UNKNOWN,
            f"no ECC, retired-page or remapped-row section for GPU {', '.join(blind[:4])}: "
            "output of a driver this parser does not know",
        )
    findings = [f for g in gpus for f in judge(g)]
    summary = f"{len(gpus)} GPU(s): no ECC, retirement or remapping problem"
    return from_findings(CHECK, findings, len(gpus), summary)


def bus_ids(text: str) -> frozenset[pci.Address]:
    """The PCI addresses of the GPUs an ``nvidia-smi -q`` report (text or XML) lists.

    What an Xid record's address is checked against when a scan's node captured no list
    of its own (:mod:`slurmkit.gpu.xid`); output that does not parse lists none.
    """
    stripped = text.lstrip()
    if stripped.startswith("<"):
        try:
            names = [g.get("id", "") for g in ET.fromstring(stripped).findall("gpu")]
        except ET.ParseError:
            return frozenset()
    else:
        names = [m["bus"] for m in map(_GPU_HEADER.match, text.splitlines()) if m]
    return frozenset(a for a in map(pci.address, names) if a is not None)


def judge(g: GpuSignals) -> list[GpuFinding]:
    """Findings for one GPU, each with NVIDIA's action (see the module docstring)."""
    out: list[GpuFinding] = []
    if g.remap_failure:
        out.append(
            GpuFinding(g.gpu, "row remapping failed", "no spare rows left", Action.REPLACE, True)
        )
    if g.remap_pending:
        detail = f"uncorrectable {g.remap_unc or 0}, correctable {g.remap_corr or 0} rows"
        out.append(GpuFinding(g.gpu, "row remap pending", detail, Action.RESET, True))
    if g.retirement_pending:
        out.append(
            GpuFinding(
                g.gpu, "page retirement pending", "pending page blacklist", Action.RESET, True
            )
        )
    retired = (g.retired_sbe or 0) + (g.retired_dbe or 0)
    if retired >= RETIRED_PAGES_RMA:
        detail = f"{retired} pages retired (SBE {g.retired_sbe}, DBE {g.retired_dbe})"
        out.append(GpuFinding(g.gpu, "retired pages", detail, Action.REPLACE, True))
    elif retired and not g.retirement_pending:
        detail = f"{retired} pages retired (SBE {g.retired_sbe}, DBE {g.retired_dbe})"
        out.append(GpuFinding(g.gpu, "retired pages", detail, Action.WATCH, False))
    vol, agg = g.volatile_unc or 0, g.aggregate_unc or 0
    if vol and agg > vol:
        detail = f"volatile {vol}, aggregate {agg}: also before the last reset"
        out.append(GpuFinding(g.gpu, "uncorrectable ECC persists", detail, Action.REPLACE, True))
    elif vol:
        detail = f"volatile {vol}, aggregate {agg}"
        out.append(GpuFinding(g.gpu, "uncorrectable ECC", detail, Action.RESET, True))
    elif agg:
        detail = f"aggregate {agg}, none since the last reset"
        out.append(GpuFinding(g.gpu, "past uncorrectable ECC", detail, Action.WATCH, False))
    if g.slowdowns:
        detail = ", ".join(g.slowdowns) + " active"
        out.append(GpuFinding(g.gpu, "clocks slowed down", detail, Action.CHECK_COOLING, False))
    return out


# --- text ------------------------------------------------------------------------------


def _from_text(text: str) -> list[GpuSignals]:
    if "NVSMI LOG" not in text and "Attached GPUs" not in text:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        raise Unreadable(
            f"not nvidia-smi -q output (no 'NVSMI LOG' or 'Attached GPUs' line; "
            f"first line: {first[:80]!r})"
        )
    gpus: list[GpuSignals] = []
    current: GpuSignals | None = None
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        header = _GPU_HEADER.match(line)
        if header:
            current = GpuSignals(header["bus"])
            gpus.append(current)
            stack = []
            continue
        if current is None:
            continue
        indent = len(line) - len(line.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        match = _KV.match(line)
        if match is None or (match["value"] is None and not line.rstrip().endswith(":")):
            stack.append((indent, line.strip()))  # a section header
            continue
        path = [name for _, name in stack]
        _text_value(current, path, match["key"].strip(), (match["value"] or "").strip())
    return gpus


def _text_value(g: GpuSignals, path: list[str], key: str, value: str) -> None:
    top = path[0] if path else ""
    low = key.lower()
    if not path and key == "Product Name":
        g.name = value
    elif top == "ECC Errors" and len(path) >= 2:
        g.sections.add("ecc")
        if _is_uncorrectable(path[2:], key):
            counted = _count(value, f"ECC {'/'.join([*path[1:], key])}")
            if counted is not None:
                if path[1] == "Volatile":
                    g.volatile_unc = (g.volatile_unc or 0) + counted
                elif path[1] == "Aggregate":
                    g.aggregate_unc = (g.aggregate_unc or 0) + counted
    elif top == "Retired Pages":
        g.sections.add("retired")
        where = "/".join([*path[1:], key])
        if low.startswith("single bit ecc") or (
            path[1:2] == ["Single Bit ECC"] and low == "retired count"
        ):
            g.retired_sbe = _count(value, f"Retired Pages {where}")
        elif low.startswith("double bit ecc") or (
            path[1:2] == ["Double Bit ECC"] and low == "retired count"
        ):
            g.retired_dbe = _count(value, f"Retired Pages {where}")
        elif low.startswith("pending"):
            g.retirement_pending = _yes_no(value, f"Retired Pages {where}")
    elif top == "Remapped Rows" and len(path) == 1:
        g.sections.add("remap")
        if low.startswith("correctable"):
            g.remap_corr = _count(value, f"Remapped Rows {key}")
        elif low.startswith("uncorrectable"):
            g.remap_unc = _count(value, f"Remapped Rows {key}")
        elif low == "pending":
            g.remap_pending = _yes_no(value, f"Remapped Rows {key}")
        elif low.startswith("remapping failure"):
            g.remap_failure = _yes_no(value, f"Remapped Rows {key}")
    elif top in ("Clocks Throttle Reasons", "Clocks Event Reasons"):
        name = _SLOWDOWN.get(low)
        if name and value.lower() == "active":
            g.slowdowns.append(name)
    elif not path and key == "Remapped Rows" and value.upper() == "N/A":
        g.sections.add("remap")  # a GPU without row remapping (pre-Ampere, MIG)


def _is_uncorrectable(sub: list[str], key: str) -> bool:
    """A DRAM/SRAM "Uncorrectable ..." counter, or an old driver's Double Bit/Total."""
    if "uncorrectable" in key.lower():
        return True
    return bool(sub) and sub[0] == "Double Bit" and key == "Total"


def _count(value: str, where: str) -> int | None:
    if value.upper() == "N/A" or value == "":
        return None
    if value.isdigit():
        return int(value)
    raise Unreadable(f"{where}: {value[:60]!r} is not a count")


def _yes_no(value: str, where: str) -> bool | None:
    low = value.lower()
    if low in ("yes", "no"):
        return low == "yes"
    if low == "n/a":
        return None
    raise Unreadable(f"{where}: {value[:60]!r} is not Yes/No/N/A")


# --- XML -------------------------------------------------------------------------------


def _from_xml(text: str) -> list[GpuSignals]:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise Unreadable(f"nvidia-smi -q -x output is not valid XML: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise Unreadable(f"XML root is <{root.tag[:40]}>, not <nvidia_smi_log>")
    gpus = []
    for node in root.findall("gpu"):
        g = GpuSignals(node.get("id", "?"), name=(node.findtext("product_name") or "").strip())
        ecc = node.find("ecc_errors")
        if ecc is not None:
            g.sections.add("ecc")
            g.volatile_unc = _xml_unc(ecc.find("volatile"), "volatile")
            g.aggregate_unc = _xml_unc(ecc.find("aggregate"), "aggregate")
        retired = node.find("retired_pages")
        if retired is not None:
            g.sections.add("retired")
            g.retired_sbe = _count(
                _xml_text(retired, "multiple_single_bit_retirement/retired_count"),
                "retired_pages single bit",
            )
            g.retired_dbe = _count(
                _xml_text(retired, "double_bit_retirement/retired_count"),
                "retired_pages double bit",
            )
            pending = _xml_text(retired, "pending_blacklist") or _xml_text(
                retired, "pending_retirement"
            )
            g.retirement_pending = _yes_no(pending or "N/A", "retired_pages pending")
            if (_xml_text(retired, "pending_retirement") or "").lower() == "yes":
                g.retirement_pending = True
        remap = node.find("remapped_rows")
        if remap is not None:
            g.sections.add("remap")
            g.remap_corr = _count(_xml_text(remap, "remapped_row_corr"), "remapped_row_corr")
            g.remap_unc = _count(_xml_text(remap, "remapped_row_unc"), "remapped_row_unc")
            g.remap_pending = _yes_no(
                _xml_text(remap, "remapped_row_pending") or "N/A", "remapped_row_pending"
            )
            g.remap_failure = _yes_no(
                _xml_text(remap, "remapped_row_failure") or "N/A", "remapped_row_failure"
            )
        for reasons in ("clocks_throttle_reasons", "clocks_event_reasons"):
            block = node.find(reasons)
            for child in block if block is not None else ():
                label = child.tag.split("reason_", 1)[-1].replace("_", " ")
                name = _SLOWDOWN.get(label)
                if name and (child.text or "").strip().lower() == "active":
                    g.slowdowns.append(name)
        gpus.append(g)
    return gpus


def _xml_text(node: ET.Element, path: str) -> str:
    found = node.find(path)
    return (found.text or "").strip() if found is not None else ""


def _xml_unc(block: ET.Element | None, where: str) -> int | None:
    """Sum of the ``*uncorrectable*`` counters, or an old driver's ``double_bit/total``."""
    if block is None:
        return None
    total: int | None = None
    found = [c for c in block if "uncorrectable" in c.tag]
    old = block.find("double_bit/total")
    if old is not None:
        found.append(old)
    for child in found:
        counted = _count((child.text or "").strip(), f"ecc_errors/{where}/{child.tag}")
        if counted is not None:
            total = (total or 0) + counted
    return total
