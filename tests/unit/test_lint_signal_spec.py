"""``--signal`` read as sbatch reads it (slurmkit/sbatch/signal.py).

Every "refused" and "accepted" case below was given to the sbatch 22.05.8 binary with a
controller-less slurm.conf: refused ones stop with "Invalid --signal specification",
accepted ones get as far as "Unable to contact slurm controller". ``B:TERM@00:30`` (a clock
time, found on a published script outside the corpus) used to be read as signal 30.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, SlurmVersion, lint_text
from slurmkit.sbatch import signal

V24 = LintContext(SlurmVersion.parse("24.11"))


@pytest.mark.parametrize(
    ("value", "batch", "name"),
    [
        ("B:USR1@120", True, "USR1"),
        ("USR1@90", False, "USR1"),
        ("b:sigterm@300", True, "TERM"),
        ("BR:USR2", True, "USR2"),
        ("RB:TERM@30", True, "TERM"),
        ("10@60", False, "USR1"),
        ("TERM@", False, "TERM"),
    ],
)
def test_specs_sbatch_accepts(value: str, batch: bool, name: str) -> None:
    assert signal.read(value) == signal.SignalSpec(batch, name, readable=True)


@pytest.mark.parametrize(
    "value", ["B:TERM@00:30", "B:USR1@1h", "USR1@70000", "TERM@+", "0@10", "B:RTMIN@10"]
)
def test_specs_sbatch_refuses(value: str) -> None:
    spec = signal.read(value)
    assert spec is not None and not spec.readable


@pytest.mark.parametrize("value", ["$SIG", "<signal>", "{{ sig }}@120"])
def test_blanks_to_fill_in_are_not_judged(value: str) -> None:
    assert signal.read(value) is None


def _findings(value: str, body: str = "python train.py\n") -> list[tuple[int, str, str]]:
    text = f"#!/bin/bash\n#SBATCH --signal={value}\n{body}"
    return [(f.line, f.severity, f.rule) for f in lint_text(text, "job.sh", V24)]


def test_a_clock_time_after_at_is_refused_not_read_as_a_signal_number() -> None:
    found = _findings("B:TERM@00:30")
    assert (2, "error", "sbatch-unknown-option") in found
    assert not [f for f in found if f[2] == "signal-without-trap"]


def test_a_readable_batch_signal_without_trap_is_still_reported() -> None:
    assert (2, "error", "signal-without-trap") in _findings("B:TERM@30")
    trapped = "trap 'touch stop' TERM\npython train.py &\nwait\n"
    assert not [f for f in _findings("B:TERM@30", trapped) if f[2] == "signal-without-trap"]
