"""Unit tests fake Slurm at the process seam (``_proc.runner``): the query backend is
pinned to the commands, so a pyslurm installed in the venv (and a SLURM_CONF left in the
shell) can never answer, or end the process from libslurm, in a test without a cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _commands_backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from slurmkit.slurm import backend

    monkeypatch.setenv(backend.ENV, "commands")
    backend.choose(None)
    yield
    backend.choose(None)
