"""Node reasons read exactly, and read again right before the update (issue 14, Low).

* A reason containing `` Comment=`` or ``Extra=`` was cut at that word, so
  ``Kill task failed Comment=see ticket`` matched ``^Kill task failed$`` and
  the node was returned.
* A two-line reason broke every ``undrain`` and ``nodes drained`` run.
* A node an admin re-drained for another reason between the check and the
  batched update was still returned.

The text of ``scontrol show node`` below is 22.05's, as recorded on the
sandbox: the stamp follows the reason's first line, later lines are indented
by ten spaces, ``Comment=``/``Extra=`` fields have lines of their own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmkit.drained import drained
from slurmkit.slurm import query
from slurmkit.slurm.parse_records import parse_scontrol_nodes
from slurmkit.slurm.parse_text import DELIMITER, parse_sinfo_reasons
from slurmkit.undrain import undrain
from tests.fakes import FakeSlurm
from tests.unit.nodelog_lines import node_actions
from tests.unit.test_undrain_flow import Cluster, _drained, _opts, _yes

STAMP = "[root@2026-11-25T18:51:48]"
RECORDED = f"""NodeName=node-4 Arch=x86_64 CoresPerSocket=2 
   CPUAlloc=0 CPUEfctv=8 CPUTot=8 CPULoad=0.88
   State=IDLE+DRAIN ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Reason=Kill task failed Comment=x Extra=y {STAMP}
          second line Comment=z
   Comment=real comment
   Extra=real extra

NodeName=node-5 Arch=x86_64 CoresPerSocket=2 
   State=IDLE+DRAIN ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Reason=Kill task failed {STAMP}
"""  # noqa: W291 (scontrol's trailing spaces)


def test_multi_line_show_node_keeps_the_whole_reason_and_the_real_fields() -> None:
    four, five = parse_scontrol_nodes(RECORDED)
    assert four.reason == "Kill task failed Comment=x Extra=y\nsecond line Comment=z"
    assert four.reason_user == "root" and four.reason_time is not None
    assert four.raw["Comment"] == "real comment" and four.raw["Extra"] == "real extra"
    assert five.reason == "Kill task failed" and "DRAIN" in five.flags


def test_an_unindented_reason_line_does_not_break_the_parse() -> None:
    """A raw newline printed by a Slurm that does not indent it: still that node's reason."""
    text = RECORDED.replace("          second line", "second line")
    four, five = parse_scontrol_nodes(text)
    assert four.reason == "Kill task failed Comment=x Extra=y\nsecond line Comment=z"
    assert five.reason == "Kill task failed"


def test_undrain_reads_nodes_in_the_unambiguous_multi_line_form() -> None:
    assert "--oneliner" not in query.nodes_argv("n1", oneliner=False)
    assert "--oneliner" in query.nodes_argv("n1")  # everyone else's default is unchanged


@pytest.fixture
def fake(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cluster:
    cluster = Cluster(fake_slurm)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return cluster


@pytest.mark.parametrize(
    "reason",
    [
        "Kill task failed Comment=see ticket 4411",
        "Kill task failed Extra=disk",
        "Kill task failed\nECC errors on GPU 3: do not return",
    ],
)
def test_a_reason_with_key_words_or_two_lines_is_not_kill_task_failed(
    fake: Cluster, tmp_path: Path, reason: str
) -> None:
    _drained(fake, 2)
    fake.nodes["node-2"] = ("IDLE+DRAIN", reason)
    report = undrain(_opts(tmp_path), _yes)
    assert [o.node for o in report.outcomes] == ["node-1"] and report.exit_code == 0
    assert fake.slurm_calls("update")[0][2] == "nodename=node-1"
    assert fake.nodes["node-2"] == ("IDLE+DRAIN", reason)


@pytest.mark.parametrize("raw", [False, True])
def test_a_two_line_reason_breaks_no_run(fake: Cluster, tmp_path: Path, raw: bool) -> None:
    _drained(fake, 3)
    fake.nodes["node-3"] = ("IDLE+DRAIN", "bad PSU\nreplace before use")
    fake.raw_newlines = raw
    report = undrain(_opts(tmp_path), _yes)
    assert {o.node for o in report.outcomes if o.returned} == {"node-1", "node-2"}


def test_nodes_drained_with_a_two_line_reason() -> None:
    text = "".join(
        DELIMITER.join(row) + "\n"
        for row in [
            ["bad PSU\nreplace before use", "root", "2026-11-21T00:04:10", "drained", "node-3"],
            ["Kill task failed", "root", "2026-11-21T00:04:10", "drained", "node-[1-2]"],
        ]
    )
    first, second = parse_sinfo_reasons(text)
    assert first.reason == "bad PSU\nreplace before use" and first.nodelist == "node-3"
    assert second.reason == "Kill task failed" and second.nodelist == "node-[1-2]"


def test_cli_nodes_drained_with_a_two_line_reason(fake_slurm: FakeSlurm, run_cli) -> None:
    rows = [["bad PSU\nreplace", "root", "2026-11-21T00:04:10", "drained", "node-3"]]
    fake_slurm.on(["sinfo", "**"], "".join(DELIMITER.join(r) + "\n" for r in rows))
    assert [g.reason for g in drained()] == ["bad PSU\nreplace"]
    result = run_cli("nodes", "drained", exit_code=0)
    assert "bad PSU" in result.stdout and "node-3" in result.stdout


def test_a_node_re_drained_for_another_reason_meanwhile_is_left_alone(
    fake: Cluster, tmp_path: Path
) -> None:
    """The check takes seconds (--kill: the grace too); an admin drains node-2 for a disk
    in that time. The reasons are read again in one call right before the update."""
    _drained(fake, 3)
    pdsh = fake._pdsh

    def admin_acts_during_the_check(argv: list[str]):
        fake.nodes["node-2"] = ("IDLE+DRAIN", "disk failing, do not use")
        return pdsh(argv)

    fake._pdsh = admin_acts_during_the_check  # type: ignore[method-assign]
    log = tmp_path / "actions.log"
    report = undrain(_opts(tmp_path, log=log), _yes)
    by_node = {o.node: o for o in report.outcomes}
    assert by_node["node-1"].returned and by_node["node-3"].returned
    two = by_node["node-2"]
    assert not two.returned and two.action == "skipped"
    assert two.why == "reason changed since the check (now: 'disk failing, do not use'): left alone"
    assert fake.slurm_calls("update")[0][2] == "nodename=node-[1,3]"
    assert fake.nodes["node-2"] == ("IDLE+DRAIN", "disk failing, do not use")
    assert report.exit_code == 1
    assert ["node-2", "skip"] in node_actions(log.read_text().splitlines())
    assert report.slurm_calls == 5  # one more call, whatever the node count


def test_a_node_undrained_by_hand_meanwhile_is_not_updated(fake: Cluster, tmp_path: Path) -> None:
    _drained(fake, 2)
    pdsh = fake._pdsh

    def admin_returns_node_1(argv: list[str]):
        fake.nodes["node-1"] = ("IDLE", None)
        return pdsh(argv)

    fake._pdsh = admin_returns_node_1  # type: ignore[method-assign]
    report = undrain(_opts(tmp_path), _yes)
    one = next(o for o in report.outcomes if o.node == "node-1")
    assert one.action == "skipped" and "no longer drained" in one.why
    assert fake.slurm_calls("update")[0][2] == "nodename=node-2"


def test_a_bare_line_after_a_oneliner_record_is_never_dropped() -> None:
    text = (
        f"NodeName=n1 State=IDLE+DRAIN Reason=Kill task failed {STAMP} Comment=c\n"
        "not really: bad PSU\n"
    )
    (node,) = parse_scontrol_nodes(text)
    assert node.reason != "Kill task failed"
