"""run_slurm/classify: exit code *and* stderr decide, and every failure gets one clear type.

The recorded error fixtures come from the real clusters; the synthetic
stderr strings were captured from the 22.05 client of this machine, which has
no controller to talk to.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

import pytest
from fixtures_path import all_cases, entry, read, stderr

from slurmkit import _proc
from slurmkit.errors import (
    ControllerUnreachable,
    NotFound,
    PermissionDenied,
    SlurmError,
    SlurmNotInstalled,
)
from slurmkit.slurm import _exec
from tests.fakes import Call, FakeSlurm


def completed(argv: list[str], rc: int, stdout: str = "", stderr_text: str = "") -> _proc.Completed:
    return _proc.Completed(tuple(argv), rc, stdout, stderr_text, 0.01)


@pytest.fixture
def answer(fake_slurm: FakeSlurm) -> Callable[[_proc.Completed], list[Call]]:
    """Make every Slurm call return ``result`` (the shared fake Slurm); returns its calls."""

    def install(result: _proc.Completed) -> list[Call]:
        fake_slurm.on(["**"], answer=result)
        return fake_slurm.log

    return install


def recorded(version: str, scenario: str, name: str) -> _proc.Completed:
    meta = entry(version, scenario, name)
    return completed(
        shlex.split(meta["command"]),
        meta["exit_code"],
        read(version, scenario, name),
        stderr(version, scenario, name),
    )


@pytest.mark.parametrize(("version", "scenario"), all_cases())
def test_recorded_hold_of_unknown_job_is_not_found(version: str, scenario: str, answer) -> None:
    result = recorded(version, scenario, "err_scontrol_hold_999999.txt")
    answer(result)
    with pytest.raises(NotFound, match="Invalid job id specified") as caught:
        _exec.run_slurm(list(result.argv))
    assert caught.value.returncode == 1 and caught.value.argv == ["scontrol", "hold", "999999"]


@pytest.mark.parametrize(("version", "scenario"), all_cases())
def test_recorded_update_of_unknown_node_is_not_found(version: str, scenario: str, answer) -> None:
    result = recorded(version, scenario, "err_scontrol_update_unknown_node.txt")
    answer(result)
    with pytest.raises(NotFound, match="scontrol: slurm_update error: Invalid node name specified"):
        _exec.run_slurm(list(result.argv))


def test_controller_down() -> None:
    result = completed(
        ["squeue"],
        1,
        stderr_text="slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n",
    )
    error = _exec.classify(result)
    assert isinstance(error, ControllerUnreachable)
    assert str(error) == (
        "squeue: cannot reach slurmctld: "
        "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
    )


def test_accounting_database_down_names_slurmdbd() -> None:
    stderr_text = (
        "sacct: error: slurm_persist_conn_open_without_init: failed to open persistent connection "
        "to host:127.0.0.1:19019: Connection refused\n"
        "sacct: error: Sending PersistInit msg: Connection refused\n"
        "sacct: error: Problem talking to the database: Connection refused\n"
    )
    error = _exec.classify(completed(["sacct", "-X"], 1, stderr_text=stderr_text))
    assert isinstance(error, ControllerUnreachable)
    assert "cannot reach slurmdbd (accounting)" in str(error)


def test_missing_configuration_says_so_instead_of_the_first_dns_error() -> None:
    stderr_text = (
        "sinfo: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
        "sinfo: error: fetch_config: DNS SRV lookup failed\n"
        "sinfo: error: _establish_config_source: failed to fetch config\n"
        "sinfo: fatal: Could not establish a configuration source\n"
    )
    error = _exec.classify(completed(["sinfo"], 1, stderr_text=stderr_text))
    assert isinstance(error, ControllerUnreachable)
    assert "no slurm.conf" in str(error) and "SLURM_CONF" in str(error)
    assert _exec.first_message(stderr_text) == "Could not establish a configuration source"


def test_permission_denied() -> None:
    result = completed(
        ["scontrol", "update", "nodename=node-1", "state=drain", "reason=x"],
        1,
        stderr_text="slurm_update error: Access/permission denied\n",
    )
    error = _exec.classify(result)
    assert isinstance(error, PermissionDenied)
    assert str(error) == "scontrol: permission denied: slurm_update error: Access/permission denied"


def test_unknown_node_reported_on_stdout_only() -> None:
    """``scontrol show node node-9`` prints its failure on stdout and exits 1."""
    error = _exec.classify(
        completed(["scontrol", "show", "node", "node-9"], 1, "Node node-9 not found\n")
    )
    assert isinstance(error, NotFound) and str(error) == "scontrol: Node node-9 not found"


def test_error_on_stderr_with_exit_zero_fails(answer) -> None:
    stderr_text = (
        "scontrol: error: _parse_single_range: Invalid range: `5-1'\nInvalid hostlist: n[5-1]\n"
    )
    answer(completed(["scontrol", "show", "hostnames", "n[5-1]"], 0, "", stderr_text))
    with pytest.raises(
        SlurmError, match=r"scontrol failed: _parse_single_range: Invalid range"
    ) as caught:
        _exec.run_slurm(["scontrol", "show", "hostnames", "n[5-1]"])
    assert type(caught.value) is SlurmError and caught.value.returncode == 0


def test_unrecognised_option_is_a_plain_slurm_error(answer) -> None:
    """What 22.05 says to ``scontrol show job --json``, as recorded."""
    answer(recorded("22.05", "03_jobs", "scontrol_show_job_json_failed.txt"))
    with pytest.raises(
        SlurmError, match=r"scontrol failed \(exit 1\): .*unrecognized option '--json'"
    ):
        _exec.run_slurm(["scontrol", "show", "job", "--json", "2"])


def test_check_false_returns_the_failed_result(answer) -> None:
    answer(completed(["scontrol", "hold", "1"], 1, stderr_text="Invalid job id specified\n"))
    result = _exec.run_slurm(["scontrol", "hold", "1"], check=False)
    assert result.returncode == 1 and _exec.failed(result)


def test_program_not_on_path_is_slurm_not_installed() -> None:
    with pytest.raises(SlurmNotInstalled, match="'slurmkit-no-such-squeue' not found on PATH"):
        _exec.run_slurm(["slurmkit-no-such-squeue", "--version"])


def test_timeout_means_controller_unreachable(answer) -> None:
    answer(_proc.Completed(("squeue",), -9, "", "", 5.0, timed_out=True))
    with pytest.raises(ControllerUnreachable, match="did not answer within 5 s"):
        _exec.run_slurm(["squeue"], timeout=5)


def test_user_format_variables_never_reach_slurm(answer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SQUEUE_FORMAT", "%i")
    monkeypatch.setenv("SLURM_TIME_FORMAT", "relative")
    calls = answer(completed(["squeue"], 0, ""))
    before = len(_exec.call_log)
    _exec.run_slurm(["squeue", "-h"], env={"SLURM_BITSTR_LEN": "0"})
    (call,) = calls
    assert call.env is not None and "SQUEUE_FORMAT" not in call.env
    assert call.env["SLURM_TIME_FORMAT"] == "standard"
    assert call.env["SLURM_BITSTR_LEN"] == "0"
    assert _exec.call_log[before:] == [("squeue", "-h")]


def test_found_records_on_stdout_do_not_hide_the_missing_one() -> None:
    stdout = "NodeName=node-1 State=DOWN Reason=error: psu not found [root@2026-11-21T00:00:00]\n"
    stdout += "Node node-9 not found\n"
    error = _exec.classify(completed(["scontrol", "show", "node", "node-[1,9]"], 1, stdout))
    assert isinstance(error, NotFound) and str(error) == "scontrol: Node node-9 not found"


def test_the_public_runner_is_the_layers_own_and_counts_every_call(answer) -> None:
    """slurmkit.slurm.commands, the home of the runner outside the Slurm layer, is _exec's
    runner itself (one classifier, one call log), not a copy; calls_made counts what ran,
    failures included, which is what undrain reports as its Slurm calls."""
    from slurmkit.slurm import commands

    assert commands.run_slurm is _exec.run_slurm
    assert commands.first_message is _exec.first_message
    answer(completed(["sinfo"], 1, "", "sinfo: error: Unable to contact slurm controller\n"))
    before = commands.calls_made()
    commands.run_slurm(["sinfo", "-h"], check=False)
    with pytest.raises(ControllerUnreachable):
        commands.run_slurm(["sinfo", "-h"])
    assert commands.calls_made() - before == 2 == len(_exec.call_log) - before
