"""``nodes drained`` at the argv seam: one sinfo -R call, filtered by reason, folded per reason."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from slurmkit.cli._group import RootGroup
from slurmkit.cli.nodes import nodes_group
from slurmkit.drained import drained
from slurmkit.errors import UsageError
from slurmkit.slurm import query
from slurmkit.slurm.parse_text import DELIMITER
from tests.fakes import FakeSlurm

ROWS = [
    ["Kill task failed", "root", "2026-11-21T00:04:10", "drained", "node-[2,7-9]"],
    ["Not responding", "slurm", "2026-11-21T00:04:10", "down*", "node-3"],
    ["gpu ECC error", "root", "2026-11-21T00:04:10", "draining", "node-4"],
]


@pytest.fixture
def sinfo(fake_slurm: FakeSlurm) -> FakeSlurm:
    """``sinfo -R`` (slurmkit's format) lists ROWS; nothing else may run."""
    out = "".join(DELIMITER.join(r) + "\n" for r in ROWS)
    return fake_slurm.on(query.drain_reasons_argv(), out)


def _cli(*args: str) -> tuple[int, str, str]:
    @click.group(
        cls=RootGroup, lazy_subcommands={"drained": nodes_group.lazy_subcommands["drained"]}
    )
    def root() -> None:
        pass

    result = CliRunner().invoke(root, ["drained", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_one_call_all_reasons(sinfo: FakeSlurm) -> None:
    groups = drained()
    assert len(sinfo.calls) == 1
    assert [(g.reason, g.nodes, g.count) for g in groups] == [
        ("Kill task failed", "node-[2,7-9]", 4),
        ("Not responding", "node-3", 1),
        ("gpu ECC error", "node-4", 1),
    ]
    assert groups[1].user == "slurm" and groups[1].state == "down*"


def test_reason_filter_is_a_regex_on_the_full_text(sinfo: FakeSlurm) -> None:
    assert [g.nodes for g in drained("^Kill task")] == ["node-[2,7-9]"]
    assert drained("node") == []  # node names are not reasons
    with pytest.raises(UsageError):
        drained("(")


def test_table_and_json(sinfo: FakeSlurm) -> None:
    code, out, _ = _cli()
    assert code == 0
    header = ["nodes", "count", "reason", "user", "time", "state"]
    assert out.splitlines()[0].split() == header
    assert "node-[2,7-9]" in out
    code, out, _ = _cli("--json", "--reason", "ECC")
    assert code == 0
    (only,) = json.loads(out)
    assert only["nodes"] == "node-4" and only["state"] == "draining"
    assert only["time"].startswith("2026-11-21T00:04:10")


def test_errors_are_one_line(sinfo: FakeSlurm) -> None:
    code, _, err = _cli("--reason", "(")
    assert code == 2 and "not a valid regular expression" in err
    sinfo.on(
        query.drain_reasons_argv(),
        rc=1,
        stderr="sinfo: error: Unable to contact slurm controller (connect failure)\n",
    )
    code, _, err = _cli()
    assert code == 2 and err.startswith("slurmkit: sinfo: cannot reach slurmctld")
