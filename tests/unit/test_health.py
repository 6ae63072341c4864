"""slurmkit health, the library: config parsing, each check's verdicts, reasons, decisions."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from slurmkit import _proc
from slurmkit.health import checks, config, node
from slurmkit.health.checks import Result
from slurmkit.slurm.records import Node

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"


def cfg(text: str) -> config.HealthConfig:
    return config.parse(text)


def one(text: str) -> config.Check:
    return cfg(text).checks[0]


# ---------------------------------------------------------------- config


def test_a_full_config_parses() -> None:
    parsed = cfg(
        """
        timeout = 7
        scontrol_timeout = 3
        [[check]]
        type = "disk"
        path = "/tmp"
        min_free = "1.5G"
        min_free_percent = 5
        min_free_inodes = 100
        [[check]]
        type = "gpu-count"
        expected = 8
        [[check]]
        type = "gpu-health"
        [[check]]
        type = "xid"
        name = "xid-log"
        [[check]]
        type = "cmd"
        argv = ["test", "-e", "/x"]
        timeout = 2
        [[check]]
        type = "cmd"
        name = "ib0"
        shell = "ip link | grep -q ib0"
        """
    )
    disk, count, gpu, xid, cmd, sh = parsed.checks
    assert parsed.scontrol_timeout == 3
    assert (disk.min_free, disk.min_free_percent, disk.min_free_inodes) == (
        int(1.5 * 1024**3),
        5.0,
        100,
    )
    assert (disk.timeout, cmd.timeout) == (7, 2)
    assert count.expected == 8 and gpu.kind == "gpu-health"
    assert xid.label == "xid-log" and cmd.label == "cmd" and sh.label == "ib0"
    assert checks.cmd_argv(cmd) == ["test", "-e", "/x"]
    assert checks.cmd_argv(sh) == ["/bin/sh", "-c", "ip link | grep -q ib0"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("this is not toml", "not valid TOML"),
        ("", "no [[check]] table"),
        ("[[check]]\ntype = 'ping'", "type must be one of"),
        ("[[check]]\ntype = 'disk'\npath = '/tmp'\nmin_fre = 1", "unknown key 'min_fre'"),
        ("[[check]]\ntype = 'disk'\npath = '/tmp'", "give at least one of"),
        ("[[check]]\ntype = 'disk'\npath = 'tmp'\nmin_free = 1", "absolute path"),
        ("[[check]]\ntype = 'disk'\npath = '/t'\nmin_free = '10 parsecs'", "is not a size"),
        ("[[check]]\ntype = 'disk'\npath = '/t'\nmin_free_percent = 100", "between 0 and 100"),
        ("[[check]]\ntype = 'gpu-count'", "expected must be"),
        ("[[check]]\ntype = 'gpu-count'\nexpected = true", "expected must be"),
        ("[[check]]\ntype = 'cmd'", "exactly one of argv"),
        ("[[check]]\ntype = 'cmd'\nargv = 'test -e /x'", "non-empty list"),
        ("[[check]]\ntype = 'cmd'\nargv = ['a']\nshell = 'b'", "exactly one of argv"),
        ("[[check]]\ntype = 'cmd'\nargv = ['a']\ntimeout = 0", "number of seconds"),
        ("[[check]]\ntype = 'xid'\nname = 'a b'", "name must be"),
        ("typo = 1\n[[check]]\ntype = 'xid'", "unknown key 'typo'"),
        ("check = 3", "list of [[check]] tables"),
    ],
)
def test_bad_configs_are_one_clear_error(text: str, says: str) -> None:
    with pytest.raises(config.HealthConfigError, match=None) as caught:
        cfg(text)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_load_refuses_a_config_others_can_write(tmp_path: Path) -> None:
    path = tmp_path / "health.toml"
    path.write_text("[[check]]\ntype = 'xid'\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(path, 0o666)
    with pytest.raises(config.HealthConfigError, match="writable by group or others"):
        config.load(path)
    os.chmod(path, 0o644)
    assert config.load(path).checks[0].kind == "xid"


def test_a_config_that_is_not_utf8_is_one_clear_error(tmp_path: Path) -> None:
    """Issue 28, item 11: a non-UTF-8 health.toml was a UnicodeDecodeError traceback."""
    path = tmp_path / "health.toml"
    path.write_bytes(b"[[check]]\ntype = 'cmd'\nargv = ['caf\xe9']\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(path, 0o644)
    with pytest.raises(config.HealthConfigError, match="not valid TOML: 'utf-8' codec"):
        config.load(path)


def test_a_fifo_config_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "health.toml"
    os.mkfifo(path, 0o644)
    os.chmod(tmp_path, 0o755)
    with pytest.raises(config.HealthConfigError, match="not a regular file"):
        config.load(path)


def test_load_refuses_a_missing_config(tmp_path: Path) -> None:
    with pytest.raises(config.HealthConfigError, match="does not exist"):
        config.load(tmp_path / "nope.toml")


# ---------------------------------------------------------------- disk


class Vfs:
    """A statvfs result: 4 KiB blocks."""

    def __init__(self, blocks: int, avail: int, files: int = 1000, favail: int = 500) -> None:
        self.f_frsize = 4096
        self.f_blocks = blocks
        self.f_bavail = avail
        self.f_files = files
        self.f_favail = favail


def test_disk_verdicts() -> None:
    check = one("[[check]]\ntype='disk'\npath='/d'\nmin_free='1M'\nmin_free_percent=10")
    assert checks.judge_disk(check, Vfs(1000, 900))[0] == "pass"  # type: ignore[arg-type]
    status, detail = checks.judge_disk(check, Vfs(1000, 50))  # type: ignore[arg-type]
    assert status == "fail"
    assert detail == "/d: 200.0K free < 1.0M, 5.0% free < 10%"
    inodes = one("[[check]]\ntype='disk'\npath='/d'\nmin_free_inodes=10")
    assert checks.judge_disk(inodes, Vfs(1000, 900, favail=3)) == (  # type: ignore[arg-type]
        "fail",
        "/d: 3 inodes free < 10",
    )


def test_disk_on_a_real_path_and_a_missing_one(tmp_path: Path) -> None:
    ok = one(f"[[check]]\ntype='disk'\npath='{tmp_path}'\nmin_free=1")
    assert checks.run_check(ok, checks.Context("n")).status == "pass"
    gone = one(f"[[check]]\ntype='disk'\npath='{tmp_path}/gone'\nmin_free=1")
    result = checks.run_check(gone, checks.Context("n"))
    assert (result.status, "No such file" in result.detail) == ("fail", True)


def test_disk_hung_filesystem_is_a_bounded_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    release = threading.Event()

    def hang(path: str) -> Any:
        release.wait(30)
        raise OSError(5, "late")

    monkeypatch.setattr(os, "statvfs", hang)
    check = one("[[check]]\ntype='disk'\npath='/nfs'\nmin_free=1\ntimeout=0.2")
    result = checks.run_check(check, checks.Context("n"))
    release.set()
    assert result.status == "fail"
    assert "did not answer within 0.2 s" in result.detail


# ---------------------------------------------------------------- GPUs


def fake_smi(monkeypatch: pytest.MonkeyPatch, stdout: str, rc: int = 0, timed_out: bool = False):
    calls: list[tuple[str, ...]] = []

    def runner(argv: Any, **kwargs: Any) -> _proc.Completed:
        calls.append(tuple(argv))
        return _proc.Completed(tuple(argv), rc, stdout, "", 0.1, timed_out)

    monkeypatch.setattr(checks, "nvidia_smi", lambda: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(_proc, "runner", runner)
    return calls


@pytest.mark.parametrize("kind", ["gpu-count", "gpu-health", "xid"])
def test_gpu_checks_are_skipped_without_a_driver_never_passed(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checks, "nvidia_smi", lambda: None)
    extra = "\nexpected = 8" if kind == "gpu-count" else ""
    result = checks.run_check(one(f"[[check]]\ntype='{kind}'{extra}"), checks.Context("n"))
    assert (result.status, result.detail) == ("skipped", checks.NO_DRIVER)


def test_gpu_count_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    check = one("[[check]]\ntype='gpu-count'\nexpected=4")
    fake_smi(monkeypatch, "0\n1\n2\n3\n")
    assert checks.run_check(check, checks.Context("n")).status == "pass"
    fake_smi(monkeypatch, "0\n1\n2\n")
    assert checks.run_check(check, checks.Context("n")).detail == "3 GPU(s) visible, 4 expected"
    fake_smi(monkeypatch, "", timed_out=True)
    assert checks.run_check(check, checks.Context("n")).status == "fail"
    fake_smi(monkeypatch, "Unable to determine the device handle\n", rc=15)
    assert "exit 15" in checks.run_check(check, checks.Context("n")).detail
    fake_smi(monkeypatch, "0\nGPU 1: ???\n")
    assert checks.run_check(check, checks.Context("n")).status == "unknown"


@pytest.mark.parametrize(
    ("fixture", "status"),
    [
        ("nvidia-smi-q/h100x8-535.161.08-healthy.txt", "pass"),
        ("nvidia-smi-q/a10-535.129.03-rowremap-pending-unc4.txt", "fail"),
        ("nvidia-smi-q-x/v100s-x8-460.73.01-healthy.xml", "pass"),
    ],
)
def test_gpu_health_reuses_the_parser(
    fixture: str, status: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = fake_smi(monkeypatch, (FIXTURES / fixture).read_text())
    result = checks.run_check(one("[[check]]\ntype='gpu-health'"), checks.Context("n"))
    assert result.status == status
    assert calls == [("/usr/bin/nvidia-smi", "-q")]


def test_gpu_health_unparsable_output_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_smi(monkeypatch, "something else entirely\n")
    result = checks.run_check(one("[[check]]\ntype='gpu-health'"), checks.Context("n"))
    assert result.status == "unknown"


# The xid check (positions, this node's GPUs, the forged lines): test_xid_evidence.py and
# test_health_xid.py.


# ---------------------------------------------------------------- cmd


def test_cmd_runs_argv_without_a_shell_and_names_the_node(tmp_path: Path) -> None:
    marker = tmp_path / "fail-node-3"
    check = one(f"[[check]]\ntype='cmd'\nargv=['test', '!', '-e', '{marker}']")
    assert checks.run_check(check, checks.Context("node-3")).status == "pass"
    marker.touch()
    result = checks.run_check(check, checks.Context("node-3"))
    assert result.status == "fail"
    assert result.detail.startswith("'test ! -e /") and result.detail.endswith("' exited 1")
    shell = one(
        f"[[check]]\ntype='cmd'\nshell='test ! -e {tmp_path}/fail-\"$SLURMKIT_HEALTH_NODE\"'"
    )
    assert checks.run_check(shell, checks.Context("node-3")).status == "fail"
    assert checks.run_check(shell, checks.Context("node-1")).status == "pass"
    semicolon = one(f"[[check]]\ntype='cmd'\nargv=['test', '-e', '{marker}; false']")
    assert checks.run_check(semicolon, checks.Context("n")).status == "fail"  # no shell


def test_cmd_missing_program_and_timeout_fail(tmp_path: Path) -> None:
    gone = one("[[check]]\ntype='cmd'\nargv=['/nonexistent/check']")
    assert "not found" in checks.run_check(gone, checks.Context("n")).detail
    slow = one("[[check]]\ntype='cmd'\nargv=['sleep', '30']\ntimeout=0.3")
    result = checks.run_check(slow, checks.Context("n"))
    assert (result.status, result.detail) == ("fail", "'sleep 30' did not finish within 0.3 s")


# ---------------------------------------------------------------- reasons and decisions


def res(label: str, status: str, detail: str = "bad", kind: str = "cmd") -> Result:
    return Result(label, kind, status, detail)


def test_reason_is_prefixed_printable_and_bounded() -> None:
    assert (
        node.reason_for([res("cmd", "fail", "'x' exited 1")])
        == "slurmkit health: cmd: 'x' exited 1"
    )
    nasty = node.reason_for([res("cmd", "fail", "a\x1b[31mred\nline " + "y" * 500)])
    assert nasty.startswith("slurmkit health: cmd: a\\x1b[31mred line yyy")
    assert len(nasty) <= node.MAX_REASON and nasty.endswith("...")
    two = node.reason_for([res("disk", "fail"), res("xid", "fail", kind="xid")], sticky={"xid"})
    assert two == "slurmkit health: xid: bad (+1 more: disk)"


def mk(flags: tuple[str, ...] = (), reason: str | None = None) -> Node:
    return Node(name="node-3", state="IDLE", flags=frozenset(flags), reason=reason)


def test_decisions() -> None:
    bad = [res("cmd", "fail", "'x' exited 1"), res("gpu-count", "skipped")]
    good = [res("cmd", "pass"), res("gpu-count", "skipped")]
    ours = "slurmkit health: cmd: 'x' exited 1"
    assert node.decide(mk(), bad, set()).action == node.DRAIN
    assert node.decide(mk(), bad, set()).reason == ours
    assert node.decide(mk(("DRAIN",), ours), bad, set()).action == node.KEEP
    other_check = "slurmkit health: disk: /tmp: 1K free < 1M"
    assert node.decide(mk(("DRAIN",), other_check), bad, set()).action == node.DRAIN
    assert node.decide(mk(("DRAIN",), "admin: bad DIMM"), bad, set()).action == node.ADMIN
    assert node.decide(mk(), good, set()).action == node.NONE
    assert node.decide(mk(("DRAIN",), ours), good, set()).action == node.RESUME
    assert node.decide(mk(("DRAIN",), "admin: bad DIMM"), good, set()).action == node.NONE
    unknown = [res("cmd", "pass"), res("gpu-health", "unknown")]
    assert node.decide(mk(("DRAIN",), ours), unknown, set()).action == node.WAIT
    xid_drain = "slurmkit health: xid: 1 finding(s)"
    assert node.decide(mk(("DRAIN",), xid_drain), good, {"xid"}).action == node.WAIT


def test_node_name_prefers_slurmd_nodename() -> None:
    assert node.node_name({"SLURMD_NODENAME": "gpu-17"}) == "gpu-17"
    assert node.node_name({}) == os.uname().nodename.split(".")[0]
