"""``slurmkit faulty scan`` at the argv seam: one job, per-node results, timeouts, --drain safety.

:class:`CheckJobCluster`, the one route of the shared fake Slurm (tests/fakes), plays
slurmctld for one check job: node and partition records,
sbatch (it reads the rendered script, given on stdin, for the log path), squeue answering a scripted
sequence of states, sacct, scancel and scontrol update; it writes the job's log
when the job ends and refuses any other command. ``test_cpus_check`` reuses it.
"""

from __future__ import annotations

import json
import re
import shlex
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from slurmkit.hostlist import expand, fold
from slurmkit.slurm.parse_text import DELIMITER, SACCT_COLUMNS, SQUEUE_COLUMNS
from slurmkit.templating.results import parse_check_lines
from tests.fakes import FakeSlurm

JOB_ID = "42"
CMD = 'cmd:test "$SLURMD_NODENAME" != node-3'
FINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL")


def check_line(node: str, check: str, status: str, detail: str = "ok") -> str:
    encoded = check.replace("%", "%25").replace(" ", "%20").replace("\t", "%09")
    return f"SLURMKIT_CHECK node={node} check={encoded} status={status} detail={detail}"


@dataclass
class CheckJobCluster:
    """slurmctld running one check job, played for the shared fake Slurm (its one route)."""

    slurm: FakeSlurm
    nodes: dict[str, str] = field(default_factory=dict)  # name -> State (e.g. IDLE+DRAIN)
    gres: str = "gpu:4"
    reasons: dict[str, str] = field(default_factory=dict)
    states: list[str] = field(default_factory=lambda: ["PENDING", "RUNNING", "COMPLETED"])
    pending_reason: str = "Resources"
    job_nodes: str = ""
    log_lines: list[str] = field(default_factory=list)
    forget_finished: bool = False
    sbatch_argv: list[str] = field(default_factory=list)
    script_text: str = ""
    log: Path | None = None
    cancelled: bool = False
    polls: int = 0

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes = {f"node-{i}": "IDLE" for i in range(1, 5)}
        self.slurm.on(["**"], answer=lambda call: self._answer(list(call.argv)))

    @property
    def calls(self) -> list[list[str]]:
        return [list(argv) for argv in self.slurm.calls]

    @property
    def sbatch_inputs(self) -> list[str]:
        """What sbatch read on stdin, call by call."""
        return [c.input for c in self.slurm.log if c.program == "sbatch" and c.input is not None]

    def _answer(self, argv: list[str]) -> tuple[int, str, str]:
        if argv == ["sinfo", "--version"]:
            return 0, "slurm-wlm 22.05.8\n", ""
        if argv[:4] == ["scontrol", "--all", "--oneliner", "show"]:
            return self._show_nodes(argv[5] if len(argv) > 5 else None)
        if argv[:4] == ["scontrol", "--all", "show", "node"]:  # exact reasons: a record a node
            rc, out, err = self._show_nodes(argv[4] if len(argv) > 4 else None)
            return rc, out.replace("\n", "\n\n"), err
        if argv[:3] == ["scontrol", "--all", "show"]:
            nodes = fold(list(self.nodes))
            return 0, f"PartitionName=gpu\n   Default=YES\n   Nodes={nodes}\n   State=UP\n\n", ""
        if argv[0] == "sbatch":
            return self._sbatch(argv)
        if argv[0] == "squeue":
            return 0, self._squeue(), ""
        if argv[0] == "sacct":
            return 0, self._row(SACCT_COLUMNS, self._state()), ""
        if argv[0] == "scancel":
            self.cancelled = True
            self._write_log()
            return 0, "", ""
        if argv[:2] == ["scontrol", "update"]:
            return self._update(argv)
        raise AssertionError(f"unexpected command: {shlex.join(argv)}")

    # ------------------------------------------------------------ helpers for tests

    def slurm_calls(self, word: str) -> list[list[str]]:
        return [c for c in self.calls if word in c or c[0] == word]

    # ------------------------------------------------------------ answers

    def _show_nodes(self, names: str | None) -> tuple[int, str, str]:
        wanted = expand(names) if names else list(self.nodes)
        unknown = [n for n in wanted if n not in self.nodes]
        if unknown:
            return 1, "", f"Node {unknown[0]} not found\n"
        lines = []
        for name in wanted:
            reason = self.reasons.get(name)
            extra = f" Reason={reason} [root@2026-11-21T00:03:40]" if reason else ""
            lines.append(
                f"NodeName={name} CPUTot=8 Gres={self.gres} State={self.nodes[name]} "
                f"Partitions=gpu{extra}"
            )
        return 0, "\n".join(lines) + "\n", ""

    def _sbatch(self, argv: list[str]) -> tuple[int, str, str]:
        self.sbatch_argv = argv
        # the script comes on stdin (issue 14 #3); a path is read only to show the old way
        stdin = self.sbatch_inputs
        self.script_text = stdin[-1] if stdin else Path(argv[-1]).read_text()
        headers = dict(
            shlex.split(line)[1].lstrip("-").split("=", 1)
            for line in self.script_text.splitlines()
            if line.startswith("#SBATCH --") and "=" in line
        )
        name = headers["job-name"]
        self.log = Path(headers["output"].replace("%x", name).replace("%j", JOB_ID))
        if not self.job_nodes:
            given = next((a.split("=", 1)[1] for a in argv if a.startswith("--nodelist=")), None)
            count = int(headers["nodes"])
            self.job_nodes = given or fold(list(self.nodes)[:count])
        return 0, f"{JOB_ID}\n", ""

    def _state(self) -> str:
        if self.cancelled:
            return "CANCELLED"
        return self.states[min(self.polls, len(self.states) - 1)]

    def _squeue(self) -> str:
        state = self._state()
        self.polls += 1
        if state in FINAL:
            self._write_log()
            if self.forget_finished:
                return ""
        return self._row(SQUEUE_COLUMNS, state)

    def _row(self, columns, state: str) -> str:
        values = {
            "job_id": JOB_ID,
            "display_id": JOB_ID,
            "name": "check",
            "state": state,
            "reason": self.pending_reason if state == "PENDING" else "None",
            "nodelist": "" if state == "PENDING" else self.job_nodes,
            "exit_code": "0:0",
        }
        return DELIMITER.join(values.get(name, "N/A") for name, _ in columns) + "\n"

    def _write_log(self) -> None:
        if self.log is not None and not self.log.exists() and self.polls > 1:
            self.log.write_text(
                "slurmkit: job started\n" + "".join(f"{x}\n" for x in self.log_lines)
            )

    def _update(self, argv: list[str]) -> tuple[int, str, str]:
        names = expand(argv[2].removeprefix("nodename="))
        assert argv[3] == "state=drain"
        for name in names:
            self.nodes[name] = self.nodes[name] + "+DRAIN"
            self.reasons[name] = argv[4].removeprefix("reason=")
        return 0, "", ""


def all_pass(nodes: list[str], checks: list[str], fail: dict | None = None) -> list[str]:
    fail = fail or {}
    return [
        check_line(n, c, "fail" if (n, c) in fail else "pass", fail.get((n, c), "ok"))
        for n in nodes
        for c in checks
    ]


NODES = [f"node-{i}" for i in range(1, 5)]


@pytest.fixture
def slurm(fake_slurm: FakeSlurm, monkeypatch, tmp_path) -> Iterator[CheckJobCluster]:
    fake = CheckJobCluster(fake_slurm)
    monkeypatch.chdir(tmp_path)
    yield fake


def scan(run_cli, *args: str, exit_code: int | None = 1):
    return run_cli("faulty", "scan", "--dir", "work", *args, exit_code=exit_code)


def test_finds_the_failing_node_and_prints_the_exclude_string(run_cli, slurm) -> None:
    slurm.states = ["PENDING", "RUNNING", "FAILED"]
    slurm.log_lines = all_pass(NODES, ["python", CMD], {("node-3", CMD): "exit 1"})
    result = scan(run_cli, "--checks", f"python,{CMD}")
    lines = result.stdout.splitlines()
    assert lines[-1] == "--exclude=node-3"
    rows = {line.split()[0]: line.split()[1:3] for line in lines[2:-1]}  # alike nodes: one row
    assert rows == {"node-[1-2,4]": ["3", "pass"], "node-3": ["1", "FAIL"]}
    assert "exit 1" in result.stdout
    assert "job 42 FAILED" in result.stderr
    # one job for all nodes, asked for by name; no per-node Slurm calls
    assert len(slurm.slurm_calls("sbatch")) == 1
    assert "--nodelist=node-[1-4]" in slurm.sbatch_argv
    assert "#SBATCH --nodes=4" in slurm.script_text
    assert "#SBATCH --gres" not in slurm.script_text  # no GPU check: no GPU request
    assert not slurm.slurm_calls("update")


def test_all_pass_exits_0(run_cli, slurm) -> None:
    slurm.log_lines = all_pass(NODES, ["python", "disk"])
    result = scan(run_cli, "--checks", "python,disk", exit_code=0)
    assert "--exclude" not in result.stdout
    assert "nothing to exclude" in result.stderr


def test_gpu_checks_without_drivers_are_skipped_never_pass(run_cli, slurm) -> None:
    slurm.log_lines = [
        check_line(n, c, "pass") if c == "python" else check_line(n, c, "skipped", "no driver")
        for n in NODES
        for c in ("python", "gpu-count")
    ]
    result = scan(run_cli, "--checks", "python,gpu-count", "--json")
    data = json.loads(result.stdout)
    assert {n["node"]: n["result"] for n in data["nodes"]} == dict.fromkeys(NODES, "skipped")
    assert data["exclude"] == ""
    assert "#SBATCH --gres=gpu:4" in slurm.script_text  # the nodes' gres, not the template's 8


def test_gpu_checks_on_nodes_with_different_gpu_counts_need_a_choice(run_cli, slurm) -> None:
    original = slurm._show_nodes

    def mixed(names):
        rc, out, err = original(names)
        return (
            rc,
            out.replace(
                "NodeName=node-4 CPUTot=8 Gres=gpu:4", "NodeName=node-4 CPUTot=8 Gres=gpu:8"
            ),
            err,
        )

    slurm._show_nodes = mixed  # type: ignore[method-assign]
    result = scan(run_cli, "--checks", "python,cuda", exit_code=2)
    assert "different GPU counts (node-1: 4, node-2: 4, node-3: 4, node-4: 8)" in result.stderr
    assert not slurm.slurm_calls("sbatch")
    slurm.log_lines = all_pass(NODES, ["python"])
    scan(run_cli, "--checks", "python", exit_code=0)  # no GPU check: no GPU request at all
    assert "#SBATCH --gres" not in slurm.script_text


def test_a_node_without_results_is_unknown_and_excluded(run_cli, slurm) -> None:
    lines = all_pass(["node-1", "node-2", "node-4"], ["python", "disk"])
    lines.remove(check_line("node-4", "disk", "pass"))
    slurm.log_lines = lines
    slurm.states = ["RUNNING", "NODE_FAIL"]
    result = scan(run_cli, "--checks", "python,disk", "--json")
    data = json.loads(result.stdout)
    results = {n["node"]: n["result"] for n in data["nodes"]}
    assert results == {"node-1": "pass", "node-2": "pass", "node-3": "unknown", "node-4": "unknown"}
    assert data["exclude"] == "node-[3-4]" and data["job_state"] == "NODE_FAIL"
    node4 = next(n for n in data["nodes"] if n["node"] == "node-4")
    assert {c["check"]: c["status"] for c in node4["checks"]} == {
        "python": "pass",
        "disk": "unknown",
    }


def test_a_job_that_never_starts_times_out_with_the_pending_reason(run_cli, slurm) -> None:
    slurm.states = ["PENDING"]
    slurm.pending_reason = "ReqNodeNotAvail, UnavailableNodes:node-3"
    result = scan(run_cli, "--checks", "python", "--timeout", "1", exit_code=2)
    assert "did not start within 1 s" in result.stderr
    assert "(pending: ReqNodeNotAvail, UnavailableNodes:node-3); cancelled it" in result.stderr
    assert slurm.slurm_calls("scancel") == [["scancel", JOB_ID]]
    assert result.stdout == ""


def test_a_scan_still_running_at_the_timeout_reports_what_it_has(run_cli, slurm) -> None:
    slurm.states = ["RUNNING"]
    slurm.log_lines = all_pass(["node-1", "node-2"], ["python"])
    result = scan(run_cli, "--checks", "python", "--timeout", "1", "--json")
    data = json.loads(result.stdout)
    assert data["timed_out"] is True and data["job_state"] == "CANCELLED"
    assert data["exclude"] == "node-[3-4]"
    assert slurm.slurm_calls("scancel") == [["scancel", JOB_ID]]


def test_sacct_answers_when_squeue_forgot_the_job(run_cli, slurm) -> None:
    slurm.forget_finished = True
    slurm.states = ["RUNNING", "COMPLETED"]
    slurm.log_lines = all_pass(NODES, ["python"])
    result = scan(run_cli, "--checks", "python", "--json", exit_code=0)
    assert json.loads(result.stdout)["job_state"] == "COMPLETED"
    assert slurm.slurm_calls("sacct")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--checks", "python,gpu-ram"], "unknown check 'gpu-ram'"),
        (["--checks", "cmd:"], "cmd: needs a command"),
        (["--checks", ","], "at least one check"),
        (["--checks", "python,python"], "listed twice"),
        (["--nodes", "2", "-w", "node-1"], "exclude each other"),
        (["-w", "node-["], "never closed"),
        (["--set", "nodes"], "expected KEY=VALUE"),
    ],
)
def test_bad_input_is_a_usage_error_before_any_job(run_cli, slurm, args, message) -> None:
    result = scan(run_cli, *args, exit_code=2)
    assert message in result.stderr
    assert not slurm.slurm_calls("sbatch")


def test_unknown_nodes_and_too_many_nodes(run_cli, slurm) -> None:
    assert "not found" in scan(run_cli, "-w", "node-[4-5]", exit_code=2).stderr
    result = scan(run_cli, "--nodes", "5", exit_code=2)
    assert "only 4 node(s)" in result.stderr
    assert not slurm.slurm_calls("sbatch")


def test_drained_nodes_are_left_out_and_reported_unavailable(run_cli, slurm) -> None:
    slurm.nodes["node-2"] = "IDLE+DRAIN"
    slurm.nodes["node-4"] = "DOWN+NOT_RESPONDING"
    slurm.log_lines = all_pass(["node-1", "node-3"], ["python"])
    result = scan(run_cli, "-w", "node-[1-4]", "--checks", "python", "--json")
    data = json.loads(result.stdout)
    assert "--nodelist=node-[1,3]" in slurm.sbatch_argv
    results = {n["node"]: (n["result"], n["note"]) for n in data["nodes"]}
    assert results["node-1"] == ("pass", None)
    assert results["node-2"][0] == "unavailable" and "DRAIN" in results["node-2"][1]
    assert data["exclude"] == ""  # Slurm already keeps jobs off them


def test_nodes_k_lets_slurm_pick(run_cli, slurm) -> None:
    slurm.job_nodes = "node-[2,4]"
    slurm.log_lines = all_pass(["node-2", "node-4"], ["python"])
    result = scan(run_cli, "--nodes", "2", "-p", "gpu", "--checks", "python", "--json", exit_code=0)
    assert not any(a.startswith("--nodelist") for a in slurm.sbatch_argv)
    assert "#SBATCH --nodes=2" in slurm.script_text
    assert "#SBATCH --partition=gpu" in slurm.script_text
    assert [n["node"] for n in json.loads(result.stdout)["nodes"]] == ["node-2", "node-4"]


def test_set_passes_template_parameters(run_cli, slurm) -> None:
    slurm.log_lines = all_pass(NODES, ["disk"])
    scan(
        run_cli,
        "--checks",
        "disk",
        "--set",
        "disk_min_gb=1",
        "--set",
        "cpus_per_task=1",
        exit_code=0,
    )
    assert "disk_min_gb=1" in slurm.script_text and "#SBATCH --cpus-per-task=1" in slurm.script_text
    assert scan(run_cli, "--set", "nope=1", exit_code=2).stderr.count("no parameter 'nope'") == 1


# ---------------------------------------------------------------- --drain


def failing_scan(slurm: CheckJobCluster, fail: dict | None = None) -> None:
    slurm.states = ["RUNNING", "FAILED"]
    slurm.log_lines = all_pass(NODES, ["python", CMD], fail or {("node-3", CMD): "exit 1"})


def test_drain_yes_drains_exactly_the_failing_node_in_one_call(run_cli, slurm) -> None:
    failing_scan(slurm)
    result = scan(run_cli, "--checks", f"python,{CMD}", "--drain", "--yes")
    (update,) = slurm.slurm_calls("update")
    assert update == [
        "scontrol",
        "update",
        "nodename=node-3",
        "state=drain",
        f"reason=slurmkit: {CMD} failed",
    ]
    assert "drained node-3" in result.stderr and "IDLE+DRAIN" in result.stderr
    assert result.stdout.splitlines()[-1] == "--exclude=node-3"


def test_drain_goes_through_the_node_change_core_and_its_audit_log(run_cli, slurm) -> None:
    """Issue 30: the scan's drain is the core's, so ``log show`` and any later node command
    see it: a will-drain intent and a drain outcome per node, in the one audit log."""
    from slurmkit.nodechange import auditlog

    failing_scan(slurm)
    scan(run_cli, "--checks", f"python,{CMD}", "--drain", "--yes")
    records = [(r.node, r.kind, r.action) for r in auditlog.read(auditlog.default_path())]
    assert records == [("node-3", "intent", "will-drain"), ("node-3", "outcome", "drain")]
    assert auditlog.open_intents(auditlog.default_path()) == []


def test_drain_batches_per_reason(run_cli, slurm) -> None:
    failing_scan(
        slurm,
        {("node-1", "python"): "no", ("node-2", "python"): "no", ("node-3", CMD): "exit 1"},
    )
    result = scan(run_cli, "--checks", f"python,{CMD}", "--drain", "--yes", "--json")
    updates = sorted(c[2:] for c in slurm.slurm_calls("update"))
    assert updates == [
        ["nodename=node-3", "state=drain", f"reason=slurmkit: {CMD} failed"],
        ["nodename=node-[1-2]", "state=drain", "reason=slurmkit: python failed"],
    ]
    drain = json.loads(result.stdout)["drain"]
    assert drain["done"] is True and drain["states"]["node-1"] == "IDLE+DRAIN"


def test_drain_dry_run_changes_nothing(run_cli, slurm) -> None:
    failing_scan(slurm)
    result = scan(run_cli, "--checks", f"python,{CMD}", "--drain", "--dry-run", "--yes")
    assert not slurm.slurm_calls("update")
    assert "dry run: would drain node-3" in result.stderr


def test_drain_without_terminal_or_yes_is_a_dry_run(run_cli, slurm) -> None:
    failing_scan(slurm)
    result = scan(run_cli, "--checks", f"python,{CMD}", "--drain")
    assert not slurm.slurm_calls("update")
    assert "no terminal and no --yes: dry run only" in result.stderr


@pytest.mark.parametrize(("answer", "drained"), [("n\n", False), ("y\n", True)])
def test_drain_on_a_terminal_asks(run_cli, slurm, monkeypatch, answer, drained) -> None:
    import slurmkit.cli.faulty as cli_faulty

    tty = types.SimpleNamespace(stdin=types.SimpleNamespace(isatty=lambda: True))
    monkeypatch.setattr(cli_faulty, "sys", tty)
    failing_scan(slurm)
    result = run_cli(
        "faulty",
        "scan",
        "--dir",
        "work",
        "--checks",
        f"python,{CMD}",
        "--drain",
        input=answer,
        exit_code=1,
    )
    assert "Drain these nodes?" in result.stderr and "drain node-3" in result.stderr
    assert bool(slurm.slurm_calls("update")) is drained
    assert ("declined" in result.stderr) is not drained


def test_drain_leaves_drained_nodes_and_their_reason_alone(run_cli, slurm) -> None:
    failing_scan(slurm, {("node-2", CMD): "exit 1", ("node-3", CMD): "exit 1"})
    original = slurm._show_nodes

    def drained_after_scan(names):  # an admin drained node-2 while the scan ran
        if slurm.polls > 1 and "node-2" in expand(names or ""):
            slurm.nodes["node-2"] = "IDLE+DRAIN"
            slurm.reasons["node-2"] = "bad fan"
        return original(names)

    slurm._show_nodes = drained_after_scan  # type: ignore[method-assign]
    result = scan(run_cli, "--checks", f"python,{CMD}", "--drain", "--yes")
    (update,) = slurm.slurm_calls("update")
    assert update[2] == "nodename=node-3"
    assert slurm.reasons["node-2"] == "bad fan"
    assert "not draining node-2: already IDLE+DRAIN: bad fan" in result.stderr


def test_unknown_nodes_are_never_drained(run_cli, slurm) -> None:
    slurm.states = ["RUNNING", "NODE_FAIL"]
    slurm.log_lines = all_pass(["node-1", "node-2"], ["python"])
    result = scan(run_cli, "--checks", "python", "--drain", "--yes")
    assert not slurm.slurm_calls("update")
    assert "no failing node to drain" in result.stderr
    assert result.stdout.splitlines()[-1] == "--exclude=node-[3-4]"


def test_table_has_a_column_per_check(run_cli, slurm) -> None:
    failing_scan(slurm)
    header = scan(run_cli, "--checks", f"python,{CMD}").stdout.splitlines()[0]
    assert re.split(r"\s{2,}", header.strip()) == [
        "NODES",
        "COUNT",
        "RESULT",
        "python",
        'cmd:test "$SLUR…',
        "DETAIL",
    ]


def test_a_result_line_for_a_node_outside_the_allocation_is_ignored_never_drained(
    run_cli, slurm
) -> None:
    """Issue 14 #4: a line naming a node the job never ran on once made --drain drain it."""
    slurm.states = ["RUNNING", "COMPLETED"]
    slurm.log_lines = [
        *all_pass(["node-1", "node-2"], ["python"]),
        check_line("node-4", "python", "fail", "forged"),
        check_line("node-99", "python", "fail", "forged"),
    ]
    result = scan(run_cli, "-w", "node-[1-2]", "--checks", "python", "--drain", "--yes", "--json",
                  exit_code=0)  # fmt: skip
    assert not slurm.slurm_calls("update")
    data = json.loads(result.stdout)
    assert [n["node"] for n in data["nodes"]] == ["node-1", "node-2"]
    assert data["ignored"] == ["node-4", "node-99"]
    assert (
        "slurmkit: warning: ignoring result lines for node-4,node-99: "
        "not in job 42's allocation (node-[1-2])"
    ) in result.stderr


def test_result_lines_split_only_at_newlines() -> None:
    """A carriage return (or other Unicode line break) inside a detail cannot start a line."""
    text = check_line("node-1", "python", "pass", "a\rSLURMKIT_CHECK node=node-2 check=python "
                      "status=fail detail=forged\x85x") + "\n"  # fmt: skip
    (only,) = parse_check_lines(text)
    assert (only.node, only.status) == ("node-1", "pass")


def test_check_output_reaches_the_terminal_with_escapes_shown(run_cli, slurm) -> None:
    """A check's detail is output of the node: its escape sequences are shown, not obeyed."""
    slurm.states = ["RUNNING", "FAILED"]
    slurm.log_lines = all_pass(NODES, ["python"], {("node-2", "python"): "boom\x1b]0;owned\x07"})
    result = scan(run_cli, "--checks", "python")
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "boom\\x1b]0;owned\\x07" in result.stdout


@pytest.mark.parametrize("value", ["nan", "inf", "0.5"])
def test_timeout_is_finite_seconds_from_one_before_any_job(run_cli, slurm, value: str) -> None:
    """nan and inf passed FloatRange(min=1) and reached the job's time limit (a traceback);
    the check jobs' one --timeout option (cpus check's) refuses them as it parses."""
    result = scan(run_cli, "--checks", "python", "--timeout", value, exit_code=2)
    assert result.stderr.count("\n") == 1 and "--timeout" in result.stderr
    assert "Traceback" not in result.stderr and not slurm.slurm_calls("sbatch")
