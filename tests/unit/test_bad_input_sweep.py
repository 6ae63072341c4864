"""Bad files and values in every place slurmkit takes a path or a value (issue 28, "Done means").

``test_hostile_inputs.py`` drives every command with hostile *argument text*. This one
drives them with hostile *files*: a FIFO (an ``open`` blocks for ever), a link to
``/dev/zero`` (a read never ends), bytes that are not UTF-8, numbers too big for any
type, and a home folder that cannot be searched. Each is put, in turn, wherever a
command reads a file: every file option and argument (found by walking the click tree,
so a new one is covered the day it is added), the files behind folder options (a cron
dir's manifest, a sandbox's spec), and the files named by the environment (the config
files, the exclude list, the ssh config, the health config).

Each run must end at once with exit 2 and one line on stderr, never a traceback. A run
still going after ``HANG_SECONDS`` fails (a hang detector, not a timed assertion). No
Slurm is reachable (PATH is an empty folder) and nothing outside ``tmp_path`` is touched.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import slurmkit
from slurmkit.cli import cli
from slurmkit.errors import SlurmParseError
from slurmkit.grammar import gres
from slurmkit.jobenv import slurmvars

HANG_SECONDS = 10
CODE_ROOT = Path(slurmkit.__file__).resolve().parents[1]

# The bad things a file can be; each a function of the test's folder.
FILE_KINDS = ("fifo", "dev-zero-link", "not-utf8", "huge-number", "directory")


def make_bad(folder: Path, kind: str, name: str = "bad") -> Path:
    path = folder / f"{name}-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero-link":
        path.symlink_to("/dev/zero")
    elif kind == "not-utf8":
        path.write_bytes(b"#!/bin/bash\n# caf\xe9 \xff\xfe\n")
    elif kind == "huge-number":
        path.write_text("1e400\n" + "9" * 5000 + "\n")
    elif kind == "directory":
        path.mkdir()
    else:
        raise AssertionError(kind)
    return path


# ---------------------------------------------------------------- running one case


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Hang(f"still running after {HANG_SECONDS} s")


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    problem: str | None


def invoke(args: list[str], env: dict[str, str] | None = None) -> Outcome:
    """``slurmkit ARGS`` in-process; a blocked open() is interrupted by the alarm."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    try:
        result = CliRunner().invoke(cli, args, env=env, prog_name="slurmkit")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    exc = result.exception
    problem = None
    if exc is not None and not isinstance(exc, SystemExit):
        problem = f"{type(exc).__name__}: {exc}"
    return Outcome(result.exit_code, result.stdout, result.stderr, problem)


# Printed first by every state-changing command run without a terminal: not the error.
DRY_RUN_NOTICE = "slurmkit: no terminal and no --yes: dry run only"


def assert_refused(outcome: Outcome, what: str) -> None:
    """Exit 2, one ``slurmkit: ...`` line on stderr, no traceback."""
    assert outcome.problem is None, f"{what}: {outcome.problem}\n{outcome.stderr[-1500:]}"
    assert "Traceback" not in outcome.stdout + outcome.stderr, f"{what}: {outcome.stderr}"
    assert outcome.code == 2, f"{what}: exit {outcome.code}\n{outcome.stderr[-1500:]}"
    lines = [ln for ln in outcome.stderr.splitlines() if not ln.startswith(DRY_RUN_NOTICE)]
    assert len(lines) == 1 and lines[0].startswith("slurmkit: "), f"{what}: {outcome.stderr!r}"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No Slurm, a private HOME, state and config, and the test folder as working folder."""
    for name in list(os.environ):
        if name.startswith(("SLURM", "SLURMKIT", "XDG_")):
            monkeypatch.delenv(name)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SLURMKIT_SANDBOX_DIR", str(tmp_path / "sandbox"))
    monkeypatch.chdir(tmp_path)
    import slurmkit.sandbox as sandbox

    def would_act(*args: object, **kwargs: object) -> None:
        raise AssertionError("the sweep reached sandbox up/down: nothing may start")

    monkeypatch.setattr(sandbox, "up", would_act)
    monkeypatch.setattr(sandbox, "down", would_act)
    (tmp_path / "job.slurm").write_text("#!/bin/bash\n#SBATCH -N 1\n#SBATCH -t 10\necho hi\n")
    return tmp_path


# ---------------------------------------------------------------- every file option, walked


def _commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> Iterator:
    ctx = click.Context(group, info_name="slurmkit")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


# Paths slurmkit writes (or creates), never reads: a FIFO there is replaced or refused
# by the writer, and that is the writer's test (test_files.py, test_lock_journal_owner.py).
WRITTEN = {
    # sandbox up/build --slurm-source: up would start daemons and build writes into
    # /opt/slurmkit; both are driven only to the library call (test_hostile_inputs.py).
    # The tarball is read by files.read_bounded (sandbox/build.py, sha256_of).
    ("sandbox", "up", "slurm_source"),
    ("sandbox", "build", "slurm_source"),
    # Read only after Slurm has answered (the nodes, the job, the train): they need a
    # cluster. The same readers are swept here through `run --ssh-config` and
    # `train start --state`.
    ("node", "resume", "ssh_config"),
    ("undrain", "ssh_config"),
    ("pyspy", "ssh_config"),
    ("train", "extend", "state"),
    ("train", "switch", "new_script"),
    # A watchdog's rate-limit state: a bad one is reported and the alerts still go out
    # (better a repeated alert than none): test_a_bad_watch_state_is_reported_not_obeyed.
    ("watch", "cron", "state_path"),
    ("watch", "fs", "state_path"),
    ("watch", "job", "state_path"),
    ("watch", "log", "state_path"),
    ("template", "render", "output"),
    ("hostfile", "output"),
    ("node", "drain", "lock_path"),
    ("node", "reboot", "lock_path"),
    ("node", "resume", "lock_path"),
    ("undrain", "lock_path"),
}
# Files read as text whose bytes need not be UTF-8 (logs and scans are shown with
# replacement characters), or whose number is not read: only a FIFO, a device and a
# folder must be refused there.
ANY_BYTES = {"source", "slurm_source", "log_path", "state", "state_path", "ssh_config"}
# Files a job runs and slurmkit never opens: only what is no file at all is refused.
NOT_READ = {("cron", "selfperpetuate", "script")}
# Files that a value inside cannot harm: a script is run or parsed as bash, not read
# for numbers.
SCRIPTS = {"script", "new_script", "scripts"}


@dataclass(frozen=True)
class FileCase:
    command: tuple[str, ...]
    param: str
    args: tuple[str, ...]  # with BAD where the bad path goes

    def __str__(self) -> str:
        return f"{' '.join(self.command)} {self.param}"


def _is_file_param(param: click.Parameter) -> bool:
    if param.name in {"scripts"}:  # lint SCRIPTS...: plain strings, read as files
        return True
    kind = param.type
    return isinstance(kind, click.Path) and bool(kind.file_okay) and not bool(kind.dir_okay)


# What a command needs besides the bad file to get as far as reading it.
NEEDS: dict[tuple[str, ...], list[str]] = {
    ("run",): ["--via", "ssh", "-w", "n1"],
    ("cron", "selfperpetuate"): ["--every", "1h"],
    ("node", "drain"): ["--reason", "sweep"],
}


def _filler(param: click.Parameter) -> list[str]:
    """A harmless value for another required parameter."""
    if isinstance(param.type, click.Path):
        return ["job.slurm"]
    return ["n1"]


def file_cases() -> Iterator[FileCase]:
    for path, command in _commands():
        if isinstance(command, click.Group):
            continue
        for param in command.params:
            if not _is_file_param(param) and param.name != "source":
                continue
            if (*path, param.name) in WRITTEN:
                continue
            args: list[str] = list(NEEDS.get(path, []))
            if isinstance(param, click.Option):
                args += [max(param.opts, key=len), "BAD"]
            for other in command.params:
                if isinstance(other, click.Argument) and other is not param and other.required:
                    args += _filler(other)
                elif other is param and isinstance(param, click.Argument):
                    args += ["BAD"]
            yield FileCase(path, str(param.name), (*path, *args))


FILE_CASES = list(file_cases())


def test_the_walk_finds_the_file_options() -> None:
    found = {str(c) for c in FILE_CASES}
    assert {
        "faulty excluded state",
        "faulty xid source",
        "health config_path",
        "run ssh_config",
        "lint scripts",
        "train start script",
        "template render vars_file",
    } <= found


def _kinds_for(case: FileCase) -> list[str]:
    kinds = ["fifo", "dev-zero-link", "directory"]
    if (*case.command, case.param) in NOT_READ:
        return kinds
    if case.param not in ANY_BYTES:
        kinds.append("not-utf8")
    if case.param not in ANY_BYTES | SCRIPTS:
        kinds.append("huge-number")
    return kinds


@pytest.mark.parametrize("case", FILE_CASES, ids=str)
def test_every_file_option_refuses_bad_files(world: Path, case: FileCase) -> None:
    for kind in _kinds_for(case):
        bad = make_bad(world, kind, case.param)
        args = [str(bad) if a == "BAD" else a for a in case.args]
        outcome = invoke(args)
        assert_refused(outcome, f"slurmkit {' '.join(args)} ({kind})")
        assert str(bad) in outcome.stderr, f"refused for another reason: {outcome.stderr}"


# ---------------------------------------------------------------- files behind folders


def _cron_dir(world: Path, kind: str) -> Path:
    cron = world / f"cron-{kind}"
    (cron / "scheduler").mkdir(parents=True)
    manifest = cron / "scheduler" / "slurmkit-cron.json"
    if kind == "huge-number":
        manifest.write_text('{"version": 1e400, "periods": ["' + "9" * 5000 + 's"]}')
    else:
        make_bad(world, kind).rename(manifest)
    return cron


CRON_COMMANDS = [
    ["cron", "status", "--dir"],
    ["cron", "run-now", "--dir"],
    ["cron", "start", "--dir"],
    ["cron", "stop", "--dir"],
    ["cron", "scrontab", "--dir"],
    ["cron", "cleanup", "--older-than", "1d", "--dir"],
    ["watch", "cron"],
]


@pytest.mark.parametrize("kind", FILE_KINDS)
@pytest.mark.parametrize("command", CRON_COMMANDS, ids=" ".join)
def test_a_bad_cron_manifest_is_refused(world: Path, command: list[str], kind: str) -> None:
    cron = _cron_dir(world, kind)
    assert_refused(invoke([*command, str(cron)]), f"{' '.join(command)} ({kind} manifest)")


@pytest.mark.parametrize("kind", FILE_KINDS)
def test_tab_after_a_cron_dir_with_a_bad_manifest_offers_nothing(world: Path, kind: str) -> None:
    cron = _cron_dir(world, kind)
    words = f"slurmkit cron run-now --dir {cron} "
    env = {"_SLURMKIT_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": "5"}
    outcome = invoke([], env=env)
    assert outcome.problem is None and outcome.code == 0, outcome
    assert (outcome.stdout.strip(), outcome.stderr) == ("", "")


@pytest.mark.parametrize("kind", FILE_KINDS)
@pytest.mark.parametrize("sub", ["status", "env"])
def test_a_bad_sandbox_spec_is_refused(world: Path, kind: str, sub: str) -> None:
    sandbox = world / f"sandbox-{kind}"
    sandbox.mkdir()
    spec = sandbox / "spec.json"
    if kind == "huge-number":
        spec.write_text('{"nodes": 1e400, "slurm": ' + "9" * 5000 + "}")
    else:
        make_bad(world, kind).rename(spec)
    assert_refused(invoke(["sandbox", sub, "--dir", str(sandbox)]), f"sandbox {sub} ({kind})")


# ---------------------------------------------------------------- files the environment names


def _place(world: Path, kind: str, at: Path) -> Path:
    at.parent.mkdir(parents=True, exist_ok=True)
    make_bad(world, kind).rename(at)
    return at


ENV_FILES: list[tuple[str, Callable[[Path], tuple[dict[str, str], Path]], list[str]]] = [
    # (what, where the file goes and the environment that names it, a command that reads it)
    ("SLURMKIT_CONFIG", lambda w: ({"SLURMKIT_CONFIG": str(w / "c.toml")}, w / "c.toml"),
     ["nodes", "expand", "n1"]),
    ("XDG_CONFIG_HOME", lambda w: ({"XDG_CONFIG_HOME": str(w / "cfg")},
                                   w / "cfg" / "slurmkit" / "config.toml"),
     ["nodes", "expand", "n1"]),
    ("~/.config", lambda w: ({}, w / "home" / ".config" / "slurmkit" / "config.toml"),
     ["nodes", "count", "n1"]),
    ("SLURMKIT_HEALTH_CONFIG", lambda w: ({"SLURMKIT_HEALTH_CONFIG": str(w / "h.toml")},
                                          w / "h.toml"),
     ["health", "--no-drain"]),
    ("the exclude list", lambda w: ({}, w / "state" / "slurmkit" / "excluded.json"),
     ["faulty", "excluded"]),
    ("the exclude list, rendering", lambda w: ({}, w / "state" / "slurmkit" / "excluded.json"),
     ["template", "render", "torchrun"]),
    ("~/.ssh/config", lambda w: ({}, w / "home" / ".ssh" / "config"),
     ["run", "--via", "ssh", "-w", "n1", "true"]),
]  # fmt: skip


@pytest.mark.parametrize("kind", FILE_KINDS)
@pytest.mark.parametrize("entry", ENV_FILES, ids=lambda e: e[0])
def test_files_named_by_the_environment_are_refused(
    world: Path, entry: tuple, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    what, where, command = entry
    if kind == "not-utf8" and what == "~/.ssh/config":
        return  # read as OpenSSH reads it, bytes and all: an odd byte is no reason to stop
    env, path = where(world)
    if kind == "huge-number" and what in ("the exclude list", "the exclude list, rendering"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"version": 1, "entries": [{"node": "n[1-' + "9" * 40 + ']"}]}')
    elif kind == "huge-number" and what == "~/.ssh/config":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("Host *\n  Port " + "9" * 40 + "\n")
    elif kind == "huge-number" and "HEALTH" in what:
        path.write_text("timeout = 1e400\n[[check]]\ntype = 'cmd'\nargv = ['true']\n")
        path.chmod(0o644)
    elif kind == "huge-number":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[nodes]\n[nodes.expand]\nmax = 1e400\n[nodes.count]\nmax = 1e400\n")
    else:
        _place(world, kind, path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert_refused(invoke(command), f"{what} ({kind}): slurmkit {' '.join(command)}")


# ---------------------------------------------------------------- huge numbers in config


def _number_options(
    numbers: tuple[type, ...] = (click.types.IntParamType, click.types.FloatParamType),
) -> Iterator[tuple[tuple[str, ...], str]]:
    for path, command in _commands():
        if isinstance(command, click.Group):
            continue
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, numbers):
                yield path, str(param.name)


NUMBER_OPTIONS = list(_number_options())
INT_OPTIONS = list(_number_options((click.types.IntParamType,)))


def test_the_walk_finds_number_options() -> None:
    assert (("nodes", "expand"), "limit") in NUMBER_OPTIONS
    assert len(NUMBER_OPTIONS) > 20


@pytest.mark.parametrize(
    ("value", "options"),
    [("1e400", INT_OPTIONS), ("-1e400", INT_OPTIONS), ("nan", INT_OPTIONS),
     ("9" * 5000, NUMBER_OPTIONS)],
    ids=["1e400", "-1e400", "nan", "5000-digits"],
)  # fmt: skip
def test_a_huge_number_in_a_config_file_is_one_line(
    world: Path, monkeypatch: pytest.MonkeyPatch, value: str, options: list
) -> None:
    """Each number option of each command set to a number no type holds, in the config file.

    A float option takes inf and nan from a config file as from the command line, where
    ``test_hostile_inputs.py`` drives them; an integer never can.
    """
    config = world / "config.toml"
    monkeypatch.setenv("SLURMKIT_CONFIG", str(config))
    for path, name in options:
        config.write_text(f"[{'.'.join(path)}]\n{name} = {value}\n")
        outcome = invoke([*path, "--help"])
        assert_refused(outcome, f"[{'.'.join(path)}] {name} = {value[:10]}")
        assert "config file" in outcome.stderr


# ---------------------------------------------------------------- huge counts from Slurm

HUGE = "9" * 5000  # Python refuses to read an int this long: it was a traceback
SLURM_VALUES = [
    ("SLURM_TASKS_PER_NODE", HUGE, []),
    ("SLURM_TASKS_PER_NODE", "99999999999999999999(x2)", []),
    ("SLURM_TASKS_PER_NODE", f"2(x{HUGE})", []),
    ("SLURM_NTASKS_PER_NODE", HUGE, []),
    ("SLURM_NTASKS_PER_NODE", "1e400", []),
    ("SLURM_GPUS_PER_NODE", "99999999", []),
    ("SLURM_JOB_CPUS_PER_NODE", HUGE, ["--slots", "cpus"]),
]


@pytest.mark.parametrize(("var", "value", "extra"), SLURM_VALUES, ids=lambda v: str(v)[:30])
@pytest.mark.parametrize("command", ["hostfile", "launch-env"])
def test_a_huge_count_in_slurms_environment_is_one_line(
    world: Path, monkeypatch: pytest.MonkeyPatch, command: str, var: str, value: str, extra: list
) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-2]")
    monkeypatch.setenv(var, value)
    outcome = invoke([command, *extra])
    assert_refused(outcome, f"{var}={value[:30]} slurmkit {command}")
    assert var in outcome.stderr and len(outcome.stderr) < 400, outcome.stderr


@pytest.mark.parametrize(
    "read",
    [
        lambda: gres.gpu_count("gpu:" + HUGE),  # scontrol show job -d, sinfo's Gres
        lambda: gres.gpu_count("gres/gpu=" + HUGE),
        lambda: gres.typed_gpu_count("a100:" + HUGE),  # SLURM_GPUS_PER_NODE, --gpus
        lambda: slurmvars.parse_repeated(f"{HUGE}(x2)"),
    ],
)
def test_a_5000_digit_count_from_slurm_is_a_parse_error(read: Callable[[], object]) -> None:
    with pytest.raises(SlurmParseError):
        read()


# ---------------------------------------------------------------- a home that cannot be searched


@pytest.mark.parametrize("kind", ["fifo", "dev-zero-link"])
def test_a_bad_watch_state_is_reported_not_obeyed(world: Path, kind: str) -> None:
    """The watchdogs' rate-limit state: a FIFO or a device there is named on stderr, at
    once, and the alert still goes out unthrottled (exit 1 for the stale log)."""
    log = world / "old.log"
    log.write_text("x\n")
    os.utime(log, (1, 1))
    state = make_bad(world, kind, "state")
    args = ["watch", "log", "--stale", "1h", "--notify", "cmd:/bin/true", "--state", str(state)]
    outcome = invoke([*args, str(log)])
    assert outcome.problem is None and "Traceback" not in outcome.stderr, outcome
    assert outcome.code == 1 and outcome.stdout.startswith("ALERT log"), outcome
    assert f"state file {state}: cannot read" in outcome.stderr, outcome.stderr
    assert "alerts not rate-limited" in outcome.stderr


def _without_dac_override() -> list[str]:
    """Root reads any folder: drop the capabilities that let it, so mode 000 counts."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to test an unreadable folder as root"
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


HOME_COMMANDS = [
    ["faulty", "excluded"],
    ["template", "render", "torchrun"],
    ["run", "--via", "ssh", "-w", "n1", "true"],
]


@pytest.mark.parametrize("own_config", [False, True], ids=["user-config", "SLURMKIT_CONFIG"])
def test_an_unreadable_home_is_one_line(tmp_path: Path, own_config: bool) -> None:
    """Every command reads ~/.config first; with SLURMKIT_CONFIG set, the next file in HOME
    (the exclude list, the ssh config, the watch state) is the one that cannot be read."""
    home = tmp_path / "home"
    home.mkdir()
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    config = tmp_path / "config.toml"
    config.write_text("")
    env = {"PATH": str(empty), "HOME": str(home), "LANG": "C.UTF-8", "PYTHONPATH": str(CODE_ROOT)}
    if own_config:
        env["SLURMKIT_CONFIG"] = str(config)
    home.chmod(0)
    try:
        for command in HOME_COMMANDS if own_config else [["nodes", "expand", "n1"], *HOME_COMMANDS]:
            done = _process(tmp_path, command, env)
            assert_refused(done, f"slurmkit {' '.join(command)} (HOME mode 000)")
            assert str(home) in done.stderr
    finally:
        home.chmod(0o700)


def _process(cwd: Path, command: list[str], env: dict[str, str]) -> Outcome:
    try:
        done = subprocess.run(
            [*_without_dac_override(), sys.executable, "-m", "slurmkit", *command],
            capture_output=True,
            env=env,
            cwd=cwd,
            timeout=HANG_SECONDS * 3,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return Outcome(-1, "", "", f"still running after {HANG_SECONDS * 3} s")
    return Outcome(
        done.returncode, done.stdout.decode(), done.stderr.decode(errors="replace"), None
    )


def test_the_bad_files_are_what_they_claim(tmp_path: Path) -> None:
    """The sweep is only as good as its bad files: each is what the kind says."""
    assert make_bad(tmp_path, "fifo").is_fifo()
    zero = make_bad(tmp_path, "dev-zero-link")
    assert zero.is_symlink() and zero.resolve() == Path("/dev/zero")
    with pytest.raises(UnicodeDecodeError):
        make_bad(tmp_path, "not-utf8").read_bytes().decode("utf-8")
    assert json.loads(make_bad(tmp_path, "huge-number").read_text().split()[0]) == float("inf")
