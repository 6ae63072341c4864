"""One line for a path the system refused (``slurmkit.files.refused``), used wherever an
OSError becomes the user's line: the system's reason, never Python's ``[Errno N]`` form."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from slurmkit.errors import EnvironmentProblem, UsageError
from slurmkit.files import refused
from slurmkit.train.state import TrainDir


def test_the_systems_reason_and_the_error_class_asked_for() -> None:
    exc = OSError(errno.EACCES, os.strerror(errno.EACCES), "/data/x")
    line = refused(exc, "read /data/x")
    assert isinstance(line, UsageError)
    assert str(line) == "cannot read /data/x: Permission denied"
    made = refused(OSError("no reason given"), "write /y", EnvironmentProblem)
    assert isinstance(made, EnvironmentProblem) and str(made) == "cannot write /y: no reason given"


def test_a_train_folder_that_cannot_be_looked_at_is_one_line(tmp_path: Path) -> None:
    """lstat of the folder fails (a name too long): the one line, said the one way."""
    train = TrainDir(tmp_path / ("x" * 300))
    with pytest.raises(UsageError, match=r"^cannot read .*: File name too long$"):
        train.owner()
