"""The one confirm rule, over every command of the CLI (issue 14, finding 10).

The README promises: every state-changing command takes ``--dry-run``, asks on a
terminal, and without a terminal acts only with ``--yes``; otherwise it reports what it
would do, and exits 1 when that skipped a change (:mod:`slurmkit.cli._confirm`).

Every leaf command of the registry must be classified below, so a new command cannot
be forgotten: a command with a ``--yes`` option must be in :data:`CONFIRMED`, and every
command in :data:`CONFIRMED` must have both ``--yes`` and ``--dry-run``. Each confirmed
command is then run in-process the way cron runs it (click's CliRunner: stdin is empty,
not a terminal; no ``--yes``) against a fake Slurm at the ``_proc`` seam that records
every argv, in a state where it *would* change something, and must run no ``scontrol
update|hold|release|requeue|...``, no ``scancel``, no ``sbatch`` (beyond what
:data:`CONFIRMED` allows, e.g. the scan job of ``faulty scan --drain``), change no
file it manages, print the dry-run notice and exit 1.

Decision (documented in each command's help): commands whose only effect is to submit
the new job their arguments describe (:data:`SUBMITS_ONLY`) are the request itself,
like ``sbatch``: they need no ``--yes``. They still must never cancel, hold, release,
update or requeue anything, which is checked for the ones that can be driven here.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from slurmkit import _proc
from slurmkit.cli import cli
from tests.fakes import FakeSlurm

# ------------------------------------------------------------------ the classification

# Commands that change or remove what exists: the rule applies. The value is the extra
# flag that makes the command change state ("" when it always may).
CONFIRMED: dict[str, str] = {
    "undrain": "",
    "faulty scan": "--drain",
    "faulty excluded": "",  # --clear / --expired remove entries of the exclude list
    "job extend": "",
    "train hold": "",
    "train release": "",
    "train extend": "",
    "train switch": "",
    "train stop": "",
    "train kill-switch": "",
    "train save-switch": "",
    "train restart-run": "",
    "train settle": "",  # a person's answer: adopt an unprovable array, or none
    "cron stop": "",
    "cron cleanup": "",
    "node drain": "",
    "node resume": "",
    "node reboot": "",
}
# Commands that only submit the new job(s) their arguments name: no --yes (see above).
SUBMITS_ONLY: dict[str, str] = {
    "train start": "submits the new train's array",
    "cron start": "submits the chains named, never a second one",
    "cron run-now": "submits the jobs of the folders named",
    "cron selfperpetuate": "submits the self-perpetuating job named",
    "template submit": "submits the template rendered",
    "cpus check": "submits its measuring job",
    "faulty scan": "submits the scan job (draining needs --drain: see CONFIRMED)",
}
# Commands that change no cluster state (they read, print, write a file you name, or
# run what you typed): the rule does not apply, and they must not grow a --yes unseen.
NO_STATE_CHANGE: set[str] = {
    "completion",  # prints the shell script
    "config show",
    "cron init",  # creates the cron dir you name
    "cron scrontab",
    "cron status",
    "faulty history",
    "faulty gpu-health",  # parses the file named
    "faulty xid",  # parses the file named
    "hostfile",
    "job info",
    "launch-env",
    "log show",  # reads the audit log
    "node show",
    "lint",
    "nodes count",
    "nodes diff",
    "nodes drained",
    "nodes expand",
    "nodes fold",
    "nodes intersect",
    "nodes union",
    "nodes xor",
    "pyspy",  # reads stacks
    "run",  # runs exactly the command you typed, like pdsh
    "sandbox build",  # a cached Slurm root for the local test cluster (issue 18)
    "sandbox down",  # the local test cluster this user started, not a site's Slurm
    "sandbox env",
    "sandbox fault",  # nft rules on that local test cluster's loopback addresses
    "sandbox status",
    "sandbox up",
    "template list",
    "template render",
    "template show",
    "train should-stop",
    "train status",
    "watch cron",
    "watch fs",
    "watch job",
    "watch log",
    "why",  # reads what Slurm and the job's logs say (--stacks: like pyspy)
}


# Slurm's own agent (HealthCheckProgram): slurmd runs it with no terminal and no arguments;
# it drains or resumes only the node it runs on, with its own reason, never an admin's
# drain. --dry-run shows what it would do; a --yes would have nobody to answer it.
SELF_ONLY: set[str] = {"health"}


def _leaves() -> dict[str, click.Command]:
    ctx = click.Context(cli)

    def walk(command: click.Command, path: list[str]) -> Iterator[tuple[str, click.Command]]:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, f"{' '.join([*path, name])} does not load"
                yield from walk(sub, [*path, name])
        else:
            yield " ".join(path), command

    return dict(walk(cli, []))


def _options(command: click.Command) -> set[str]:
    return {o for p in command.params for o in getattr(p, "opts", []) if o.startswith("--")}


def test_every_command_is_classified() -> None:
    leaves = _leaves()
    classified = set(CONFIRMED) | set(SUBMITS_ONLY) | NO_STATE_CHANGE | SELF_ONLY
    unknown = sorted(set(leaves) - classified)
    assert not unknown, (
        f"new command(s) {unknown}: add each to CONFIRMED (it changes or removes what "
        "exists: --dry-run, --yes, the one confirm rule), SUBMITS_ONLY or NO_STATE_CHANGE"
    )
    assert not sorted(classified - set(leaves)), "classified commands that no longer exist"


def test_every_command_with_yes_follows_the_rule_and_vice_versa() -> None:
    leaves = _leaves()
    with_yes = {path for path, command in leaves.items() if "--yes" in _options(command)}
    assert with_yes == set(CONFIRMED)
    for path in CONFIRMED:
        options = _options(leaves[path])
        assert {"--yes", "--dry-run"} <= options, f"{path} lacks --dry-run or --yes"
        flag = CONFIRMED[path]
        assert not flag or flag in options, f"{path}: no {flag}"
    for path in SUBMITS_ONLY.keys() - CONFIRMED.keys():
        assert "--yes" not in _options(leaves[path])


def test_submitting_commands_say_in_their_help_why_they_need_no_yes() -> None:
    leaves = _leaves()
    for path in ("train start", "cron start", "cron run-now", "cron selfperpetuate"):
        assert "no --yes" in (leaves[path].help or ""), path


# ------------------------------------------------------------------ the fake Slurm

# scontrol subcommands that change something; every other one (show, ping, ...) reads.
SCONTROL_CHANGES = {
    "update",
    "hold",
    "uhold",
    "release",
    "requeue",
    "requeuehold",
    "suspend",
    "resume",
    "top",
    "create",
    "delete",
    "reboot",
    "reconfigure",
    "notify",
    "cancel_reboot",
    "takeover",
    "shutdown",
}
SUBMITTERS = {"sbatch", "salloc", "scrontab"}
CANCELLERS = {"scancel", "sacctmgr"}


def changes_state(argv: tuple[str, ...]) -> bool:
    program = os.path.basename(argv[0])
    if program in SUBMITTERS | CANCELLERS:
        return True
    if program == "scontrol":
        words = [w for w in argv[1:] if not w.startswith("-")]
        return bool(words) and words[0].lower() in SCONTROL_CHANGES
    return False


def changing(fake: FakeSlurm) -> list[str]:
    """The state-changing commands the fake Slurm was asked to run, as command lines."""
    return [shlex.join(c) for c in fake.calls if changes_state(c)]


@dataclass
class Scenario:
    """A command line, its fake Slurm, the state-changing calls it may make anyway
    (the scan job of ``faulty scan --drain``), and a check that nothing it manages changed."""

    args: list[str]
    fake: FakeSlurm
    allowed: Callable[[tuple[str, ...]], bool] = lambda argv: False
    unchanged: Callable[[], None] = lambda: None


# ------------------------------------------------------------------ scenarios


def _undrain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scenario:
    from test_undrain_flow import Cluster, _drained

    cluster = Cluster(FakeSlurm())
    _drained(cluster, 2)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    return Scenario(["undrain", "--lock", str(tmp_path / "undrain.lock")], cluster.slurm)


def _faulty_drain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scenario:
    from test_faulty_scan import CMD, CheckJobCluster, failing_scan

    cluster = CheckJobCluster(FakeSlurm())
    failing_scan(cluster)
    monkeypatch.chdir(tmp_path)
    return Scenario(
        ["faulty", "scan", "--dir", "work", "--checks", f"python,{CMD}", "--drain"],
        cluster.slurm,
        allowed=lambda argv: argv[0] == "sbatch",  # the scan itself: SUBMITS_ONLY
    )


def _job_extend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scenario:
    from test_cli_job import SHOW3, _limited

    fake = FakeSlurm().on(["scontrol", "update", "**"]).on(SHOW3, _limited("00:05:00"))
    return Scenario(["job", "extend", "3", "+2h"], fake)


def _train(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: bool = False):
    """A started train with a running run and pending ones; its folder's files, to compare."""
    from test_train_cli import TrainCluster, running_and_pending, script

    fake = TrainCluster(FakeSlurm())
    monkeypatch.setattr(_proc, "runner", fake.slurm)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLURMKIT_KILL_SWITCH", raising=False)
    from click.testing import CliRunner

    started = CliRunner().invoke(cli, ["train", "start", script(tmp_path), "--name", "tr"])
    assert started.exit_code == 0, started.output
    fake.queue = running_and_pending(held=held)
    fake.slurm.log.clear()
    folder = tmp_path / ".slurmkit" / "trains" / "tr"
    script(tmp_path, name="b.slurm")
    return fake, folder


def _snapshot(folder: Path) -> Callable[[], None]:
    def read() -> dict[str, str]:
        return {
            p.name: os.readlink(p) if p.is_symlink() else p.read_text()
            for p in sorted(folder.iterdir())
            if p.name != ".lock"
        }

    before = read()

    def unchanged() -> None:
        assert read() == before

    return unchanged


def _train_command(
    *args: str, held: bool = False, switch_on: bool = False, unprovable: bool = False
):
    def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scenario:
        fake, folder = _train(tmp_path, monkeypatch, held)
        if switch_on:
            (folder / "kill-switch").write_text("set by a test\n")
        if unprovable:  # an open extend whose array cannot be proven: settle has work
            from test_train_adoption import open_unprovable_extend

            open_unprovable_extend(folder, monkeypatch)
        return Scenario(["train", *args], fake.slurm, unchanged=_snapshot(folder))

    return make


def _cron(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from slurmkit.cron import CronDir, parse_period
    from slurmkit.cron.setup import init_cron_dir

    monkeypatch.delenv("SLURMKIT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    cron = CronDir(tmp_path / "cron")
    init_cron_dir(cron, extra_periods=[parse_period("30m")])
    return FakeSlurm().ignore_args("--comment=slurmkit:"), cron


def _cron_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scenario:
    from test_cron_chain import CHAINS, job_row, squeue

    fake, cron = _cron(tmp_path, monkeypatch)
    fake.on(squeue(CHAINS), job_row("80", "cron-hourly") + job_row("81", "cron-daily"))
    return Scenario(["cron", "stop", "--dir", str(cron.root)], fake)


def _cron_cleanup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scenario:
    from test_cron_cleanup import make

    fake, cron = _cron(tmp_path, monkeypatch)
    log = make(cron.root / "cron.hourly" / "old-1.out", 30)

    def unchanged() -> None:
        assert log.exists()

    return Scenario(["cron", "cleanup", "--dir", str(cron.root)], fake, unchanged=unchanged)


def _faulty_excluded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scenario:
    from slurmkit.faulty import excluded

    state = tmp_path / "excluded.json"
    excluded.record(state, [("node-3", "gpu-health", "row remap pending")])
    before = state.read_text()

    def unchanged() -> None:
        assert state.read_text() == before

    return Scenario(
        ["faulty", "excluded", "--state", str(state), "--clear", "node-3"],
        FakeSlurm().on(["**"], rc=1, stderr="no Slurm here"),
        unchanged=unchanged,
    )


def _node(*args: str) -> Callable[[Path, pytest.MonkeyPatch], Scenario]:
    def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Scenario:
        from test_node import Nodes

        nodes = Nodes(FakeSlurm(), {"node-1": ("IDLE", None), "node-2": ("IDLE+DRAIN", "fan")})
        lock = ["--lock", str(tmp_path / "node.lock")]
        return Scenario(["node", *args, *lock], nodes.slurm)

    return make


SCENARIOS: dict[str, Callable[[Path, pytest.MonkeyPatch], Scenario]] = {
    "undrain": _undrain,
    "faulty scan": _faulty_drain,
    "faulty excluded": _faulty_excluded,
    "job extend": _job_extend,
    "train hold": _train_command("hold"),
    "train release": _train_command("release", held=True),
    "train extend": _train_command("extend", "--runs", "3"),
    "train switch": _train_command("switch", "b.slurm"),
    "train stop": _train_command("stop", "--now"),
    "train kill-switch": _train_command("kill-switch", "on"),
    "train save-switch": _train_command("save-switch", "on"),
    "train restart-run": _train_command("restart-run"),
    "train settle": _train_command("settle", "--none", unprovable=True),
    "cron stop": _cron_stop,
    "cron cleanup": _cron_cleanup,
    "node drain": _node("drain", "node-1", "--reason", "fan"),
    "node resume": _node("resume", "node-2", "--no-check"),
    "node reboot": _node("reboot", "node-1"),
}
EXTRA_SCENARIOS = {
    "train kill-switch off": _train_command("kill-switch", "off", switch_on=True),
    "train stop (pending only)": _train_command("stop"),
}


def test_every_confirmed_command_has_a_scenario() -> None:
    assert set(SCENARIOS) == set(CONFIRMED)


@pytest.mark.parametrize("name", [*SCENARIOS, *EXTRA_SCENARIOS])
def test_without_terminal_or_yes_nothing_changes_and_the_exit_is_1(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli
) -> None:
    for variable in [v for v in os.environ if v.startswith("SLURM_")]:
        monkeypatch.delenv(variable)
    scenario = {**SCENARIOS, **EXTRA_SCENARIOS}[name](tmp_path, monkeypatch)
    monkeypatch.setattr(_proc, "runner", scenario.fake)
    result = run_cli(*scenario.args, exit_code=None)  # CliRunner: stdin empty, not a tty
    assert "Traceback" not in result.stderr
    changed = [c for c in scenario.fake.calls if changes_state(c) and not scenario.allowed(c)]
    assert changed == [], f"{name} changed cluster state without --yes: {changed}"
    scenario.unchanged()
    assert "no terminal and no --yes: dry run only" in result.stderr, result.stderr
    assert result.exit_code == 1, (
        f"{name}: a forced dry run that skipped a change must exit 1, not {result.exit_code}\n"
        f"{result.stdout}{result.stderr}"
    )


@pytest.mark.parametrize(
    "name",
    [
        "train hold",
        "train stop",
        "train switch",
        "train kill-switch",
        "train save-switch",
        "train restart-run",
        "cron stop",
    ],
)
def test_with_yes_the_same_scenario_acts(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli
) -> None:
    """The scenarios are live: with --yes they do change something (the test above is not
    vacuous)."""
    scenario = SCENARIOS[name](tmp_path, monkeypatch)
    if name == "cron stop":
        from test_cron_chain import USER, squeue

        chains = ["cron-hourly", "cron-daily"]
        scenario.fake.on(squeue(chains), "")
        for chain in chains:
            scenario.fake.on(["scancel", f"--name={chain}", f"--user={USER}"], "")
    monkeypatch.setattr(_proc, "runner", scenario.fake)
    result = run_cli(*scenario.args, "--yes", exit_code=None)
    if name in ("train switch", "train kill-switch", "train save-switch"):
        with pytest.raises(AssertionError):
            scenario.unchanged()
    else:
        assert changing(scenario.fake), f"{name} --yes changed nothing: {result.stderr}"
    assert "dry run only" not in result.stderr


# ------------------------------------------------------------------ submitting commands


def _submitted_only(fake: FakeSlurm) -> None:
    others = [c for c in changing(fake) if not c.startswith("sbatch ")]
    assert others == [], f"a submitting command changed what exists: {others}"
    assert any(c.startswith("sbatch ") for c in changing(fake))


def test_train_start_without_terminal_only_submits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli
) -> None:
    from test_train_cli import TrainCluster, script

    fake = TrainCluster(FakeSlurm()).slurm
    monkeypatch.setattr(_proc, "runner", fake)
    monkeypatch.chdir(tmp_path)
    run_cli("train", "start", script(tmp_path), "--name", "tr")
    _submitted_only(fake)


def test_cron_start_and_run_now_without_terminal_only_submit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli
) -> None:
    from test_cron_chain import squeue

    fake, cron = _cron(tmp_path, monkeypatch)
    sched = cron.scheduler
    fake.on(squeue(["cron-hourly"]), "")
    fake.on(["sbatch", "--parsable", f"--chdir={sched}", str(sched / "cron-hourly.slurm")], "50\n")
    folder = cron.root / "cron.hourly"
    (folder / "a.slurm").write_text("#!/bin/bash\n")
    fake.on(["sbatch", "--parsable", f"--chdir={folder}", str(folder / "a.slurm")], "51\n")
    monkeypatch.setattr(_proc, "runner", fake)
    out = run_cli("cron", "start", "--dir", str(cron.root), "hourly")
    assert "started, job 50" in out.stdout
    out = run_cli("cron", "run-now", "--dir", str(cron.root), "hourly")
    assert "job=51" in out.stdout
    _submitted_only(fake)
    assert json.dumps(fake.calls)  # every call was an argv list of strings
