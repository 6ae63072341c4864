"""``slurmkit run`` at the argv seam: grouped output, JSON, exit codes, bad input."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.fakes import Call, FakeSlurm

TOKEN = re.compile(r"__slurmkit_end_[0-9a-f]{16}__")


def _nodes_answer(call: Call) -> tuple[int, str, str]:
    """node-1..3 answer "up", node-4 exits 3, node-5 is unreachable."""
    t = TOKEN.findall(call.argv[-1])[-1]
    out = "".join(f"node-{i}: up\nnode-{i}: {t} rc=0 t0=1 t1=2\n" for i in (1, 2, 3))
    out += f"node-4: up\nnode-4: {t} rc=3 t0=1 t1=2\n"
    err = (
        "node-5: ssh: connect to host node-5 port 22: Connection refused\n"
        "pdsh@admin: node-5: ssh exited with exit code 255\n"
    )
    return 255, out, err


@pytest.fixture
def pdsh(fake_slurm: FakeSlurm) -> FakeSlurm:
    """The shared fake at the process seam, answering pdsh only."""
    return fake_slurm.on(["pdsh", "**"], answer=_nodes_answer)


def ssh_args(pdsh: FakeSlurm) -> list[str]:
    """PDSH_SSH_ARGS_APPEND of each pdsh call."""
    return [(c.env or {}).get("PDSH_SSH_ARGS_APPEND", "") for c in pdsh.log]


def test_all_ok_exits_0_with_one_block(pdsh: FakeSlurm, run_cli) -> None:
    result = run_cli("run", "-w", "node-[1-3]", "--", "uptime", exit_code=0)
    assert result.stdout.splitlines() == ["-" * 16, "node-[1-3]", "-" * 16, "up"]


def test_failures_exit_1_and_are_listed(pdsh: FakeSlurm, run_cli) -> None:
    result = run_cli("run", "-w", "node-[1-5]", "--", "uptime", exit_code=1)
    lines = result.stdout.splitlines()
    assert "node-[1-3]" in lines and "node-4 (exit 3)" in lines
    assert "node-4: failed: exit code 3" in lines
    assert (
        lines[-1] == "node-5: unreachable: ssh: connect to host node-5 port 22: Connection refused"
    )


def test_json_has_one_record_per_node(pdsh: FakeSlurm, run_cli) -> None:
    data = json.loads(run_cli("run", "-w", "node-[1-5]", "--json", "--", "x", exit_code=1).stdout)
    assert data["transport"] == "pdsh"
    assert [(n["node"], n["status"], n["exit_code"]) for n in data["nodes"]] == [
        ("node-1", "ok", 0),
        ("node-2", "ok", 0),
        ("node-3", "ok", 0),
        ("node-4", "failed", 3),
        ("node-5", "unreachable", None),
    ]


def test_several_words_are_quoted_one_word_is_a_shell_line(pdsh: FakeSlurm, run_cli) -> None:
    run_cli("run", "-w", "node-1", "--", "echo", "$HOME", exit_code=None)
    run_cli("run", "-w", "node-1", "--", "echo $HOME | wc -c", exit_code=None)
    assert [_user_command(c[-1]) for c in pdsh.calls] == ["echo '$HOME'", "echo $HOME | wc -c"]


def _user_command(remote: str) -> str:
    """The command the node's inner ``sh -c`` gets, unwrapped from pdsh's argument."""
    outer = shlex.split(remote)
    assert outer[:2] == ["sh", "-c"]
    words = list(shlex.shlex(outer[2], posix=True, punctuation_chars=True))
    return words[words.index("-c") + 1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "-w", "node-[1-", "--", "true"], "never closed"),
        (["run", "--", "true"], "-w NODES"),
        (["run", "-w", "n1", "--via", "srun", "--", "true"], "--jobid"),
        (["run", "-w", "n1", "--fanout", "0", "--", "true"], "--fanout"),
        (["run", "-w", "n1", "--timeout", "0", "--", "true"], "--timeout"),
        (["run", "-w", "-oProxyCommand=x", "--", "true"], "not a node name"),
    ],
)
def test_bad_input_is_exit_2_in_one_line(pdsh: FakeSlurm, run_cli, args, message) -> None:
    result = run_cli(*args, exit_code=2)
    assert message in result.stderr
    assert pdsh.calls == []


def test_missing_command_is_a_usage_error(pdsh: FakeSlurm, run_cli) -> None:
    result = run_cli("run", "-w", "n1", exit_code=2)
    assert "COMMAND" in result.stderr


def test_ssh_options_reach_pdsh(pdsh: FakeSlurm, run_cli) -> None:
    ssh = "--ssh-config c.conf --insecure --fanout 2 --connect-timeout 3"
    result = run_cli("run", "-w", "node-[1-3]", *ssh.split(), "--", "true", exit_code=0)
    assert list(pdsh.calls[0][4:8]) == ["-f", "2", "-t", "3"]
    assert ssh_args(pdsh) == [
        "-o BatchMode=yes -o ConnectTimeout=3 -F c.conf "
        "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
    ]
    assert "--insecure: ssh host keys are not checked" in result.stderr


def test_run_and_pyspy_take_the_same_ssh_options() -> None:
    """One definition (cli/_ssh_options.py): same flags, types, defaults and meaning."""
    from slurmkit.cli.pyspy import pyspy_command
    from slurmkit.cli.run import run_command

    def ssh_options(command) -> dict[str, tuple]:
        flags = ("--connect-timeout", "--fanout", "--insecure", "--ssh-config")
        return {
            p.opts[0]: (p.name, p.type.name, p.default, p.is_flag, p.help.split(" (")[0])
            for p in command.params
            if p.opts[0] in flags
        }

    assert ssh_options(pyspy_command) == ssh_options(run_command)
    assert ssh_options(run_command)["--fanout"][1:3] == ("integer", 32)
    assert len(ssh_options(run_command)) == 4
