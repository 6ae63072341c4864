"""The test doubles shared by the unit tests (one of each, not one per test file).

:class:`FakeSlurm` stands in for Slurm's commands at the one process seam,
``slurmkit._proc.runner``; ``tests/unit/conftest.py`` installs it as the ``fake_slurm``
fixture.
"""

from tests.fakes.slurm import Call, FakeSlurm, Reply

__all__ = ["Call", "FakeSlurm", "Reply"]
