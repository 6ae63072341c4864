"""One definition per option family (issue 15 item 4), walked over the whole CLI.

A family restated by hand drifts (undrain had no --connect-timeout, node resume restated
undrain's --via/--timeout/--lock-wait as literals): these tests find every command that
takes a family's option and check that its spelling and default are the library's.
"""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest

from slurmkit import checkjob, remote
from slurmkit.node.change import ChangeOptions
from slurmkit.nodechange.leftovers import DEFAULT_CHECK_TIMEOUT
from slurmkit.nodechange.leftovers import VIA_CHOICES as CHECK_VIA
from slurmkit.pyspy.collect import DEFAULT_TIMEOUT as PYSPY_TIMEOUT
from slurmkit.pyspy.collect import VIA as PYSPY_VIA
from slurmkit.undrain.flow import UndrainOptions


def _commands(
    group: click.Group, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))
        elif command is not None:
            yield " ".join((*prefix, name)), command


def _options() -> dict[str, dict[str, click.Option]]:
    from slurmkit.cli import cli

    return {
        path: {o.name: o for o in command.params if isinstance(o, click.Option) and o.name}
        for path, command in _commands(cli)
    }


def test_the_ssh_family_is_the_same_everywhere_undrain_included() -> None:
    found = {path: opts for path, opts in _options().items() if "fanout" in opts}
    assert {"run", "undrain", "pyspy", "node resume"} <= set(found)
    for path, opts in found.items():
        assert opts["fanout"].default == remote.DEFAULT_FANOUT, path
        assert opts["connect_timeout"].default == remote.DEFAULT_CONNECT_TIMEOUT, path
        assert {"insecure", "ssh_config"} <= set(opts), path


@pytest.mark.parametrize(
    ("path", "choices", "timeout"),
    [
        ("run", remote.VIA_CHOICES, remote.DEFAULT_TIMEOUT),
        ("undrain", CHECK_VIA, DEFAULT_CHECK_TIMEOUT),
        ("node resume", CHECK_VIA, DEFAULT_CHECK_TIMEOUT),
        ("pyspy", PYSPY_VIA, PYSPY_TIMEOUT),
    ],
)
def test_via_and_timeout_come_from_the_library(path: str, choices, timeout: float) -> None:
    opts = _options()[path]
    assert tuple(opts["via"].type.choices) == tuple(choices)
    assert opts["via"].default == choices[0]
    assert opts["timeout"].default == timeout


def test_lock_wait_defaults_are_the_libraries() -> None:
    opts = _options()
    assert opts["undrain"]["lock_wait"].default == UndrainOptions.lock_wait
    for verb in ("drain", "resume", "reboot"):
        assert opts[f"node {verb}"]["lock_wait"].default == ChangeOptions.lock_wait


def test_check_job_folders_default_to_the_librarys() -> None:
    opts = _options()
    found = {path: o for path, o in opts.items() if "work_dir" in o or "check_dir" in o}
    assert {"cpus check", "faulty scan", "node reboot"} <= set(found)
    for path, o in found.items():
        option = o.get("work_dir") or o["check_dir"]
        assert option.default == checkjob.DEFAULT_WORK_DIR, path


def test_json_dry_run_and_yes_are_spelled_one_way() -> None:
    for path, opts in _options().items():
        if "as_json" in opts:
            assert opts["as_json"].opts == ["--json"] and opts["as_json"].is_flag, path
        if "dry_run" in opts:
            assert opts["dry_run"].opts == ["--dry-run"] and opts["dry_run"].is_flag, path
        if "yes" in opts:
            assert opts["yes"].opts == ["-y", "--yes"] and opts["yes"].is_flag, path


def test_undrain_takes_connect_timeout_and_checks_it(run_cli, fake_slurm) -> None:
    result = run_cli("undrain", "--connect-timeout", "0", "--dry-run", exit_code=2)
    assert "--connect-timeout" in result.stderr and len(result.stderr.splitlines()) == 1
    assert fake_slurm.calls == []
