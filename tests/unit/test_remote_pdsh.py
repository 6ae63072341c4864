"""The pdsh transport at the argv seam: the command it builds, and its merged output parsed.

The shared fake at the process seam (tests/fakes) answers only ``pdsh`` argv lists,
replaying output in the shape pdsh 2.34 printed on the sandbox (interleaved ``node: `` lines,
``pdsh@host: node: ...`` messages, the marker on a partial last line).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from slurmkit import _proc, remote
from slurmkit.errors import RemoteError, UsageError
from slurmkit.hostlist import HostSet
from slurmkit.remote.base import RemoteOptions, TransportMissing
from slurmkit.remote.pdsh import PdshTransport, escape_percent
from tests.fakes import Call, FakeSlurm

TOKEN = re.compile(r"__slurmkit_end_[0-9a-f]{16}__")

Reply = Callable[[list[str], str], tuple[int, str, str]]


def replies(pdsh: FakeSlurm, reply: Reply, timed_out: bool = False) -> None:
    """pdsh answers ``reply(argv, end_marker)`` (killed by the backstop if ``timed_out``)."""

    def answer(call: Call) -> _proc.Completed:
        rc, out, err = reply(list(call.argv), TOKEN.findall(call.argv[-1])[-1])
        return _proc.Completed(call.argv, rc, out, err, 0.1, timed_out=timed_out)

    pdsh.on(["pdsh", "**"], answer=answer)


def pdsh_calls(pdsh: FakeSlurm) -> list[tuple[list[str], Mapping[str, str] | None, float | None]]:
    """Each pdsh call: argv, environment, timeout."""
    return [(list(c.argv), c.env, c.timeout) for c in pdsh.log if c.program == "pdsh"]


@pytest.fixture
def pdsh(fake_slurm: FakeSlurm) -> FakeSlurm:
    """The shared fake at the process seam, answering pdsh only (quiet success by default)."""
    replies(fake_slurm, lambda argv, token: (0, "", ""))
    return fake_slurm


def _quiet(_: str) -> None:
    pass


def opts(**kw) -> RemoteOptions:
    return RemoteOptions(notify=kw.pop("notify", _quiet), **kw)


def test_argv_folds_nodes_and_passes_limits(pdsh: FakeSlurm) -> None:
    replies(
        pdsh,
        lambda argv, t: (
            0,
            "".join(f"node-{i}: {t} rc=0 t0=1 t1=2\n" for i in (1, 2, 3)),
            "",
        ),
    )
    transport = PdshTransport(opts(timeout=7, connect_timeout=3, fanout=5))
    transport.run(["node-3", "node-1", "node-2"], "uptime")
    argv, env, limit = pdsh_calls(pdsh)[0]
    assert argv[:12] == [
        "pdsh",
        "-R",
        "ssh",
        "-S",
        "-f",
        "5",
        "-t",
        "3",
        "-u",
        "7",
        "-w",
        "node-[1-3]",
    ]
    assert shlex.split(argv[12])[:2] == ["sh", "-c"]
    assert "uptime" in argv[12]
    assert env is not None and env["PDSH_SSH_ARGS_APPEND"] == "-o BatchMode=yes -o ConnectTimeout=3"
    assert limit is not None and limit > 7 + 3  # a backstop beyond pdsh's own limits


def test_percent_is_escaped_for_pdsh(pdsh: FakeSlurm) -> None:
    assert escape_percent("stat -c %u /proc/1; date +%s") == "stat -c %%u /proc/1; date +%%s"
    replies(pdsh, lambda argv, t: (0, f"n1: {t} rc=0 t0=1 t1=2\n", ""))
    PdshTransport(opts()).run(["n1"], "stat -c %u /")
    assert "%%u" in pdsh_calls(pdsh)[0][0][-1] and "%u" not in pdsh_calls(pdsh)[0][0][-1].replace(
        "%%", ""
    )


def test_ssh_config_and_insecure_reach_ssh(pdsh: FakeSlurm, tmp_path: Path) -> None:
    notices: list[str] = []
    replies(pdsh, lambda argv, t: (0, f"n1: {t} rc=0 t0=1 t1=2\n", ""))
    cfg = tmp_path / "cfg"
    PdshTransport(opts(ssh_config=cfg, insecure=True, notify=notices.append)).run(["n1"], "true")
    args = pdsh_calls(pdsh)[0][1]["PDSH_SSH_ARGS_APPEND"].split()  # type: ignore[index]
    assert ["-F", str(cfg)] == args[args.index("-F") : args.index("-F") + 2]
    assert "StrictHostKeyChecking=no" in args
    assert notices and "not checked" in notices[0]


def test_percent_in_the_ssh_config_path_reaches_ssh_unexpanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pdsh expands %h, %u, %n in PDSH_SSH_ARGS_APPEND too (issue 14): ``-F cfg%h`` became
    ``-F cfgnode-1``, a file the caller never named. The real pdsh, a fake ssh printing argv."""
    cfg = tmp_path / "cfg%h%u%%"
    assert PdshTransport(opts(ssh_config=cfg)).ssh_args().endswith(f"-F {tmp_path}/cfg%%h%%u%%%%")
    if shutil.which("pdsh") is None:
        pytest.skip("the end-to-end half needs pdsh")
    fake = tmp_path / "bin" / "ssh"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nfor a in "$@"; do echo "ARG $a"; done\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    (result,) = PdshTransport(opts(ssh_config=cfg)).run(["n1"], "true")
    args = [line[4:] for line in result.stdout.splitlines() if line.startswith("ARG ")]
    assert args[args.index("-F") + 1] == str(cfg)


def test_config_path_with_spaces_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="spaces"):
        PdshTransport(opts(ssh_config=tmp_path / "my config")).ssh_args()


def test_interleaved_output_is_split_per_node(pdsh: FakeSlurm) -> None:
    def reply(argv: list[str], t: str) -> tuple[int, str, str]:
        out = (
            "node-2: hi\n"
            "node-1: hi\n"
            f"node-2: partial{t} rc=3 t0=1000000000 t1=3000000000\n"
            "node-1:  leading space kept\n"
            "node-1: \n"
            f"node-1: {t} rc=0 t0=1 t1=2\n"
        )
        err = "node-2: err line\npdsh@vm: node-2: ssh exited with exit code 3\n"
        return 0, out, err

    replies(pdsh, reply)
    one, two = PdshTransport(opts()).run(["node-1", "node-2"], "x")
    assert (one.status, one.exit_code, one.stdout) == ("ok", 0, "hi\n leading space kept\n\n")
    assert (two.status, two.exit_code, two.stdout) == ("failed", 3, "hi\npartial")
    assert two.stderr == "err line\n"
    assert two.duration == pytest.approx(2.0)


def test_timeout_and_unreachable_nodes_do_not_hide_the_others(pdsh: FakeSlurm) -> None:
    def reply(argv: list[str], t: str) -> tuple[int, str, str]:
        out = f"node-1: ok\nnode-1: {t} rc=0 t0=1 t1=2\nnode-3: started\n"
        err = (
            "node-4: ssh: connect to host 127.0.1.4 port 1: Connection refused\n"
            "pdsh@vm: node-4: ssh exited with exit code 255\n"
            "pdsh@vm: node-3: command timeout\n"
            "sending SIGTERM to ssh node-3\n"
            "sending signal 15 to node-3 [ssh] pid 30683\n"
            "pdsh@vm: node-3: ssh exited with exit code 255\n"
        )
        return 255, out, err

    replies(pdsh, reply)
    r1, r2, r3, r4 = PdshTransport(opts(timeout=2)).run(
        ["node-1", "node-2", "node-3", "node-4"], "x"
    )
    assert r1.ok and r1.stdout == "ok\n"
    assert r2.status == "unreachable" and "nothing" in r2.error
    assert r3.status == "timeout" and r3.stdout == "started\n" and r3.exit_code is None
    assert r4.status == "unreachable"
    assert r4.error == "ssh: connect to host 127.0.1.4 port 1: Connection refused"


def test_lost_marker_is_a_failure_not_a_success(pdsh: FakeSlurm) -> None:
    replies(
        pdsh,
        lambda argv, t: (
            1,
            "node-1: half of the output\n",
            "pdsh@vm: node-1: ssh exited with exit code 137\n",
        ),
    )
    (result,) = PdshTransport(opts()).run(["node-1"], "x")
    assert result.status == "failed" and result.exit_code == 137
    assert "end marker" in result.error


def test_pdsh_killed_by_backstop_gives_timeouts(pdsh: FakeSlurm) -> None:
    replies(pdsh, lambda argv, t: (-9, f"node-1: {t} rc=0 t0=1 t1=2\n", ""), timed_out=True)
    r1, r2 = PdshTransport(opts()).run(["node-1", "node-2"], "x")
    assert r1.ok and r2.status == "timeout"


def test_pdsh_failing_as_a_whole_is_an_error(pdsh: FakeSlurm) -> None:
    replies(pdsh, lambda argv, t: (1, "", "pdsh@vm: no remote hosts specified\n"))
    with pytest.raises(RemoteError, match="no remote hosts"):
        PdshTransport(opts()).run(["node-1"], "x")


def test_missing_pdsh_is_reported(pdsh: FakeSlurm) -> None:
    pdsh.missing("pdsh")
    with pytest.raises(TransportMissing, match="pdsh is not installed"):
        PdshTransport(opts()).run(["node-1"], "x")


def test_missing_pdsh_falls_back_to_paramiko_and_says_so(pdsh: FakeSlurm, tmp_path: Path) -> None:
    """The ssh transport then runs for real; port 1 on localhost refuses, per node."""
    pdsh.missing("pdsh")
    cfg = tmp_path / "config"
    cfg.write_text("Host n1 n2\n  HostName 127.0.0.1\n  Port 1\n")
    notices: list[str] = []
    outcome = remote.run(
        HostSet("n[1-2]"), "true", via="pdsh", options=opts(ssh_config=cfg, notify=notices.append)
    )
    assert outcome.transport == "ssh"
    assert any("pdsh is not installed" in n and "paramiko" in n for n in notices)
    assert [r.status for r in outcome.results] == ["unreachable", "unreachable"]
    assert "127.0.0.1 port 1" in outcome.results[0].error


def test_auto_prefers_pdsh(pdsh: FakeSlurm) -> None:
    replies(pdsh, lambda argv, t: (0, f"n1: {t} rc=0 t0=1 t1=2\n", ""))
    assert remote.run(["n1"], "true", options=opts()).transport == "pdsh"


@pytest.mark.parametrize("name", ["-oProxyCommand=x", "^/etc/hosts", "/regex/", "a b"])
def test_names_pdsh_or_ssh_would_misread_are_refused(name: str) -> None:
    with pytest.raises(UsageError, match="not a node name"):
        remote.run([name], "true", options=opts())


def test_unknown_transport_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown transport"):
        remote.run(["n1"], "true", via="telnet", options=opts())


def test_bad_limits_are_usage_errors() -> None:
    with pytest.raises(UsageError):
        RemoteOptions(timeout=0)
    with pytest.raises(UsageError):
        RemoteOptions(fanout=0)
