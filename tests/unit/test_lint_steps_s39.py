"""Lifecycle, step and bash-reading fixes from the spent fifth hold-out (issue 32).

- resubmit-without-dependency: a self-submission that is the run's last act (after the
  training, an ``echo`` at most) queues the next run as this one ends, so the two never
  work at once; one in a trap handler, in a loop or before more work still overlaps.
- signal-without-trap: a trap whose handler only prints loses nothing when it runs
  late or never (``--signal`` without ``B:`` never reaches it).
- gpu-program-without-gpus: from Slurm 23.02 slurmctld refuses ``--cpus-per-gpu`` in a
  job that asks for no GPU (``--mem-per-gpu`` from 22.05 already): "Requested
  cpus_per_tres=… but did not request any GPU", even with ``--exclusive`` (gres.c).
- bash-syntax: ``! { a || b; }`` is a negated group bash accepts; tree-sitter-bash 0.25
  reads ``{`` there as a command name and then a stray ``}``.
"""

from __future__ import annotations

import pytest

from slurmkit.lint import LintContext, lint_text
from slurmkit.slurm.records import SlurmVersion

RESUBMIT, SIGNAL = "resubmit-without-dependency", "signal-without-trap"
NO_GPUS, SYNTAX = "gpu-program-without-gpus", "bash-syntax"
HEAD = "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --output=%x-%j.out\n"


def found(rule: str, body: str, version: str | None = "24.11.1") -> list[tuple[int, str]]:
    context = LintContext(SlurmVersion.parse(version) if version else None)
    findings = lint_text(HEAD + body, "t.slurm", context)
    return [(f.line, f.severity) for f in findings if f.rule == rule]


@pytest.mark.parametrize(
    "tail",
    [
        'sbatch "$0"\n',
        'sbatch "$0"\necho "next link queued"\nexit 0\n',
        'if [ ! -f done.flag ]; then\n  sbatch "$0"\nfi\n',
        'if [ ! -f done.flag ]; then\n  sbatch "$0"\nelse\n  python report.py\nfi\n',
    ],
)
def test_a_resubmission_as_the_last_act_cannot_overlap(tail: str) -> None:
    assert found(RESUBMIT, "srun python train.py\n" + tail) == []


@pytest.mark.parametrize(
    "body",
    [
        'sbatch "$0"\nsrun python train.py\n',
        'srun python train.py &\nsbatch "$0"\nwait\n',
        'h() {\n  sbatch "$0"\n}\ntrap h USR1\nsrun python train.py\n',
        'for i in 1 2; do\n  srun python train.py\n  sbatch "$0"\ndone\n',
        'for i in 1 2; do sbatch "$0"; done\n',
    ],
)
def test_a_resubmission_while_work_goes_on_still_overlaps(body: str) -> None:
    assert [s for _, s in found(RESUBMIT, body)] == ["info"]


def test_a_steps_only_signal_with_a_trap_that_only_prints_loses_nothing() -> None:
    body = (
        "#SBATCH --signal=10@300\n"
        'note() {\n  echo "caught USR1" 1>&2\n}\ntrap note 10\n'
        "srun ./one-step.sh &\nwait\n"
    )
    assert found(SIGNAL, body) == []
    inline = "#SBATCH --signal=USR1@300\ntrap 'echo caught' USR1\nsrun x &\nwait\n"
    assert found(SIGNAL, inline) == []


def test_a_steps_only_signal_with_a_working_trap_is_still_an_error() -> None:
    body = (
        "#SBATCH --signal=USR1@300\n"
        'requeue() {\n  echo "requeue"\n  scontrol requeue "$SLURM_JOB_ID"\n}\n'
        "trap requeue USR1\nsrun x &\nwait\n"
    )
    assert found(SIGNAL, body) == [(4, "error")]


def test_a_batch_signal_trap_that_only_prints_needs_no_background_step() -> None:
    body = "#SBATCH --signal=B:USR1@300\ntrap 'echo near the limit' USR1\nsrun x\n"
    assert found(SIGNAL, body) == []
    assert found(SIGNAL, body.replace("echo near the limit", "save; echo saved")) == [
        (5, "warning")
    ]


PER_GPU = "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --exclusive\n"
STEP = "srun --accel-bind=gn python -m training.main\n"


def test_cpus_per_gpu_without_a_gpu_is_refused_from_23_02() -> None:
    body = PER_GPU + "#SBATCH --cpus-per-gpu=6\n" + STEP
    assert found(NO_GPUS, body, "24.11.1") == [(8, "info")]
    assert found(NO_GPUS, body, "23.02.1") == [(8, "info")]
    assert found(NO_GPUS, body, None) == [(8, "info")]
    assert found(NO_GPUS, body, "22.05.8") == []  # accepted; --exclusive gives the GPUs


def test_mem_per_gpu_without_a_gpu_is_refused_on_every_version() -> None:
    body = PER_GPU + "#SBATCH --mem-per-gpu=40G\n" + STEP
    assert found(NO_GPUS, body, "22.05.8") == [(8, "info")]


@pytest.mark.parametrize(
    "request_",
    ["--gpus-per-node=8", "--gres=gpu:8", "--gpus=16", "--ntasks-per-gpu=1", "--gpus-per-task=1"],
)
def test_per_gpu_sizes_with_a_gpu_request_are_accepted(request_: str) -> None:
    body = PER_GPU + f"#SBATCH --cpus-per-gpu=6\n#SBATCH {request_}\n" + STEP
    assert found(NO_GPUS, body) == []


def test_per_gpu_sizes_without_a_step_are_named_on_their_directive() -> None:
    assert found(NO_GPUS, "#SBATCH --cpus-per-gpu=6\necho hi\n") == [(4, "info")]


@pytest.mark.parametrize(
    "line",
    [
        "if ! { [ -f a ] || [ -f b ]; }; then\n  touch a\nfi\n",
        "while ! { test -f a; }; do sleep 1; done\n",
        "x=1 && ! { false; }\n",
    ],
)
def test_a_negated_group_is_bash(line: str) -> None:
    assert found(SYNTAX, line) == []


def test_a_negated_group_keeps_its_commands() -> None:
    body = 'if ! { [ -f a ] || [ -f b ]; }; then\n  sbatch "$0"\n  srun x\nfi\n'
    assert [s for _, s in found(RESUBMIT, body)] == ["info"]
