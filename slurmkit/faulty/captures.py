"""The raw outputs the gpu-health and xid checks captured on the nodes, parsed here.

Why not parse on the node: the node side has bash, coreutils and nvidia-smi, not
slurmkit, and its python may be too old for slurmkit's code. So the job prints each
raw output as one ``SLURMKIT_CAPTURE`` line (gzip + base64) and the submitting side
parses it with :mod:`slurmkit.gpu`, which also keeps the evidence in the job log.

The log is text a node's output can shape (issue 14), so a capture is bounded: its
base64 and its inflated size are capped, and one that does not decode is "unknown"
with the reason, never a pass.

An Xid record counts only for one of the node's own GPUs (the evidence rule in
:mod:`slurmkit.gpu.xid`): the xid capture's ``# gpus:`` line lists them, else the
same node's gpu-health capture (its bus ids). A node whose scan listed neither has
its Xid records reported as *unknown*, which neither excludes nor drains it.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from datetime import datetime

from slurmkit.gpu import pci, smi, xid
from slurmkit.gpu.findings import FAIL, PASS, SKIPPED, UNKNOWN, Verdict
from slurmkit.templating.results import CheckLine

CAPTURED = ("gpu-health", "xid")
MAX_ENCODED = 8_000_000
MAX_TEXT = 16_000_000
_LINE = re.compile(
    r"^SLURMKIT_CAPTURE node=(?P<node>\S+) check=(?P<check>gpu-health|xid) rc=(?P<rc>-?\d{1,4}) "
    r"enc=(?P<enc>gz64|b64) data=(?P<data>\S*)$"
)


class BadCapture(ValueError):
    pass


def decode(enc: str, data: str) -> str:
    """The captured text; BadCapture names why it cannot be read."""
    if len(data) > MAX_ENCODED:
        raise BadCapture(f"capture too large ({len(data)} base64 characters)")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadCapture(f"capture is not base64: {exc}") from None
    if enc == "gz64":
        inflate = zlib.decompressobj(wbits=31)
        try:
            raw = inflate.decompress(raw, MAX_TEXT)
        except zlib.error as exc:
            raise BadCapture(f"capture is not gzip: {exc}") from None
        if inflate.unconsumed_tail:
            raise BadCapture(f"capture inflates beyond {MAX_TEXT} bytes")
    return raw.decode("utf-8", errors="replace")


def verdict(
    check: str,
    rc: int,
    text: str,
    xid_since: datetime | None = None,
    gpus: frozenset[pci.Address] | None = None,
) -> Verdict:
    """Parse one capture; a failed command is unknown unless its output says "no GPU".

    ``gpus``: the node's GPUs from its other captures, for an xid capture without its own.
    """
    if check == "xid":
        if rc != 0:
            return Verdict(check, UNKNOWN, text.strip()[:300] or f"kernel log not read (exit {rc})")
        return _xid(text, xid_since, gpus)
    found = smi.parse(text)
    if rc != 0 and found.status != SKIPPED:
        last = text.strip().splitlines()[-1][:200] if text.strip() else "no output"
        return Verdict(check, UNKNOWN, f"nvidia-smi -q exit {rc}: {last}")
    return found


def _xid(text: str, since: datetime | None, gpus: frozenset[pci.Address] | None) -> Verdict:
    listed = xid.capture_gpus(text)
    if listed is not None or gpus is not None:
        return xid.parse(text, since, gpus=listed if listed is not None else gpus)
    found = xid.parse(text, since)
    if not found.findings:
        return found
    addresses = ", ".join(sorted({f.gpu for f in found.findings})[:3])
    return Verdict(
        "xid",
        UNKNOWN,
        f"{len(found.findings)} Xid finding(s) on {addresses}, not checked against this "
        "node's GPUs (the scan listed none): run gpu-health with xid",
    )


def results(text: str, xid_since: datetime | None = None) -> list[tuple[CheckLine, Verdict]]:
    """One (check result, verdict) per capture line in the job log."""
    captured = []
    for line in text.split("\n"):
        start = line.find("SLURMKIT_CAPTURE ")
        if start < 0:
            continue
        match = _LINE.match(line[start:].rstrip())
        if match is None:
            continue
        try:
            body: str | BadCapture = decode(match["enc"], match["data"])
        except BadCapture as exc:
            body = exc
        captured.append((match["node"], match["check"], int(match["rc"]), body))
    gpus = {
        node: smi.bus_ids(body)
        for node, check, rc, body in captured
        if check == "gpu-health" and rc == 0 and isinstance(body, str)
    }
    out = []
    for node, check, rc, body in captured:
        if isinstance(body, BadCapture):
            found = Verdict(check, UNKNOWN, str(body))
        else:
            found = verdict(check, rc, body, xid_since, gpus.get(node) or None)
        status = {PASS: "pass", FAIL: "fail", SKIPPED: "skipped"}.get(found.status, "unknown")
        out.append((CheckLine(node, check, status, found.detail), found))
    return out
