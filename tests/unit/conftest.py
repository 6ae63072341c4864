"""Unit tests fake Slurm at the process seam (``_proc.runner``): the query backend is
pinned to the commands, so a pyslurm installed in the venv (and a SLURM_CONF left in the
shell) can never answer, or end the process from libslurm, in a test without a cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes import FakeSlurm


@pytest.fixture(autouse=True)
def _commands_backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from slurmkit.slurm import backend

    monkeypatch.setenv(backend.ENV, "commands")
    backend.choose(None)
    yield
    backend.choose(None)


@pytest.fixture(autouse=True)
def _slurm_default_message_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """No slurm.conf of the machine's: the re-check window is Slurm's default (2 x 10 s)."""
    from slurmkit.slurm import recheck

    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.setattr(recheck, "_CONF_PATHS", ())


@pytest.fixture
def fake_slurm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlurm]:
    """The one fake Slurm (tests/fakes/slurm.py) installed at ``_proc.runner``; ``sinfo
    --version`` is asked afresh, since each test's fake may answer another version."""
    from slurmkit import _proc
    from slurmkit.slurm import query

    fake = FakeSlurm()
    monkeypatch.setattr(_proc, "runner", fake)
    query.version.cache_clear()
    yield fake
    query.version.cache_clear()
