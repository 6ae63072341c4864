"""Submitting a rendered script: one ``sbatch --parsable`` through the Slurm layer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from slurmkit.errors import SlurmError
from slurmkit.slurm._exec import run_slurm


def sbatch_argv(script: Path, extra: Sequence[str] = ()) -> list[str]:
    """Extra sbatch options go before the script: after it they would be the script's arguments."""
    return ["sbatch", "--parsable", *extra, str(script)]


def submit(script: Path, extra: Sequence[str] = ()) -> str:
    """Submit and return the job id (``--parsable`` prints ``id`` or ``id;cluster``)."""
    argv = sbatch_argv(script, extra)
    result = run_slurm(argv)
    job_id = result.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        raise SlurmError(
            f"sbatch printed no job id: {result.stdout.strip()!r}", argv, 0, result.stderr
        )
    return job_id
