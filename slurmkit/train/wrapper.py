"""The array script of a train: the shipped ``train-wrapper`` template, rendered through the
template library so the kill-switch and sourcing logic exist in one place only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from slurmkit.templating import render_template
from slurmkit.train.state import TrainDir


def render(
    train: TrainDir, runs: int, header: Sequence[str], more: Mapping[str, object] | None = None
) -> str:
    """The wrapper for ``train``: its name as job name, ``header`` verbatim, absolute paths.

    Absolute paths: the job's working directory is wherever ``train start`` ran, and
    teammates may run ``train`` commands from elsewhere.
    """
    rendered = render_template(
        "train-wrapper",
        overrides={
            "job_name": train.name,
            "array_size": runs,
            "header": list(header),
            "target": str(train.current.absolute()),
            "kill_switch": str(train.kill_switch.absolute()),
            "save_switch": str(train.save_switch.absolute()),
            **(more or {}),
        },
    )
    return rendered.text
