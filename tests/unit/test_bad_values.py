"""Values that used to crash or pass silently: ``run --timeout nan|inf``, a malformed
``SLURM_TASKS_PER_NODE`` (issue 14, bad-input sweep)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from slurmkit.cli import cli
from slurmkit.errors import UsageError
from slurmkit.jobenv import slots
from slurmkit.jobenv.allocation import Allocation
from slurmkit.remote import command
from slurmkit.remote.base import RemoteOptions


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "0", "-1", "1e999"])
@pytest.mark.parametrize("option", ["--timeout", "--connect-timeout"])
def test_run_refuses_a_limit_that_is_not_positive_finite_seconds(option: str, value: str) -> None:
    code, out, err = run("run", option, value, "--via", "pdsh", "-w", "n1", "true")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("slurmkit: ") and option in err and "Traceback" not in err


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0])
def test_the_library_refuses_them_too(value: float) -> None:
    with pytest.raises(UsageError):
        RemoteOptions(timeout=value)
    with pytest.raises(UsageError):
        RemoteOptions(connect_timeout=value)
    if value:
        with pytest.raises(UsageError, match="finite"):
            command.wrap_script("true", "tok", time_limit=value)


def test_a_good_timeout_still_works() -> None:
    assert "timeout -k 5 3 " in command.wrap_script("true", "tok", time_limit=2.6)


JOB = {"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "n[1-2]"}


def _alloc(env: dict[str, str]) -> Allocation:
    return Allocation(hosts=("n1", "n2"), origin="environment", job_id="1", env=env)


@pytest.mark.parametrize("value", ["2(x", "abc", "2(x0)", "-1", "2,,1", "1(x2"])
def test_a_malformed_tasks_per_node_is_an_error_naming_it(value: str) -> None:
    with pytest.raises(UsageError, match=re.escape(f"SLURM_TASKS_PER_NODE={value!r}")):
        slots.resolve_slots(_alloc({**JOB, "SLURM_TASKS_PER_NODE": value}))
    code, out, err = run(
        "hostfile", env={**JOB, "SLURM_TASKS_PER_NODE": value, "PATH": "/nonexistent"}
    )
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "SLURM_TASKS_PER_NODE" in err and repr(value) in err


@pytest.mark.parametrize("var", ["SLURM_NTASKS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"])
def test_other_malformed_count_variables_are_errors(var: str) -> None:
    wanted = "cpus" if var == "SLURM_JOB_CPUS_PER_NODE" else "auto"
    with pytest.raises(UsageError, match=var):
        slots.resolve_slots(_alloc({**JOB, var: "x4"}), wanted)


def test_a_well_formed_list_for_other_nodes_is_an_error_too() -> None:
    """Issue 28: skipping it ended in 1 slot per node, exit 0 (the wrong process count)."""
    with pytest.raises(UsageError, match="describes 1 nodes, the allocation has 2"):
        slots.resolve_slots(_alloc({**JOB, "SLURM_TASKS_PER_NODE": "3"}))
