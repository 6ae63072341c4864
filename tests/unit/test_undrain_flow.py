"""The undrain flow and CLI at the argv seam: Slurm calls, remote checks, faults, safety.

The shared fake Slurm (tests/fakes), with ``Cluster`` below as its one route, plays
slurmctld (``scontrol``/``squeue``) and pdsh (the remote checks and kills), records every
call and refuses anything else.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from slurmkit import locks
from slurmkit.hostlist import expand
from slurmkit.remote import RemoteOptions
from slurmkit.slurm import _exec
from slurmkit.undrain import UndrainOptions, undrain
from tests.fakes import FakeSlurm
from tests.unit.nodelog_lines import fields, node_actions

TOKEN = re.compile(r"__slurmkit_end_[0-9a-f]{16}__")
UNREACHABLE_CTLD = "scontrol: error: Unable to contact slurm controller (connect failure)\n"


@dataclass
class Cluster:
    """What slurmctld and the nodes hold, played for the shared fake Slurm: nodes with states
    and reasons, leftovers per node, and switches for faults. Every command the fake is given
    is answered by ``_answer``: slurmctld (``scontrol``/``squeue``) and pdsh (the remote checks
    and kills); anything else fails the test."""

    slurm: FakeSlurm
    nodes: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    leftovers: dict[str, list[str]] = field(default_factory=dict)
    jobs: list[tuple[str, str]] = field(default_factory=list)
    unreachable: set[str] = field(default_factory=set)
    stubborn: set[str] = field(default_factory=set)
    stat: str = "S"  # ps STAT of the leftovers; "D" for uninterruptible I/O
    ctld_down_after_select: bool = False
    raw_newlines: bool = False  # print a reason's later lines unindented (a misbehaving Slurm)

    def __post_init__(self) -> None:
        self.slurm.on(["**"], answer=lambda call: self._answer(list(call.argv)))

    @property
    def calls(self) -> list[list[str]]:
        return [list(argv) for argv in self.slurm.calls]

    def _answer(self, argv: list[str]) -> tuple[int, str, str]:
        if argv[:4] == ["scontrol", "--all", "--oneliner", "show"] or argv[:3] == [
            "scontrol",
            "--all",
            "show",
        ]:
            if self.ctld_down_after_select and self.slurm_calls("update"):
                return 1, "", UNREACHABLE_CTLD
            oneliner = "--oneliner" in argv
            names = argv[-1] if argv[-1] != "node" else None
            return self._show(names, oneliner)
        if argv[0] == "squeue":
            return 0, self._squeue(argv), ""
        if argv[:2] == ["scontrol", "update"]:
            if self.ctld_down_after_select:
                return 1, "", UNREACHABLE_CTLD
            return self._update(argv)
        if argv[0] == "pdsh":
            return self._pdsh(argv)
        raise AssertionError(f"unexpected command: {shlex.join(argv)}")

    def slurm_calls(self, word: str | None = None) -> list[list[str]]:
        slurm = [c for c in self.calls if c[0] in ("scontrol", "squeue", "sinfo")]
        return [c for c in slurm if word is None or word in c]

    def _show(self, names: str | None, oneliner: bool = True) -> tuple[int, str, str]:
        """22.05's text: the stamp after the reason's first line, later lines joined by
        eight spaces (--oneliner) or on lines indented by ten; raw_newlines breaks that."""
        wanted = expand(names) if names else list(self.nodes)
        unknown = [n for n in wanted if n not in self.nodes]
        if unknown:
            return 1, f"Node {unknown[0]} not found\n", ""
        records = []
        for name in wanted:
            state, reason = self.nodes[name]
            fields = [f"NodeName={name} Arch=x86_64", f"State={state} CPUTot=8"]
            if reason:
                first, *more = reason.split("\n")
                joiner = "\n" if self.raw_newlines else (" " * 8 if oneliner else "\n" + " " * 10)
                fields.append(
                    "".join(
                        [f"Reason={first} [root@2026-11-21T00:03:40]", *(joiner + m for m in more)]
                    )
                )
            records.append((" " if oneliner else "\n   ").join(fields))
        return 0, ("\n" if oneliner else "\n\n").join(records) + "\n", ""

    def _squeue(self, argv: list[str]) -> str:
        from slurmkit.slurm.parse_text import DELIMITER, SQUEUE_COLUMNS

        rows = []
        for job_id, nodelist in self.jobs:
            values = {"job_id": job_id, "state": "RUNNING", "nodelist": nodelist}
            rows.append(DELIMITER.join(values.get(n, "N/A") for n, _ in SQUEUE_COLUMNS))
        return "".join(r + "\n" for r in rows)

    def _update(self, argv: list[str]) -> tuple[int, str, str]:
        names = expand(argv[2].removeprefix("nodename="))
        for name in names:
            state, _ = self.nodes[name]
            self.nodes[name] = (state.replace("+DRAIN", ""), None)
        return 0, "", ""

    def _pdsh(self, argv: list[str]) -> tuple[int, str, str]:
        script = argv[-1]
        check_token = re.search(r"T=(__slurmkit_end_[0-9a-f]{16}__)", script)
        assert check_token is not None
        end = next(t for t in TOKEN.findall(script) if t != check_token[1])
        out, err = [], []
        for node in expand(argv[argv.index("-w") + 1]):
            if node in self.unreachable:
                err += [
                    f"{node}: ssh: connect to host {node} port 22: Connection refused",
                    f"pdsh@admin: {node}: ssh exited with exit code 255",
                ]
                continue
            body = (
                self._kill(node, check_token[1])
                if "signal TERM" in script
                else (self._check(node, check_token[1]))
            )
            out += [f"{node}: {line}" for line in body] + [f"{node}: {end} rc=0 t0=1 t1=2"]
        return 0, "".join(line + "\n" for line in out), "".join(line + "\n" for line in err)

    def _check(self, node: str, t: str) -> list[str]:
        ps = [
            "      1       0       0     0 Ss   root     /sbin/init",
            "    100       1     100     0 Ss   root     sh -c check",
        ]
        ps += [
            f"    {300 + i}       1     {300 + i}  2001 {self.stat} alice    {cmd}"
            for i, cmd in enumerate(self.leftovers.get(node, []))
        ]
        pids = [int(line.split()[0]) for line in ps]
        return [
            f"{t} self 100",
            f"{t} host {node}",
            f"{t} euid 0",
            f"{t} ps",
            *ps,
            f"{t} ps-end 0",
            f"{t} cgroup",
            f"{t} cgroup-end",
            f"{t} environ",  # the leftovers are a job's: SLURM_JOB_ID in their environment
            *[f"/proc/{pid}/environ:SLURM_JOB_ID=41" for pid in pids if pid >= 300],
            f"{t} environ-end",
            f"{t} start",
            *[f"{pid} {5000 + pid}" for pid in pids],
            f"{t} start-end",
            f"{t} gpu-absent",
            f"{t} done",
        ]

    def _kill(self, node: str, t: str) -> list[str]:
        sent = [f"{t} sent TERM {300 + i}" for i in range(len(self.leftovers.get(node, [])))]
        if node not in self.stubborn:
            self.leftovers.pop(node, None)
        return [*sent, f"{t} done"]


@pytest.fixture
def cluster(
    fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Cluster]:
    fake = Cluster(fake_slurm)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    yield fake


def _drained(fake: Cluster, n: int, reason: str = "Kill task failed") -> list[str]:
    names = [f"node-{i}" for i in range(1, n + 1)]
    fake.nodes.update({name: ("IDLE+DRAIN", reason) for name in names})
    return names


def _opts(tmp_path: Path, **kw) -> UndrainOptions:
    kw.setdefault("remote", RemoteOptions(timeout=5, notify=lambda _: None))
    kw.setdefault("lock", tmp_path / "lock")
    return UndrainOptions(lock_wait=0, **kw)


def _yes(plan) -> bool:
    return True


@pytest.mark.parametrize("count", [2, 40])
def test_slurm_calls_do_not_grow_with_node_count(
    cluster: Cluster, tmp_path: Path, count: int
) -> None:
    names = _drained(cluster, count)
    before = len(_exec.call_log)
    report = undrain(_opts(tmp_path), _yes)
    assert report.exit_code == 0
    assert all(o.returned for o in report.outcomes) and len(report.outcomes) == count
    # show, squeue, show again right before the update (reasons unchanged?), update, read-back
    assert report.slurm_calls == len(_exec.call_log) - before == 5
    kinds = [c[:3] for c in cluster.slurm_calls()]
    show, squeue, update = (
        ["scontrol", "--all", "show"],
        ["squeue", "--all", "--noheader"],
        [
            "scontrol",
            "update",
            f"nodename=node-[1-{count}]",
        ],
    )
    assert kinds == [show, squeue, show, update, show]
    (update,) = cluster.slurm_calls("update")
    assert update == ["scontrol", "update", f"nodename=node-[1-{count}]", "state=undrain"]
    assert len([c for c in cluster.calls if c[0] == "pdsh"]) == 1
    assert {cluster.nodes[n][0] for n in names} == {"IDLE"}


def test_only_matching_reasons_free_nodes_return(cluster: Cluster, tmp_path: Path) -> None:
    cluster.nodes.update(
        {
            "node-1": ("IDLE", None),
            "node-2": ("IDLE+DRAIN", "Kill task failed"),
            "node-3": ("MIXED+DRAIN", "Kill task failed"),
            "node-4": ("IDLE+DRAIN", "gpu ECC error"),
            "node-5": ("DOWN+DRAIN", "Kill task failed"),
            "node-6": ("IDLE+DRAIN", "Kill task failed"),
        }
    )
    cluster.jobs = [("77", "node-6")]
    report = undrain(_opts(tmp_path), _yes)
    actions = {o.node: o.action_text for o in report.outcomes}
    assert actions["node-2"] == "returned"
    assert "jobs still running" in actions["node-3"]
    assert "DOWN" in actions["node-5"]
    assert actions["node-6"] == "skipped: job 77 on the node"
    assert "node-4" not in actions and "node-1" not in actions
    squeue = next(c for c in cluster.calls if c[0] == "squeue")
    assert "--nodelist=node-[2,6]" in squeue  # only the candidates, in one call
    assert (
        "--states=RUNNING,SUSPENDED,COMPLETING,CONFIGURING,STOPPED,SIGNALING,STAGE_OUT,RESIZING"
        in squeue
    )
    assert report.exit_code == 1


def test_leftovers_skip_without_kill_and_are_ended_with_it(
    cluster: Cluster, tmp_path: Path
) -> None:
    _drained(cluster, 2)
    cluster.leftovers["node-2"] = ["sleep 600"]
    report = undrain(_opts(tmp_path), _yes)
    by_node = {o.node: o for o in report.outcomes}
    assert by_node["node-1"].returned
    assert not by_node["node-2"].returned and "--kill" in by_node["node-2"].why
    assert "sleep 600" in by_node["node-2"].found
    cluster.nodes["node-1"] = ("IDLE+DRAIN", "Kill task failed")
    report = undrain(_opts(tmp_path, kill=True, grace=1), _yes)
    node2 = next(o for o in report.outcomes if o.node == "node-2")
    assert node2.returned and node2.killed == ["TERM 300"]
    kill_call = [c for c in cluster.calls if c[0] == "pdsh" and "signal TERM" in c[-1]]
    assert len(kill_call) == 1 and "-w" in kill_call[0]
    assert kill_call[0][kill_call[0].index("-w") + 1] == "node-2"  # only where needed


def test_leftovers_surviving_kill_keep_the_node_out(cluster: Cluster, tmp_path: Path) -> None:
    _drained(cluster, 1)
    cluster.leftovers["node-1"] = ["unkillable"]
    cluster.stubborn.add("node-1")
    report = undrain(_opts(tmp_path, kill=True, grace=0), _yes)
    (o,) = report.outcomes
    assert not o.returned and o.action == "skipped" and "killed TERM 300" in o.found
    assert o.why == "leftovers survived SIGKILL"
    assert not cluster.slurm_calls("update")
    assert report.exit_code == 1


def test_leftovers_in_uninterruptible_io_are_named_with_what_to_do(
    cluster: Cluster, tmp_path: Path
) -> None:
    _drained(cluster, 1)
    cluster.leftovers["node-1"] = ["python train.py"]
    cluster.stubborn.add("node-1")
    cluster.stat = "D"
    dry = undrain(_opts(tmp_path, dry_run=True), _yes).outcomes[0]
    assert "300 alice python train.py (job 41) [D: in uninterruptible I/O]" in dry.found
    (o,) = undrain(_opts(tmp_path, kill=True, grace=0), _yes).outcomes
    assert o.why.startswith("leftovers survived SIGKILL: 1 in state D (blocked in the kernel")
    assert "reboot" in o.why


def test_unreachable_node_is_unknown_and_others_proceed(cluster: Cluster, tmp_path: Path) -> None:
    _drained(cluster, 3)
    cluster.unreachable.add("node-2")
    report = undrain(_opts(tmp_path), _yes)
    by_node = {o.node: o for o in report.outcomes}
    assert by_node["node-2"].found.startswith("unknown: check unreachable")
    assert by_node["node-2"].action == "skipped"
    assert by_node["node-1"].returned and by_node["node-3"].returned
    assert cluster.slurm_calls("update")[0][2] == "nodename=node-[1,3]"
    assert cluster.nodes["node-2"] == ("IDLE+DRAIN", "Kill task failed")


def test_dry_run_changes_nothing(cluster: Cluster, tmp_path: Path) -> None:
    _drained(cluster, 2)
    cluster.leftovers["node-2"] = ["sleep 600"]
    log = tmp_path / "actions.log"
    report = undrain(_opts(tmp_path, dry_run=True, kill=True, log=log), _yes)
    assert [o.action for o in report.outcomes] == [
        "would return",
        "would kill leftovers, then return if clean",
    ]
    assert not cluster.slurm_calls("update")
    assert not [c for c in cluster.calls if "signal TERM" in c[-1]]
    assert not log.exists()
    assert report.exit_code == 0


def test_declined_plan_changes_nothing_and_is_logged(cluster: Cluster, tmp_path: Path) -> None:
    _drained(cluster, 1)
    log = tmp_path / "actions.log"
    report = undrain(_opts(tmp_path, log=log), lambda plan: False)
    assert not cluster.slurm_calls("update")
    assert report.outcomes[0].action_text == "skipped: not confirmed"
    assert report.exit_code == 1
    assert ["node-1", "skip"] in node_actions(log.read_text().splitlines())


def test_controller_lost_before_resume_names_every_node(cluster: Cluster, tmp_path: Path) -> None:
    _drained(cluster, 3)
    cluster.leftovers["node-3"] = ["sleep 600"]
    cluster.ctld_down_after_select = True
    log = tmp_path / "actions.log"
    report = undrain(_opts(tmp_path, log=log), _yes)
    assert report.exit_code == 2
    assert "returned: none" in report.error
    assert "not returned: node-[1-2]" in report.error
    assert "cannot reach slurmctld" in report.error
    assert [o.action for o in report.outcomes] == ["not returned", "not returned", "skipped"]
    lines = log.read_text().splitlines()
    assert sum(a == ["node-1", "undrain-failed"] or a == ["node-2", "undrain-failed"]
               for a in node_actions(lines)) == 2  # fmt: skip


def test_a_second_run_waits_then_gives_up_without_acting(cluster: Cluster, tmp_path: Path) -> None:
    _drained(cluster, 1)
    with (
        locks.hold(tmp_path / "lock", wait=0, what="test"),
        pytest.raises(locks.LockBusy, match="undrain is busy: another slurmkit run") as err,
    ):
        undrain(_opts(tmp_path), _yes)
    assert err.value.exit_code == 2
    assert cluster.calls == []
    assert undrain(_opts(tmp_path), _yes).exit_code == 0  # released


def test_log_records_before_and_after(cluster: Cluster, tmp_path: Path) -> None:
    _drained(cluster, 1)
    log = tmp_path / "actions.log"
    undrain(_opts(tmp_path, log=log), _yes)
    intent, line = log.read_text().splitlines()
    assert node_actions([intent]) == [["node-1", "will-undrain"]]
    words = fields(line)
    assert words["node"] == "node-1" and words["action"] == "undrain"
    assert words["before"] == "IDLE+DRAIN" and words["after"] == "IDLE"


# ---------------------------------------------------------------- the CLI


def test_cli_without_tty_or_yes_is_a_dry_run(cluster: Cluster, run_cli, tmp_path) -> None:
    _drained(cluster, 2)
    result = run_cli("undrain", "--lock", str(tmp_path / "l"), exit_code=1)
    assert "dry run only" in result.stderr
    assert "would return" in result.stdout
    assert not cluster.slurm_calls("update")


def test_cli_yes_returns_and_prints_the_table(cluster: Cluster, run_cli, tmp_path) -> None:
    _drained(cluster, 2)
    plan = run_cli("undrain", "--dry-run", "-v", exit_code=0).stdout.splitlines()
    assert plan[0].split()[:2] == ["node", "old"]  # -v: one line per node
    assert [row.split()[0] for row in plan[2:]] == ["node-1", "node-2"]
    result = run_cli("undrain", "--yes", "--lock", str(tmp_path / "l"), exit_code=0)
    header, _, *rows = result.stdout.splitlines()
    assert header.split()[:3] == ["nodes", "count", "old"] and "action" in header
    assert len(rows) == 1 and rows[0].split()[:2] == ["node-[1-2]", "2"]  # alike: one line
    assert "returned" in rows[0]


def test_cli_controller_lost_is_exit_2_with_table(cluster: Cluster, run_cli, tmp_path) -> None:
    _drained(cluster, 2)
    cluster.ctld_down_after_select = True
    result = run_cli("undrain", "--yes", "--lock", str(tmp_path / "l"), exit_code=2)
    assert "not returned" in result.stdout
    assert "slurmkit: scontrol update failed" in result.stderr
    assert "not returned: node-[1-2]" in result.stderr


def test_cli_json(cluster: Cluster, run_cli, tmp_path) -> None:
    import json

    _drained(cluster, 1)
    result = run_cli("undrain", "--yes", "--json", "--lock", str(tmp_path / "l"))
    data = json.loads(result.stdout)
    assert data["slurm_calls"] == 5 and data["nodes"][0]["returned"] is True


def test_cli_bad_input(cluster: Cluster, run_cli, tmp_path) -> None:
    result = run_cli("undrain", "--reason", "Kill (", exit_code=2)
    assert "not a valid regular expression" in result.stderr
    assert cluster.calls == []
    _drained(cluster, 1)
    result = run_cli("undrain", "--nodes", "node-[1-9]", "--dry-run", exit_code=2)
    assert "node-2" in result.stderr and "not found" in result.stderr
    calls = len(cluster.calls)
    result = run_cli("undrain", "--nodes", "node-[", exit_code=2)
    assert "never closed" in result.stderr
    assert len(cluster.calls) == calls  # refused before asking Slurm
    result = run_cli("undrain", "--grace", "-1", exit_code=2)
    assert "--grace" in result.stderr


def test_cli_nothing_to_do(cluster: Cluster, run_cli, tmp_path) -> None:
    cluster.nodes["node-1"] = ("IDLE", None)
    result = run_cli("undrain", "--yes", "--lock", str(tmp_path / "l"), exit_code=0)
    assert "nothing to do" in result.stderr and result.stdout == ""


def test_cli_default_reason_is_the_librarys() -> None:
    from slurmkit.cli.undrain import undrain_command
    from slurmkit.undrain import DEFAULT_REASON

    (option,) = [p for p in undrain_command.params if p.name == "reason"]
    assert option.default == DEFAULT_REASON


@pytest.mark.parametrize(("answer", "code", "updated"), [("n\n", 1, False), ("y\n", 0, True)])
def test_cli_on_a_terminal_shows_the_plan_and_asks(
    cluster: Cluster, run_cli, tmp_path, monkeypatch, answer, code, updated
) -> None:
    import types

    import slurmkit.cli.undrain as cli_undrain

    tty = types.SimpleNamespace(stdin=types.SimpleNamespace(isatty=lambda: True))
    monkeypatch.setattr(cli_undrain, "sys", tty)
    _drained(cluster, 1)
    result = run_cli("undrain", "--lock", str(tmp_path / "l"), input=answer, exit_code=code)
    assert "Proceed?" in result.stderr
    assert result.stdout.count("would return") == 1  # the plan, before the question
    assert bool(cluster.slurm_calls("update")) is updated
