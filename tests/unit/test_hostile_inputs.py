"""Every subcommand, driven with hostile inputs, ends in one of the documented ways.

Issue 14's bad-input sweep found 15 tracebacks, two hangs and ten misleading
successes by hand. This test makes that class of bug fail the suite: it walks the
click command tree (so a new command is covered the day it is registered), and
gives each command's arguments and options hostile values -- control characters,
huge numbers, brackets, empty strings, values starting with ``-``, NUL-free
binary (as Python sees non-UTF-8 argv) -- plus a hand list of inputs that broke
slurmkit before. A run fails on any traceback, any exit code outside 0/1/2/130, or
one that is still running after 10 s (a hang guard, not a timing assertion).

No Slurm is reachable: PATH is an empty directory, HOME, the working directory and
the sandbox directory are temporary. Running as root, nothing here may touch the
machine: absolute paths in generated values are moved under the temporary
directory, the network is refused, signals other than 0 are refused, and ``sandbox
up``/``down`` are driven up to the library call that would start or stop daemons.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurmkit.cli import cli

HANG_SECONDS = 10
OK_EXITS = {0, 1, 2, 130}


# ---------------------------------------------------------------- the command tree


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]
    arguments: tuple[click.Argument, ...]
    options: tuple[click.Option, ...]

    def __str__(self) -> str:
        return " ".join(self.path)


def walk(group: click.Group = cli, path: tuple[str, ...] = ()) -> Iterator[Command]:
    """Every command and group below ``group``, from the lazy registries."""
    ctx = click.Context(group, info_name="slurmkit")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        here = (*path, name)
        yield Command(
            here,
            tuple(p for p in command.params if isinstance(p, click.Argument)),
            tuple(
                p
                for p in command.params
                if isinstance(p, click.Option) and not p.is_flag and p.name != "help"
            ),
        )
        if isinstance(command, click.Group):
            yield from walk(command, here)


COMMANDS = tuple(walk())


def test_the_walk_finds_every_registered_command() -> None:
    found = {str(c) for c in COMMANDS}
    assert {"nodes expand", "nodes drained", "lint", "run", "sandbox up", "train start"} <= found
    from slurmkit.cli import SUBCOMMANDS

    assert {c.path[0] for c in COMMANDS} == set(SUBCOMMANDS)


# ---------------------------------------------------------------- the environment


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with no Slurm, no network and nothing outside ``tmp_path`` to harm."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    for name in list(os.environ):
        if name.startswith(("SLURM", "SLURMKIT")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("SLURMKIT_SANDBOX_DIR", str(tmp_path / "sandbox"))
    monkeypatch.chdir(tmp_path)

    def no_network(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in the hostile-input test")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    real_kill = os.kill

    def kill(pid: int, sig: int) -> None:
        if sig != 0:
            raise PermissionError(f"signal {sig} to {pid} refused in the hostile-input test")
        real_kill(pid, 0)

    monkeypatch.setattr(os, "kill", kill)
    monkeypatch.setattr(os, "killpg", kill)
    import slurmkit.sandbox as sandbox

    def would_act(*args: object, **kwargs: object) -> None:
        raise _WouldAct

    monkeypatch.setattr(sandbox, "up", would_act)
    monkeypatch.setattr(sandbox, "down", would_act)
    return tmp_path


class _WouldAct(Exception):
    """``sandbox up``/``down`` got past parsing and validation: as far as this test goes."""


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


def invoke(args: list[str], stdin: bytes = b"") -> Outcome:
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    try:
        result = CliRunner().invoke(cli, args, input=stdin, prog_name="slurmkit")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    problem = None
    exc = result.exception
    if isinstance(exc, _WouldAct):
        return Outcome(0, result.stdout, result.stderr, None)
    if exc is not None and not isinstance(exc, SystemExit):
        problem = f"{type(exc).__name__}: {exc}"
    elif result.exit_code not in OK_EXITS:
        problem = f"exit code {result.exit_code}"
    elif "Traceback (most recent call last)" in result.stdout + result.stderr:
        problem = "a traceback was printed"
    return Outcome(result.exit_code, result.stdout, result.stderr, problem)


def check(args: list[str], stdin: bytes = b"") -> Outcome:
    outcome = invoke(args, stdin)
    assert outcome.problem is None, (
        f"slurmkit {' '.join(repr(a)[:80] for a in args)}: {outcome.problem[:300]}\n"
        f"{outcome.stderr[-2000:]}"
    )
    return outcome


# ---------------------------------------------------------------- hostile values

NASTIES = [
    "",
    " ",
    ",",
    ",,,",
    "-",
    "--",
    "-1",
    "0",
    "nan",
    "inf",
    "-inf",
    "1e999",
    "\n",
    "\x1b[2J",
    "\x1f",
    "a\x1fb\nc",
    "\u2028",
    "\udcff\udcfe",  # non-UTF-8 argv bytes, as Python decodes them
    "[",
    "]",
    "n[",
    "n]",
    "n[]",
    "n[1-",
    "n[1-10^30]",
    "n[1-1000000000000000000000000000000]",
    "n[0-99999999999999999999999]",
    "a[1-200]b[1-200]c[1-2]",
    "n" + "7" * 40_000 + "a1b",
    "n" + "[1-2]" * 20_000,
    "9" * 5000,
    "%s%n%x",
    "{{ 7*7 }}",
    "$(reboot)",
    "`id`",
    "'; rm -rf / #",
    "~",
    ".",
    "..",
    "dir/",
    "a" * 10_000,
]


def _relative(value: str) -> str:
    """Generated values never name a path outside the test's directory (we may be root)."""
    while value.startswith("/") or ".." in value:
        value = value.lstrip("/").replace("..", "_")
    return value


_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=24
) | st.text(alphabet=st.characters(max_codepoint=0x7F, exclude_characters="\x00"), max_size=12)
_BINARY = st.binary(max_size=24).filter(lambda b: b"\0" not in b)
HOSTILE = st.one_of(
    st.sampled_from(NASTIES),
    _TEXT,
    _TEXT.map(lambda s: "-" + s),
    _BINARY.map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.from_regex(r"[a-z]{0,3}\[[0-9,\-\[\]/^%]{0,10}\]?[a-z0-9]{0,3}", fullmatch=True),
).map(_relative)


def _no_limit(value: str) -> bool:
    """``--max 0`` (or a huge --max) lifts the limit on purpose: expanding n[1-10**30] then
    runs as long as asked, which is no hang."""
    digits = value.strip().lstrip("+")
    return digits.isascii() and digits.isdigit() and (len(digits) > 7 or int(digits) == 0)


_MAX_VALUES = HOSTILE.filter(lambda value: not _no_limit(value))


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[list[str], bytes]:
    command = draw(st.sampled_from(COMMANDS))
    args = list(command.path)
    chosen = (
        draw(st.lists(st.sampled_from(command.options), max_size=2, unique=True))
        if command.options
        else []
    )
    for option in chosen:
        if option.name == "directory" and command.path[:1] == ("sandbox",):
            continue  # the sandbox dir stays the temporary one
        values = _MAX_VALUES if option.name == "limit" else HOSTILE
        args += [max(option.opts, key=len), draw(values)]
    positional: list[str] = []
    for argument in command.arguments:
        many = argument.nargs == -1 or argument.nargs > 1
        low = 1 if argument.required else 0
        count = draw(st.integers(min_value=low, max_value=2 if many else 1))
        positional += [draw(HOSTILE) for _ in range(count)]
    if positional and draw(st.booleans()):
        args.append("--")  # let '-'-leading values reach the command
    args += positional
    stdin = draw(st.one_of(st.just(b""), _BINARY, st.sampled_from([b"n[1-3]\n", b"\xff\xfe"])))
    return args, stdin


@settings(
    max_examples=int(os.environ.get("SLURMKIT_HOSTILE_EXAMPLES", "3000")),
    deadline=None,  # the 10 s hang guard is ours (SIGALRM), not a timing assertion
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
@given(line=command_lines())
def test_every_command_survives_hostile_values(world: Path, line: tuple[list[str], bytes]) -> None:
    args, stdin = line
    check(args, stdin)


# ---------------------------------------------------------------- the hand list


def _hand_cases() -> Iterator[list[str]]:
    """Each known nasty as the first argument (or first option) of every command."""
    picks = [v for v in NASTIES if len(v) < 200] + [
        "n[1-10^30]",
        "n[1-1000000000000000000000000000000]",
        "n[0-99999999999999999999999]",
    ]
    for command in COMMANDS:
        for value in picks[:: max(1, len(picks) // 8)]:
            if command.arguments:
                yield [*command.path, "--", value]
            elif command.options:
                option = command.options[0]
                if option.name == "directory" and command.path[:1] == ("sandbox",):
                    continue
                yield [*command.path, max(option.opts, key=len), value]


KNOWN = [
    ["nodes", "count", "n[1-1000000000000000000000000000000]"],
    ["nodes", "count", "--unique", "n[1-1000000000000000000000000000000]"],
    ["nodes", "expand", "n[0-99999999999999999999999]"],
    ["nodes", "count", "n" + "[1-2]" * 20_000],
    ["nodes", "fold", "n" + "[1-2]" * 20_000],
    ["nodes", "fold", "--keep-order", "--max", "1000", "a[1-200]b[1-200]c[1-2]"],
    ["nodes", "fold", "n" + "7" * 40_000 + "a1b"],
    ["nodes", "fold", "--keep-order", "n" + "7" * 40_000 + "a1b"],
    ["nodes", "expand", "--max", "2", "a,b,a"],
    ["nodes", "expand", ",,,"],
    ["run", "--timeout", "nan", "-w", "n1", "true"],
    ["run", "--timeout", "inf", "-w", "n1", "true"],
    ["run", "--connect-timeout", "nan", "-w", "n1", "true"],
    ["cpus", "check", "--timeout", "nan"],
    ["cpus", "check", "--timeout", "inf"],
    ["run", "-w", "-oProxyCommand=x", "true"],
    ["hostfile", "--slots", "nan"],
    ["lint", "/dev/zero"],
    ["lint", "-"],
    ["nodes", "--jobid", "1"],
    ["nodes", "drained"],
    ["undrain", "-w", ""],
    ["undrain", "-w", ","],
    ["bogus"],
    ["nodes", "expand", "--max", "x\ny", "n1"],
    # found by this test: non-UTF-8 argv echoed to a strict stdout, a file name too long,
    # an unknown ~user, a 5000-digit count, a non-UTF-8 path written into a file
    ["nodes", "expand", "n\udc80"],
    ["train", "status", "--dir", "n" + "7" * 300],
    ["train", "should-stop", "--dir", "n" + "7" * 300],
    ["cron", "cleanup", "--older-than", "1d", "--dir", "~nosuchuser"],
    ["watch", "fs", "--min-free-inodes", "9" * 5000, "."],
    ["cron", "init", "\udca3x"],
    ["hostfile", "--nodelist", "E\udcddw", "--output", "out"],
    ["job", "extend", "1", "9" * 5000],
    ["faulty", "history", "--since", "1" + "0" * 40],
    ["job", "extend", "1", "+" + "9" * 5000 + "d"],
]


@pytest.mark.parametrize("args", KNOWN, ids=lambda a: " ".join(a)[:60])
def test_known_nasty_inputs(world: Path, args: list[str]) -> None:
    outcome = check(args)
    if outcome.code == 2:
        assert outcome.stderr.count("\n") == 1, outcome.stderr  # one line, as promised


# Issue 21 item 6: the three node-list runaways, with what each must answer (the
# timings are in benchmarks/bench_runaway.py; here only results and refusals).
LONG_NAME = "n" + "7" * 40_000 + "a1b"


@pytest.mark.parametrize(
    "text",
    [
        "a[1-200]b[1-200]c[1-2]",  # 40,000 entries, 80,000 names
        "a[1-2000]b[1-2000]c[1-2]",  # 4,000,000 entries: took 42 s and 1 GiB
        "a[1-200]b[1-200]c[1-2]x",  # text after the last bracket: every name listed
        "a[1-20]b[1-20]c[1-2],a[1-20]b[1-20]c[1-2],a[1-20]b[1-20]c[1-2]",  # 1200 in three
    ],
)
def test_keep_order_fold_is_refused_past_max(world: Path, text: str) -> None:
    outcome = check(["nodes", "fold", "--keep-order", "--max", "1000", text])
    assert (outcome.code, outcome.stdout) == (2, "")
    assert outcome.stderr.startswith("slurmkit: too many names") and "limit 1000" in outcome.stderr
    sorted_fold = check(["nodes", "fold", "--max", "1000", text])
    assert (sorted_fold.code, sorted_fold.stdout) == (2, "")  # the same answer as sorted


def test_keep_order_fold_under_max_still_folds(world: Path) -> None:
    outcome = check(["nodes", "fold", "--keep-order", "--max", "1000", "a[1-20]b[1-20]c[1-2]"])
    assert outcome.code == 0
    assert outcome.stdout.startswith("a1b1c[1-2],a2b1c[1-2],") and outcome.stdout.count(",") == 399


@pytest.mark.parametrize("order", [[], ["--keep-order"]])
def test_a_40000_character_name_folds_to_itself(world: Path, order: list[str]) -> None:
    outcome = check(["nodes", "fold", *order, LONG_NAME])
    assert (outcome.code, outcome.stdout) == (0, LONG_NAME + "\n")


def test_multi_dim_refuses_the_40000_digit_inner_number_in_one_line(world: Path) -> None:
    """--multi-dim folds every number, so the inner 40,000-digit one must be read: refused."""
    outcome = check(["nodes", "fold", "--multi-dim", LONG_NAME])
    assert (outcome.code, outcome.stdout) == (2, "")
    assert "longer than 4000 digits" in outcome.stderr and outcome.stderr.count("\n") == 1


def test_a_40000_digit_name_past_the_digit_limit_is_refused_in_one_line(world: Path) -> None:
    outcome = check(["nodes", "fold", "n" + "7" * 40_000])
    assert (outcome.code, outcome.stdout) == (2, "")
    assert "longer than 4000 digits" in outcome.stderr and outcome.stderr.count("\n") == 1


def test_limit_error_names_the_copy_that_crossed_it(world: Path) -> None:
    outcome = check(["nodes", "expand", "--max", "2", "a,b,a"])
    assert (outcome.code, outcome.stdout) == (2, "")
    assert "at position 5" in outcome.stderr  # the second 'a', not the first (position 1)


@pytest.mark.parametrize("args", [["nodes", "diff", "-"], ["nodes", "fold", "--", "-"]])
def test_non_utf8_stdin(world: Path, args: list[str]) -> None:
    assert check(args, b"n1,\xff\xfe,n2\n").code == 0


def test_known_files(world: Path) -> None:
    fifo = world / "pipe"
    os.mkfifo(fifo)
    deep = world / "deep.sh"
    deep.write_text("#!/bin/bash\nx=" + "$(" * 5000 + "true" + ")" * 5000 + "\n")
    binary = world / "bin.sh"
    binary.write_bytes(b"#!/bin/bash\n" + bytes(range(256)) * 4)
    big = world / "big.sh"
    with big.open("wb") as out:
        out.truncate(100 * 1024 * 1024)
    for path in (fifo, binary, big, world):
        assert check(["lint", str(path)]).code == 2
    assert check(["lint", str(deep)]).code == 0  # read by the grammar, no RecursionError
    sandbox = world / "sandbox"
    sandbox.mkdir()
    for spec in ("{", "[1, 2]", "null", '{"nodes": "x"}'):
        (sandbox / "spec.json").write_text(spec)
        for sub in ("status", "env"):
            check(["sandbox", sub, "--dir", str(sandbox)])
    env_cases = [
        {"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "2(x"},
        {"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "n[", "SLURM_TASKS_PER_NODE": "1"},
        {"SLURM_JOB_ID": "\n", "SLURM_JOB_NODELIST": "n[1-10^30]"},
    ]
    for env in env_cases:
        for command in (["hostfile"], ["launch-env"]):
            result = CliRunner().invoke(cli, command, env=env, prog_name="slurmkit")
            assert result.exit_code in OK_EXITS and not isinstance(result.exception, Exception), (
                env,
                result.output,
            )


@pytest.mark.parametrize(
    "args", list(_hand_cases()), ids=lambda a: " ".join(a)[:50].encode("unicode_escape").decode()
)
def test_every_command_with_each_known_nasty(world: Path, args: list[str]) -> None:
    check(args)


# ---------------------------------------------------------------- a few real processes


@pytest.mark.parametrize(
    "args",
    [
        ["nodes", "count", "n[1-1000000000000000000000000000000]"],
        ["nodes", "expand", "n" + "[1-2]" * 20_000],
        ["run", "--timeout", "nan", "-w", "n1", "true"],
        ["lint", "/dev/zero"],
        ["nodes", "expand", "--max", "\udcff", "n1"],
        ["hostfile"],
        ["bogus", "\x1b[2J"],
    ],
    ids=lambda a: " ".join(a)[:40].encode("unicode_escape").decode(),
)
def test_in_a_real_process(tmp_path: Path, args: list[str]) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = {"PATH": str(empty), "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-m", "slurmkit", *args],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=HANG_SECONDS * 3,
        stdin=subprocess.DEVNULL,
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode in OK_EXITS, stderr
    assert b"Traceback" not in done.stderr + done.stdout, stderr
    if done.returncode == 2:
        assert stderr.count("\n") == 1 and stderr.startswith("slurmkit: "), stderr
