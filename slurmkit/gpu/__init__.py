"""A GPU's own health signals, parsed from the text nvidia-smi and the kernel print.

    smi.parse(text) -> Verdict      ``nvidia-smi -q`` text or ``nvidia-smi -q -x`` XML
    xid.parse(text, since) -> Verdict   ``dmesg`` / ``journalctl -k`` lines with NVRM Xid events

Pure parsing, no process started and no Slurm call: ``faulty scan`` feeds it what its
job captured on each node, and a node-local health check can feed it what it ran
itself. Every verdict is pass, fail, skipped (no GPU here, and why) or unknown (the
output did not parse, and why): an output we cannot read is never a pass.
"""

from __future__ import annotations

from slurmkit.gpu.findings import Action, GpuFinding, Verdict

__all__ = ["Action", "GpuFinding", "Verdict"]
