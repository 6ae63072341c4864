"""``slurmkit node`` at the argv seam: bad input, batching, the log, the RebootProgram refusal.

The shared fake Slurm (tests/fakes), with ``Nodes`` below, plays slurmctld for ``scontrol
show node|config``, ``update``, ``reboot``, ``squeue`` and ``sacct``; it records every call.
The config text with no RebootProgram is the one recorded from the live 22.05 sandbox
(``node_samples/``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import slurmkit.node.reboot as rb
from slurmkit.errors import EnvironmentProblem
from slurmkit.hostlist import expand
from slurmkit.slurm import nodeops
from tests.fakes import FakeSlurm
from tests.unit.nodelog_lines import actions, new_line, old_line, records

SAMPLES = Path(__file__).parent / "node_samples"
NO_PROGRAM = (SAMPLES / "scontrol_show_config-22.05-no-rebootprogram.txt").read_text()
WITH_PROGRAM = NO_PROGRAM.replace(
    "RebootProgram           = (null)", "RebootProgram           = /sbin/reboot"
)


def _record(name: str, state: str, reason: str | None, booted: str = "2026-11-20T23:44:16") -> str:
    lines = [
        f"NodeName={name} Arch=x86_64 CoresPerSocket=2 ",
        "   CPUAlloc=0 CPUEfctv=8 CPUTot=8 CPULoad=0.00",
        f"   State={state} ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
        "   Partitions=gpu ",
        f"   BootTime={booted} SlurmdStartTime=2026-11-21T00:02:30",
    ]
    if reason:
        lines.append(f"   Reason={reason} [root@2026-11-21T00:03:40]")
    return "\n".join(lines) + "\n\n"


@dataclass
class Nodes:
    """What slurmctld knows, played for the shared fake Slurm: nodes name -> (state, reason),
    and ``config`` is what ``scontrol show config`` prints. ``_answer`` is the fake's route for
    every command, so a drain, resume or reboot changes what the next ``show node`` says."""

    slurm: FakeSlurm
    nodes: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    config: str = WITH_PROGRAM
    rebooting: set[str] = field(default_factory=set)  # shown once as REBOOT_ISSUED, then back
    booted: str = "2026-11-20T23:44:16"  # every node's BootTime (local time, as scontrol)

    def __post_init__(self) -> None:
        self.slurm.on(["**"], answer=lambda call: self._answer(list(call.argv)))

    def _answer(self, argv: list[str]) -> tuple[int, str, str]:
        if argv[:3] == ["scontrol", "show", "config"]:
            return 0, self.config, ""
        if argv[0] == "scontrol" and "show" in argv and "node" in argv:
            names = expand(argv[-1]) if argv[-1] != "node" else list(self.nodes)
            unknown = [n for n in names if n not in self.nodes]
            if unknown:
                return 1, "", f"Node {unknown[0]} not found\n"
            text = "".join(_record(n, *self.nodes[n], booted=self.booted) for n in names)
            for name in self.rebooting & set(names):
                self.nodes[name] = ("IDLE", None)
            self.rebooting -= set(names)
            return 0, text, ""
        if argv[:2] == ["scontrol", "update"]:
            words = dict(w.split("=", 1) for w in argv[2:])
            for name in expand(words["nodename"]):
                state, _reason = self.nodes[name]
                base = state.split("+")[0]
                if words["state"] == "drain":
                    self.nodes[name] = (f"{base}+DRAIN", words["reason"])
                elif words["state"] == "resume":
                    self.nodes[name] = ("IDLE" if base == "DOWN" else base, None)
            return 0, "", ""
        if argv[:2] == ["scontrol", "reboot"]:
            for name in expand(argv[-1]):
                self.nodes[name] = ("DOWN+REBOOT_ISSUED", "reboot issued")
                self.rebooting.add(name)
            return 0, "", ""
        if argv[0] in ("squeue", "sacct"):
            return 0, "", ""
        return 127, "", f"fake: unexpected {shlex.join(argv)}\n"

    def changing(self) -> list[list[str]]:
        changes = (("scontrol", "update"), ("scontrol", "reboot"))
        return [list(c) for c in self.slurm.calls if c[:2] in changes]


@pytest.fixture
def fake(fake_slurm: FakeSlurm, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Nodes:
    slurm = Nodes(
        fake_slurm,
        {
            "node-1": ("IDLE", None),
            "node-2": ("IDLE", None),
            "node-3": ("IDLE+DRAIN", "gpu ECC error"),
            "node-4": ("DOWN", "Not responding"),
        },
    )
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return slurm


def _lock(tmp_path: Path) -> list[str]:
    return ["--lock", str(tmp_path / "node.lock")]


# ------------------------------------------------------------------ the slurm layer


def test_recorded_config_without_reboot_program_is_read_as_unset() -> None:
    config = nodeops.parse_config(NO_PROGRAM)
    assert config["SLURM_VERSION"] == "22.05.8"
    assert nodeops.reboot_program(config) is None
    assert nodeops.reboot_program(nodeops.parse_config(WITH_PROGRAM)) == "/sbin/reboot"


def test_require_program_refuses_with_one_line() -> None:
    with pytest.raises(EnvironmentProblem) as caught:
        rb.require_program(nodeops.parse_config(NO_PROGRAM))
    assert caught.value.exit_code == 2
    assert "RebootProgram is not set" in str(caught.value) and "\n" not in str(caught.value)


def test_reboot_argv_is_one_call_and_never_all() -> None:
    assert nodeops.reboot_argv("node-[1-64]") == ["scontrol", "reboot", "node-[1-64]"]
    assert nodeops.reboot_argv("n1,n2", asap=True, reason="new image") == [
        "scontrol",
        "reboot",
        "ASAP",
        "reason=new image",
        "n1,n2",
    ]
    with pytest.raises(ValueError):
        nodeops.reboot_argv("  ")


def test_node_history_asks_sacct_for_the_node() -> None:
    argv = nodeops.node_history_argv("node-3", "2026-11-01T00:00:00")
    assert argv[0] == "sacct" and "--nodelist=node-3" in argv and "--allusers" in argv


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "args",
    [
        ["node", "drain", "node-1"],  # no reason
        ["node", "drain", "node-1", "--reason", "   "],
        ["node", "drain", "node-1", "--reason", "two\nlines"],
        ["node", "drain", "", "--reason", "x", "--yes"],
        ["node", "drain", ",", "--reason", "x", "--yes"],
        ["node", "drain", "node-[1-", "--reason", "x", "--yes"],
        ["node", "resume", "", "--yes"],
        ["node", "reboot", "node-1", "--timeout", "0", "--yes"],
        ["node", "reboot", "node-1", "--timeout", "nan", "--yes"],
        ["node", "reboot", "node-1", "--no-wait", "--validate", "python", "--yes"],
        ["node", "reboot", "node-1", "--validate", "no-such-check", "--yes"],
        ["node", "reboot", "node-1", "--reason", "", "--yes"],
        ["node", "show", "node-[1-2]"],
        ["node", "show", ""],
        ["node", "drain", "node-9", "--reason", "x", "--yes"],  # unknown to Slurm
        ["node", "show", "node-9"],
    ],
)
def test_bad_input_is_one_line_exit_2_and_changes_nothing(
    args: list[str], fake: Nodes, run_cli, tmp_path: Path
) -> None:
    extra = _lock(tmp_path) if args[1] != "show" else []
    result = run_cli(*args, *extra, exit_code=2)
    assert result.stderr.startswith("slurmkit: ") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert fake.changing() == []


def test_reboot_without_reboot_program_issues_nothing(fake: Nodes, run_cli, tmp_path: Path) -> None:
    fake.config = NO_PROGRAM
    result = run_cli("node", "reboot", "node-1", "--yes", *_lock(tmp_path), exit_code=2)
    assert "RebootProgram is not set" in result.stderr and result.stderr.count("\n") == 1
    assert fake.changing() == []
    dry = run_cli("node", "reboot", "node-1", "--dry-run", exit_code=2)
    assert "RebootProgram is not set" in dry.stderr


# ------------------------------------------------------------------ batching and the log


def test_drain_is_one_update_with_the_reason_and_logs_intent_first(
    fake: Nodes, run_cli, tmp_path: Path
) -> None:
    log = tmp_path / "node.log"
    result = run_cli(
        "node", "drain", "node-[1-3]", "--reason", "bad fan", "--yes", "--log", str(log),
        *_lock(tmp_path), "--json",
    )  # fmt: skip
    assert fake.changing() == [
        ["scontrol", "update", "nodename=node-[1-2]", "state=drain", "reason=bad fan"]
    ]
    rows = records(log)
    assert [r["action"] for r in rows] == ["will-drain", "will-drain", "drain", "drain"]
    assert len({r["token"] for r in rows}) == 1  # one token
    assert '"node-3"' in result.stdout and "already drained" in result.stdout
    assert fake.nodes["node-3"] == ("IDLE+DRAIN", "gpu ECC error")  # the admin's reason kept


def test_resume_no_check_is_one_update_and_leaves_idle_nodes_alone(
    fake: Nodes, run_cli, tmp_path: Path
) -> None:
    run_cli("node", "resume", "node-[1,3-4]", "--no-check", "--yes", *_lock(tmp_path))
    assert fake.changing() == [["scontrol", "update", "nodename=node-[3-4]", "state=resume"]]
    assert fake.nodes["node-3"][0] == "IDLE" and fake.nodes["node-4"][0] == "IDLE"


def test_a_killed_drain_is_settled_by_the_next_run(
    fake: Nodes, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The intent a run killed right after the update left open is closed by the next run."""
    from slurmkit.nodechange import auditlog

    log = tmp_path / "node.log"
    log.write_text(old_line("node-1", "will-drain", before="IDLE", token="abc", reason="x"))
    fake.nodes["node-1"] = ("IDLE+DRAIN", "x")  # the update had gone through
    result = run_cli(
        "node", "drain", "node-2", "--reason", "y", "--yes", "--log", str(log), *_lock(tmp_path)
    )
    assert "settled what an earlier run left open: node-1 drain done" in result.stderr
    assert auditlog.open_intents(log) == []


def test_a_log_that_cannot_be_written_changes_nothing(fake: Nodes, run_cli, tmp_path: Path) -> None:
    result = run_cli(
        "node", "drain", "node-1", "--reason", "x", "--yes",
        "--log", str(tmp_path / "missing" / "node.log"), *_lock(tmp_path), exit_code=2,
    )  # fmt: skip
    assert "does not exist" in result.stderr
    assert fake.changing() == []


def test_reboot_is_one_call_followed_back(fake: Nodes, run_cli, tmp_path: Path) -> None:
    result = run_cli(
        "node", "reboot", "node-[1-2,4]", "--asap", "--reason", "image", "--yes",
        "--poll", "0.01", "--timeout", "30", *_lock(tmp_path),
        exit_code=1,  # node-4 is DOWN: skipped
    )  # fmt: skip
    assert fake.changing() == [["scontrol", "reboot", "ASAP", "reason=image", "node-[1-2]"]]
    assert "DOWN: Slurm ignores a reboot request" in result.stdout
    assert "rebooted, back in service" in result.stdout


def test_a_reboot_waits_out_a_boot_of_the_last_seconds(
    fake: Nodes, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """slurmctld takes a node that booted in the request's second as already back, and
    leaves it IDLE+REBOOT_ISSUED for good (live on 22.05.8): so the request waits."""
    import time
    from datetime import datetime

    fake.booted = datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    result = run_cli(
        "node", "reboot", "node-1", "--yes", "--no-wait", *_lock(tmp_path)
    )  # fmt: skip
    assert slept and 1.0 < slept[0] <= 3.0, slept
    assert "a node booted seconds ago" in result.stderr
    assert fake.changing() == [["scontrol", "reboot", "node-1"]]


def test_fresh_boot_wait_is_bounded_and_only_for_recent_boots() -> None:
    from datetime import datetime, timedelta

    now = datetime(2026, 11, 30, 15, 11, 24, 500000).astimezone()
    assert rb.fresh_boot_wait([], now) == 0.0
    assert rb.fresh_boot_wait([now - timedelta(seconds=10)], now) == 0.0
    booted = now.replace(microsecond=0)  # scontrol's whole second
    assert rb.fresh_boot_wait([now - timedelta(seconds=10), booted], now) == pytest.approx(2.5)
    # a controller clock ahead of this host's never makes it wait longer than 3 s
    assert rb.fresh_boot_wait([now + timedelta(minutes=5)], now) == 3.0


def test_follow_reports_a_node_that_never_comes_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import datetime

    from slurmkit.slurm import query
    from slurmkit.slurm.records import Node

    stuck = Node(name="node-1", state="DOWN", flags=frozenset({"REBOOT_ISSUED"}))
    monkeypatch.setattr(query, "nodes", lambda names, **kw: [stuck])
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    lines: list[str] = []
    done, missing = rb.follow(
        ["node-1"],
        datetime.now().astimezone(),
        timeout=10,
        poll=2,
        notify=lines.append,
        sleep=sleep,
        clock=lambda: now[0],
    )
    assert done == {} and missing == {"node-1": "DOWN+REBOOT_ISSUED"}
    assert len(lines) == 1  # one line per change of state, not per poll
    assert now[0] == pytest.approx(10)


class Killed(BaseException):
    """Stands for the SIGKILL a faultpoint sends: nothing after it runs."""


@pytest.mark.parametrize(
    ("verb", "args"),
    [
        ("drain", ["node-1", "--reason", "fan"]),
        ("resume", ["node-3", "--no-check"]),
        ("reboot", ["node-1", "--no-wait"]),
    ],
)
def test_killed_between_change_and_record_leaves_the_intent_and_the_next_run_settles_it(
    verb: str, args: list[str], fake: Nodes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from slurmkit import faultpoint
    from slurmkit.cli import cli
    from slurmkit.nodechange import auditlog

    log = tmp_path / "node.log"
    point = f"node-{verb}.after-change"
    reached: list[str] = []

    def die(name: str) -> None:
        reached.append(name)
        if name == point:
            raise Killed

    monkeypatch.setattr(faultpoint, "reached", die)
    common = ["--yes", "--log", str(log), *_lock(tmp_path)]
    with pytest.raises(Killed):
        CliRunner().invoke(cli, ["node", verb, *args, *common], catch_exceptions=False)
    assert reached == [f"node-{verb}.after-intent", point]
    assert len(fake.changing()) == 1  # the change was made
    (intent,) = auditlog.open_intents(log)  # and only its intent is on record
    assert intent.action == f"will-{verb}"
    monkeypatch.setattr(faultpoint, "reached", lambda name: None)
    result = CliRunner().invoke(cli, ["node", "show", "node-2"])  # reading settles nothing
    assert auditlog.open_intents(log) == [intent] and result.exit_code == 0
    nothing = CliRunner().invoke(cli, ["node", "drain", "node-3", "--reason", "x", *common])
    assert f"{intent.nodes[0]} {verb} done" in nothing.stderr, nothing.stderr
    assert auditlog.open_intents(log) == []


def test_without_log_the_intent_goes_to_the_users_own_actions_log(
    fake: Nodes, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22: a change never goes unjournaled. With no --log the intent and outcome land
    in $XDG_STATE_HOME/slurmkit/actions.log (folder made 0700), and the next run settles
    what a killed one left there, as it does with --log."""
    from slurmkit.nodechange import auditlog

    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    run_cli("node", "drain", "node-1", "--reason", "bad fan", "--yes", *_lock(tmp_path))
    log = state / "slurmkit" / "actions.log"
    assert actions(log) == ["will-drain", "drain"]
    assert (log.parent.stat().st_mode & 0o777) == 0o700
    log.write_text(
        log.read_text() + new_line("node-2", "will-drain", before="IDLE", token="k9", reason="x")
    )
    fake.nodes["node-2"] = ("IDLE+DRAIN", "x")  # the killed run's update had gone through
    result = run_cli("node", "drain", "node-3", "--reason", "y", "--yes", *_lock(tmp_path))
    assert "settled what an earlier run left open: node-2 drain done" in result.stderr
    assert auditlog.open_intents(log) == []


def test_no_log_keeps_none_and_a_dry_run_creates_no_state_folder(
    fake: Nodes, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    run_cli("node", "drain", "node-1", "--reason", "x", "--dry-run", *_lock(tmp_path))
    assert not state.exists() and fake.changing() == []
    run_cli("node", "drain", "node-1", "--reason", "x", "--yes", "--no-log", *_lock(tmp_path))
    assert fake.changing() and not state.exists()
